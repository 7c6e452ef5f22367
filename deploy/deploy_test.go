package deploy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// apache2 is the SHA-256 of the Apache License 2.0 text as the Apache
// Software Foundation publishes it (LICENSE-2.0.txt).
const apache2 = "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"

func TestLicenseIsApache2(t *testing.T) {
	b, err := os.ReadFile("../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != apache2 {
		t.Errorf("LICENSE is not the unmodified Apache-2.0 text (sha256 %s)", got)
	}
	notice, err := os.ReadFile("../NOTICE")
	if err != nil || !strings.Contains(string(notice), "Copyright 2026 The incidentbot authors") {
		t.Errorf("NOTICE: %v\n%s", err, notice)
	}
	readme := readFile(t, "../README.md")
	if !strings.Contains(readme, "Apache License 2.0") {
		t.Error("README does not name the license")
	}
}

// dockerfile is the Dockerfile as instructions: continuation lines joined,
// comments dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

// TestDockerfile checks the image is multi-stage, static, non-root,
// distroless, with /data as a volume, and that the build stage's command
// really builds a static binary that knows its version (run here, as no
// Docker engine is needed for that).
func TestDockerfile(t *testing.T) {
	ins := dockerfile(t)
	var froms []string
	var user, volume, build, entry string
	for _, in := range ins {
		word, rest, _ := strings.Cut(in, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			froms = append(froms, rest)
		case "USER":
			user = rest
		case "VOLUME":
			volume = rest
		case "ENTRYPOINT":
			entry = rest
		case "RUN":
			if strings.Contains(rest, "go build") {
				build = rest
			}
		}
	}
	if len(froms) < 2 {
		t.Fatalf("not multi-stage: %v", froms)
	}
	final := froms[len(froms)-1]
	if !strings.HasPrefix(final, "gcr.io/distroless/static") && final != "scratch" {
		t.Errorf("final stage %q is neither distroless static nor scratch", final)
	}
	if uid, _, _ := strings.Cut(user, ":"); user == "" || uid == "0" || uid == "root" {
		t.Errorf("USER %q: the image must run as a non-root user", user)
	}
	if !strings.Contains(volume, `"/data"`) {
		t.Errorf("VOLUME %q: /data must be a volume", volume)
	}
	if !strings.Contains(entry, "incidentbot") {
		t.Errorf("ENTRYPOINT %q", entry)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=${VERSION}", "./cmd/incidentbot"} {
		if !strings.Contains(build, want) {
			t.Errorf("build command lacks %q: %s", want, build)
		}
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "incidentbot")
	cmdline := strings.NewReplacer("${VERSION}", "v0.0.0-dockertest", "${REVISION}", "0123abc", "/out/incidentbot", bin).Replace(build)
	c := exec.Command("sh", "-c", cmdline)
	c.Dir = ".."
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader: not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v: not static", libs)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(out), "incidentbot v0.0.0-dockertest") || !strings.Contains(string(out), "0123abc") {
		t.Errorf("version: %v\n%s", err, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tokenLiteral matches what a Slack token or a database password written
// into a file would look like.
var tokenLiteral = regexp.MustCompile(`xox[abprs]-[0-9A-Za-z]|xapp-[0-9]|postgres://[^:@/\s]+:[^@$\s{]+@`)

type container struct {
	Name  string `yaml:"name"`
	Image string `yaml:"image"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     any    `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type deployment struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				SecurityContext struct {
					RunAsNonRoot *bool `yaml:"runAsNonRoot"`
					RunAsUser    int   `yaml:"runAsUser"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
				Volumes    []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// TestKubernetesDeployment checks the invariants of the example: tokens
// only from a Secret, probes on paths the bot serves, on the port it
// listens on, non-root, memory sized, cases mounted where the bot reads.
func TestKubernetesDeployment(t *testing.T) {
	text := readFile(t, "kubernetes/deployment.yaml")
	if m := tokenLiteral.FindString(text); m != "" {
		t.Errorf("a secret is written into the manifest: %q", m)
	}
	var d deployment
	if err := yaml.UnmarshalWithOptions([]byte(text), &d, yaml.Strict()); err != nil {
		// Strict catches misspelled keys in the parts we model only; the
		// rest is checked by kubectl. Fall back to a lenient parse.
		if err := yaml.Unmarshal([]byte(text), &d); err != nil {
			t.Fatal(err)
		}
	}
	pod := d.Spec.Template.Spec
	if d.Kind != "Deployment" || len(pod.Containers) == 0 {
		t.Fatalf("kind %q, %d containers", d.Kind, len(pod.Containers))
	}
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser == 0 {
		t.Error("the pod must run as a non-root user")
	}
	readme := readFile(t, "../README.md")
	var bot *container
	for i, c := range pod.Containers {
		if sc := c.SecurityContext; sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container %s: privilege escalation must be off and the root filesystem read-only", c.Name)
		}
		if c.Resources.Limits["memory"] == "" {
			t.Errorf("container %s has no memory limit", c.Name)
		}
		if c.Name == "incidentbot" {
			bot = &pod.Containers[i]
		}
	}
	if bot == nil {
		t.Fatal("no incidentbot container")
	}
	env := map[string]string{}
	for _, e := range bot.Env {
		if strings.Contains(e.Name, "TOKEN") || e.Name == "DATABASE_URL" {
			if e.Value != nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s must come from a Secret", e.Name)
			}
		}
		if v, ok := e.Value.(string); ok {
			env[e.Name] = v
		}
		if !strings.Contains(readme, "`"+e.Name+"`") {
			t.Errorf("%s is not a documented variable", e.Name)
		}
	}
	for _, need := range []string{"SLACK_APP_TOKEN", "SLACK_BOT_TOKEN", "DATABASE_URL"} {
		found := false
		for _, e := range bot.Env {
			found = found || e.Name == need
		}
		if !found {
			t.Errorf("no %s", need)
		}
	}
	// Probes: on the port the bot listens on, at paths it serves, with
	// liveness that does not depend on Slack or the database.
	_, listenPort, _ := strings.Cut(env["INCIDENTBOT_LISTEN"], ":")
	ports := map[string]int{}
	for _, p := range bot.Ports {
		ports[p.Name] = p.ContainerPort
	}
	served := servedStatus(t)
	for name, pr := range map[string]*probe{"startup": bot.StartupProbe, "liveness": bot.LivenessProbe, "readiness": bot.ReadinessProbe} {
		if pr == nil {
			t.Errorf("no %s probe", name)
			continue
		}
		port := pr.HTTPGet.Port
		if name, ok := port.(string); ok {
			port = ports[name]
		}
		if fmt.Sprint(port) != listenPort {
			t.Errorf("%s probe on port %v, the bot listens on %q", name, port, env["INCIDENTBOT_LISTEN"])
		}
		code, ok := served[pr.HTTPGet.Path]
		if !ok || code == http.StatusNotFound {
			t.Errorf("%s probe path %q is not served by the bot", name, pr.HTTPGet.Path)
		}
		if name != "readiness" && code != http.StatusOK {
			t.Errorf("%s probe %s answers %d while Slack and the store are away: the pod would be restarted for nothing", name, pr.HTTPGet.Path, code)
		}
	}
	if bot.ReadinessProbe != nil && bot.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness on %s, want /readyz", bot.ReadinessProbe.HTTPGet.Path)
	}
	// Memory: at least the README's figure for the built-in library.
	if mi := mebibytes(bot.Resources.Limits["memory"]); mi < 256 || mi < mebibytes(bot.Resources.Requests["memory"]) {
		t.Errorf("memory limit %s, request %s", bot.Resources.Limits["memory"], bot.Resources.Requests["memory"])
	}
	// Cases: the ConfigMap volume is mounted where INCIDENTBOT_CASES points.
	cm := ""
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			cm = v.Name
		}
	}
	mounted := false
	for _, m := range bot.VolumeMounts {
		mounted = mounted || (m.Name == cm && m.MountPath == env["INCIDENTBOT_CASES"])
	}
	if cm == "" || !mounted {
		t.Errorf("cases: ConfigMap volume %q not mounted at INCIDENTBOT_CASES=%q", cm, env["INCIDENTBOT_CASES"])
	}
}

func mebibytes(q string) int {
	var n int
	var unit string
	for i, r := range q {
		if r < '0' || r > '9' {
			unit = q[i:]
			break
		}
		n = n*10 + int(r-'0')
	}
	switch unit {
	case "Gi":
		return n * 1024
	case "Mi":
		return n
	}
	return 0
}

// servedStatus asks the bot's real HTTP handler, with Slack never
// connected and no store, what each probe path answers.
func servedStatus(t *testing.T) map[string]int {
	t.Helper()
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	m, err := matcher.New(lib, matcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := bot.New(m, bot.Options{AppToken: "xapp-1-test", BotToken: "xoxb-1-test", APIURL: "http://127.0.0.1:1/api/"})
	if err != nil {
		t.Fatal(err)
	}
	h := b.Handler()
	out := map[string]int{}
	for _, p := range []string{"/livez", "/readyz", "/healthz", "/metrics"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, p, nil))
		out[p] = rec.Code
	}
	return out
}

type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       map[string]string `yaml:"build"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck map[string]any `yaml:"healthcheck"`
		Ports       []string       `yaml:"ports"`
		Volumes     []string       `yaml:"volumes"`
		ReadOnly    bool           `yaml:"read_only"`
	} `yaml:"services"`
}

// TestCompose checks the docker compose example: PostgreSQL healthy
// before the bot starts, secrets only from the environment, the database
// URL naming the compose service, probes reachable from the host only.
func TestCompose(t *testing.T) {
	text := readFile(t, "docker-compose.yaml")
	if m := tokenLiteral.FindString(text); m != "" {
		t.Errorf("a secret is written into the file: %q", m)
	}
	var c compose
	if err := yaml.Unmarshal([]byte(text), &c); err != nil {
		t.Fatal(err)
	}
	pg, ok := c.Services["postgres"]
	if !ok || !strings.HasPrefix(pg.Image, "postgres:") || pg.Healthcheck == nil {
		t.Fatalf("postgres service: %+v", pg)
	}
	ib, ok := c.Services["incidentbot"]
	if !ok {
		t.Fatal("no incidentbot service")
	}
	if ib.DependsOn["postgres"].Condition != "service_healthy" {
		t.Error("the bot must wait for PostgreSQL to be healthy")
	}
	if _, err := os.Stat(filepath.Join(ib.Build["context"], ib.Build["dockerfile"])); err != nil {
		t.Errorf("build: %v", err)
	}
	readme := readFile(t, "../README.md")
	for k, v := range ib.Environment {
		if (strings.Contains(k, "TOKEN") || strings.Contains(k, "PASSWORD")) && !strings.HasPrefix(v, "${") {
			t.Errorf("%s must come from the environment, not the file", k)
		}
		if !strings.Contains(readme, "`"+k+"`") {
			t.Errorf("%s is not a documented variable", k)
		}
	}
	if u := ib.Environment["DATABASE_URL"]; !strings.Contains(u, "@postgres:5432/") {
		t.Errorf("DATABASE_URL %q does not name the postgres service", u)
	}
	for _, p := range ib.Ports {
		if host, _, _ := net.SplitHostPort(strings.TrimSuffix(p, ":8080")); host != "127.0.0.1" {
			t.Errorf("port %q is published beyond this host", p)
		}
	}
	if !ib.ReadOnly {
		t.Error("the bot's filesystem should be read-only")
	}
	hasData := false
	for _, v := range ib.Volumes {
		hasData = hasData || strings.HasSuffix(v, ":/data")
	}
	if !hasData {
		t.Error("no volume at /data")
	}
}
