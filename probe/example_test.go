package probe_test

import (
	"net/http"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/probe"
)

var consumer *engine.Consumer // from engine.NewConsumer

// The probes and the metrics of a consumer on one listener (the metrics
// handler from package metrics in a real application; examples/consumer
// is a whole one).
func Example() {
	mux := http.NewServeMux()
	probe.Handle(mux, consumer.Health) // /livez, /healthz (liveness), /readyz
	mux.Handle("/metrics", http.NotFoundHandler())
	srv := &http.Server{Addr: ":9464", Handler: mux}
	go func() { _ = srv.ListenAndServe() }()
}
