package main

import (
	"io"
	"net/http"

	"github.com/shardlease/shardlease/engine"
)

// healthHandler answers a Kubernetes probe from the consumer's health:
// 200 with "ok: ..." when it holds (live for /livez, ready for /readyz),
// else 503 with "not live: ..." / "not ready: ...".
func healthHandler(health func() engine.Health, ready bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := health()
		ok, reason := h.Live, h.LiveReason
		if ready {
			ok, reason = h.Ready, h.ReadyReason
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = io.WriteString(w, reason+"\n")
	})
}

// healthMux serves the metrics and the probes: /livez (liveness), /readyz
// (readiness), and /healthz, an alias of /readyz.
func healthMux(metrics http.Handler, health func() engine.Health) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	mux.Handle("/livez", healthHandler(health, false))
	mux.Handle("/readyz", healthHandler(health, true))
	mux.Handle("/healthz", healthHandler(health, true))
	return mux
}
