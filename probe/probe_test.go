package probe

import (
	"errors"
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
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("%s: Cache-Control %q", url, cc)
	}
	return resp.StatusCode, string(b)
}

// TestProbes: /livez and /healthz follow Live, /readyz follows Ready; the
// reason only with ?verbose; the errors' text never.
func TestProbes(t *testing.T) {
	secret := errors.New(`dynamostore: update lease "x" on table "orders-leases" in http://user:pw@10.0.0.7:8000: AccessDenied`)
	h := engine.Health{Live: true, LiveReason: "ok: the engine loop last stepped at T",
		ReadyReason: "not ready: lease table unreachable since T (...): access denied", TableErr: secret}
	mux := http.NewServeMux()
	Handle(mux, func() engine.Health { return h })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]struct {
		code int
		body string
	}{
		"/livez":          {200, "ok\n"},
		"/healthz":        {200, "ok\n"},
		"/readyz":         {503, "not ready\n"},
		"/livez?verbose":  {200, "ok: the engine loop last stepped at T\n"},
		"/readyz?verbose": {503, "not ready: lease table unreachable since T (...): access denied\n"},
	} {
		code, body := get(t, srv.URL+path)
		if code != want.code || body != want.body {
			t.Errorf("%s: %d %q, want %d %q", path, code, body, want.code, want.body)
		}
		if strings.Contains(body, "orders-leases") || strings.Contains(body, "10.0.0.7") {
			t.Errorf("%s: the body %q holds the error's text", path, body)
		}
	}
	h = engine.Health{LiveReason: "not live: stopped at T", ReadyReason: "not ready: stopped at T"}
	for _, p := range []string{"/livez", "/healthz"} {
		if code, body := get(t, srv.URL+p); code != 503 || body != "not live\n" {
			t.Errorf("%s of a stopped consumer: %d %q", p, code, body)
		}
	}
	h = engine.Health{Live: true, Ready: true, LiveReason: "ok: a", ReadyReason: "ok: b"}
	if code, body := get(t, srv.URL+"/readyz?verbose=1"); code != 200 || body != "ok: b\n" {
		t.Errorf("/readyz?verbose=1 of a ready consumer: %d %q", code, body)
	}
}
