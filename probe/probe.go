// Package probe serves the Kubernetes probes of an engine.Consumer from
// its Health: liveness (/livez, and /healthz, the path liveness probes
// often use) and readiness (/readyz).
//
// A probe answers 200 "ok" or 503 "not live" / "not ready"; with the query
// parameter verbose (/readyz?verbose) the body is the reason
// (Health.LiveReason, Health.ReadyReason), which names a failing
// dependency's error by its class only (timeout, throttled, ...): no table
// name, endpoint, account or SDK error text reaches an unauthenticated
// body. Log Health.TableErr and Health.StreamErr for those.
//
// Point the liveness probe at /livez (or /healthz) and the readiness probe
// at /readyz, never the liveness probe at /readyz: a worker that cannot
// reach the table or the stream is not ready, keeps retrying and becomes
// ready by itself; restarting it would only lose its leases.
package probe

import (
	"io"
	"net/http"

	"github.com/shardlease/shardlease/engine"
)

// The paths Handle serves.
const (
	LivePath   = "/livez"
	ReadyPath  = "/readyz"
	HealthPath = "/healthz" // liveness, not readiness
)

// Live returns the liveness probe of the consumer whose Health is health:
// 200 while the engine loop is stepping (Health.Live).
func Live(health func() engine.Health) http.Handler {
	return handler(health, false)
}

// Ready returns the readiness probe: 200 while the consumer can do its
// work (Health.Ready: started, not shutting down, the table and the
// stream answering).
func Ready(health func() engine.Health) http.Handler {
	return handler(health, true)
}

// Handle registers Live at LivePath and HealthPath and Ready at ReadyPath
// on mux.
func Handle(mux *http.ServeMux, health func() engine.Health) {
	mux.Handle(LivePath, Live(health))
	mux.Handle(HealthPath, Live(health))
	mux.Handle(ReadyPath, Ready(health))
}

func handler(health func() engine.Health, ready bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := health()
		ok, reason, short := h.Live, h.LiveReason, "not live"
		if ready {
			ok, reason, short = h.Ready, h.ReadyReason, "not ready"
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		if !r.URL.Query().Has("verbose") {
			if ok {
				reason = "ok"
			} else {
				reason = short
			}
		}
		_, _ = io.WriteString(w, reason+"\n")
	})
}
