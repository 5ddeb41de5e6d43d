package main

import (
	"net/http"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/probe"
)

// healthMux serves the metrics and the probes (package probe): /livez and
// /healthz (liveness), /readyz (readiness), details with ?verbose.
func healthMux(metrics http.Handler, health func() engine.Health) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	probe.Handle(mux, health)
	return mux
}
