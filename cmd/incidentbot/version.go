package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// version and revision may be set at build time, for builds without
// module or VCS information (the Dockerfile does):
// go build -ldflags "-X main.version=v1.2.3 -X main.revision=$(git rev-parse HEAD)".
var version, revision string

// buildInfo says which build this is, from the Go build information.
type buildInfo struct {
	Version   string // module version, e.g. v1.2.0, or "(devel)"
	Revision  string // VCS commit, or "unknown"
	Time      string // commit time (RFC 3339), or ""
	Modified  bool   // the working tree had local changes
	GoVersion string
}

func readBuildInfo() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	out := fromBuildInfo(bi, version)
	if revision != "" && out.Revision == "unknown" {
		out.Revision = revision
	}
	return out
}

// fromBuildInfo reads what the Go toolchain recorded; override, when set,
// replaces the module version.
func fromBuildInfo(bi *debug.BuildInfo, override string) buildInfo {
	out := buildInfo{Version: "(devel)", Revision: "unknown", GoVersion: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			out.GoVersion = bi.GoVersion
		}
		if bi.Main.Version != "" {
			out.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				out.Revision = s.Value
			case "vcs.time":
				out.Time = s.Value
			case "vcs.modified":
				out.Modified = s.Value == "true"
			}
		}
	}
	if override != "" {
		out.Version = override
	}
	return out
}

// revision is the commit with "+modified" when the tree had changes.
func (b buildInfo) revision() string {
	if b.Modified {
		return b.Revision + "+modified"
	}
	return b.Revision
}

// collector exports the build as incidentbot_build_info{version,revision,goversion} 1.
func (b buildInfo) collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "incidentbot_build_info",
		Help:        "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.revision(), "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

// versionCmd is "incidentbot version".
type versionCmd struct{}

func (versionCmd) Run(e env) error {
	b := readBuildInfo()
	fmt.Fprintf(e.stdout, "incidentbot %s\nrevision:   %s\n", b.Version, b.revision())
	if b.Time != "" {
		fmt.Fprintf(e.stdout, "built from: commit of %s\n", b.Time)
	}
	fmt.Fprintf(e.stdout, "go:         %s %s/%s\n", b.GoVersion, runtime.GOOS, runtime.GOARCH)
	return nil
}
