package reports

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium returns the path of a headless-capable Chromium (env
// SHARDLEASE_CHROMIUM, else /usr/bin/chromium or one on PATH), or skips
// the test (fails it when SHARDLEASE_REQUIRE_CHROMIUM=1).
func chromium(t *testing.T) string {
	t.Helper()
	names := []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}
	if p := os.Getenv("SHARDLEASE_CHROMIUM"); p != "" {
		names = []string{p}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (`make chromium` installs Debian's package); the report is not checked in a browser"
	if os.Getenv("SHARDLEASE_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(msg + ", and SHARDLEASE_REQUIRE_CHROMIUM=1")
	}
	t.Skip(msg + "; set SHARDLEASE_REQUIRE_CHROMIUM=1 to fail instead")
	return ""
}

// chromiumFlags start a headless Chromium that reaches for no network.
func chromiumFlags(profile string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + profile}
}

// dumpDOM loads file in headless Chromium and returns the DOM after the
// page's scripts ran.
func dumpDOM(t *testing.T, bin, file string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(chromiumFlags(t.TempDir()), "--dump-dom", "file://"+file)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	return string(out)
}

var bodyAttr = regexp.MustCompile(`<body([^>]*)>`)

func attr(body, name string) string {
	m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestReportRendersInChromium opens reports in headless Chromium: their
// script runs without errors and the timeline is there, one lane per
// shard; a page with a planted script error is caught.
func TestReportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	write := func(name string, h string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(h), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o, res := busy(t, 3)
	_, passing := render(t, o, res)
	po, pres := planted(t)
	_, failing := render(t, po, pres)

	for _, c := range []struct {
		name  string
		html  string
		lanes int
	}{{"passing.html", passing, shardsCreated(res)}, {"failing.html", failing, shardsCreated(pres)}} {
		dom := dumpDOM(t, bin, write(c.name, c.html))
		m := bodyAttr.FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("%s: no <body> in the DOM:\n%.2000s", c.name, dom)
		}
		body := m[1]
		if got := attr(body, "data-rendered"); got != "ok" {
			errs := regexp.MustCompile(`(?s)<pre id="script-errors"[^>]*>(.*?)</pre>`).FindStringSubmatch(dom)
			t.Errorf("%s: data-rendered=%q; script errors: %v", c.name, got, errs)
		}
		if attr(body, "data-timeline") != "yes" {
			t.Errorf("%s: no timeline", c.name)
		}
		if n, _ := strconv.Atoi(attr(body, "data-lanes")); n != c.lanes {
			t.Errorf("%s: %d lanes drawn, want %d", c.name, n, c.lanes)
		}
		if n, _ := strconv.Atoi(attr(body, "data-bars")); n == 0 {
			t.Errorf("%s: no owner bars", c.name)
		}
		if !strings.Contains(dom, `<svg id="timeline"`) {
			t.Errorf("%s: the DOM has no timeline SVG", c.name)
		}
	}

	// the check is not vacuous: a page whose script fails is reported
	broken := strings.Replace(passing, "</footer>", `</footer><script>window.__planted.boom();</script>`, 1)
	dom := dumpDOM(t, bin, write("broken.html", broken))
	m := bodyAttr.FindStringSubmatch(dom)
	if m == nil || attr(m[1], "data-rendered") != "error" || !strings.Contains(dom, "script errors:") {
		t.Errorf("a planted script error went unnoticed: %v", m)
	}
}
