package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProbesAnswerFromHealth: live run's listener serves the metrics and
// package probe's probes: /livez and /healthz follow Live, /readyz Ready.
func TestProbesAnswerFromHealth(t *testing.T) {
	h := engine.Health{Live: true, LiveReason: "ok: the engine loop last stepped at T",
		ReadyReason: "not ready: lease table unreachable since T"}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "shardlease_leases_held 1\n") })
	srv := httptest.NewServer(healthMux(metrics, func() engine.Health { return h }))
	defer srv.Close()
	for path, want := range map[string]struct {
		code int
		body string
	}{
		"/livez":          {200, "ok\n"},
		"/healthz":        {200, "ok\n"},
		"/readyz":         {503, "not ready\n"},
		"/readyz?verbose": {503, "not ready: lease table unreachable since T\n"},
		"/metrics":        {200, "shardlease_leases_held 1\n"},
	} {
		if code, body := get(t, srv.URL+path); code != want.code || body != want.body {
			t.Errorf("%s: %d %q, want %d %q", path, code, body, want.code, want.body)
		}
	}
}
