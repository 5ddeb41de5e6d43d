package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestProbesAnswerFromHealth: /livez follows Live, /readyz and /healthz
// follow Ready, each with the reason in the body.
func TestProbesAnswerFromHealth(t *testing.T) {
	h := engine.Health{Live: true, LiveReason: "ok: the engine loop last stepped at T",
		ReadyReason: "not ready: lease table unreachable since T"}
	srv := httptest.NewServer(healthMux(http.NotFoundHandler(), func() engine.Health { return h }))
	defer srv.Close()
	for path, want := range map[string]struct {
		code int
		body string
	}{
		"/livez":   {200, "ok: the engine loop last stepped at T\n"},
		"/readyz":  {503, "not ready: lease table unreachable since T\n"},
		"/healthz": {503, "not ready: lease table unreachable since T\n"},
	} {
		if code, body := get(t, srv.URL+path); code != want.code || body != want.body {
			t.Errorf("%s: %d %q, want %d %q", path, code, body, want.code, want.body)
		}
	}
	h = engine.Health{LiveReason: "not live: stopped at T", ReadyReason: "not ready: stopped at T"}
	if code, body := get(t, srv.URL+"/livez"); code != 503 || !strings.HasPrefix(body, "not live: stopped") {
		t.Errorf("/livez of a stopped consumer: %d %q", code, body)
	}
	h = engine.Health{Live: true, Ready: true, LiveReason: "ok: a", ReadyReason: "ok: b"}
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != "ok: b\n" {
		t.Errorf("/healthz of a ready consumer: %d %q", code, body)
	}
}
