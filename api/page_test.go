package api_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/incidentbot/incidentbot/api"
	"github.com/incidentbot/incidentbot/cases"
)

// chromium finds a Chromium to drive, or skips the test.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH, so the library page is not checked in a browser; install it with apt-get install -y chromium (.ci/run does)")
	return ""
}

// browser starts a headless Chromium with a fresh profile and no network
// of its own, and returns a context to drive it with.
func browser(t *testing.T) context.Context {
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	return bctx
}

// A reader searches the library, opens a case and switches to Korean, in
// a real browser.
func TestPageInBrowser(t *testing.T) {
	ctx := browser(t)
	_, ts := newServer(t, api.Options{})
	const id = "cloudflare-2019-07-02"
	c, _ := builtin(t).Case(id)

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	lang := func() string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("html"), "lang"))
		if err != nil {
			t.Fatalf("read the page's language: %v", err)
		}
		return v.Value
	}

	do("open the page", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#newest")))
	if l, h := lang(), text("h1"); l != "en" || h != "Newest cases" {
		t.Errorf("home page: lang %q, heading %q", l, h)
	}

	do("search", chromedp.SendKeys(chromedp.CSS("#q"), "WAF rule regular expression pegged CPU on every edge server, 502s"),
		chromedp.Click(chromedp.CSS("#search")), chromedp.WaitVisible(chromedp.CSS("#results-heading")))
	if results := text("#results"); !strings.Contains(results, c.Title.En) {
		t.Fatalf("the search does not find %s:\n%s", id, results)
	}

	do("open the case", chromedp.Click(chromedp.CSS(`#results a[href^="/cases/`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#title")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if title := text("#title"); title != c.Title.En || !strings.Contains(loc, "/cases/"+id) {
		t.Errorf("case page at %s shows %q, want %q", loc, title, c.Title.En)
	}

	do("switch to Korean", chromedp.Click(chromedp.CSS("#lang-ko")), chromedp.WaitVisible(chromedp.CSS("#lang-en")))
	if l, title, summary := lang(), text("#title"), text("#summary"); l != "ko" || title != c.Title.In(cases.Korean) || squash(summary) != squash(c.Summary.In(cases.Korean)) {
		t.Errorf("after switching: lang %q, title %q, summary %q; want the Korean text", l, title, summary)
	}

	// A search from the Korean page stays in Korean.
	do("search in Korean", chromedp.SendKeys(chromedp.CSS("#q"), "인증서 만료"),
		chromedp.Click(chromedp.CSS("#search")), chromedp.WaitVisible(chromedp.CSS("#results-heading")))
	if l, h := lang(), text("h1"); l != "ko" || h != "과거 장애 사례" {
		t.Errorf("Korean search: lang %q, heading %q", l, h)
	}
}

// squash folds runs of white space, as a browser shows them.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
