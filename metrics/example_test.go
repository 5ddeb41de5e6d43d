package metrics_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/metrics"
)

// An application built on the engine wires the metrics in with four
// calls (the Tracer, and the wrappers of its store, stream and processor
// factory), then serves them.
func Example() {
	m, err := metrics.New(metrics.Options{Owner: "worker-1"})
	if err != nil {
		log.Fatal(err)
	}
	var store engine.LeaseStore = engine.NewMemStore() // dynamostore.New(...) in production
	var stream engine.Stream = emptyStream{}           // kinesisstream.New(...) in production
	c, err := engine.NewConsumer(engine.ConsumerOptions{
		Config: engine.Config{
			Owner:   "worker-1",
			Streams: []engine.StreamConfig{{Name: "orders", InitialPosition: engine.TrimHorizon}},
			Trace:   m.Tracer(nil), // or m.Tracer(yourTracer)
		},
		Store:     m.Store(store),
		Stream:    m.Stream(stream),
		Processor: m.Processors(func(engine.ShardRef) engine.Processor { return nopProcessor{} }),
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = c // c.Run(ctx) in production
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler()) // http.ListenAndServe(":9464", mux) in production

	// One call through the wrapped stream, then a scrape.
	_, _ = m.Stream(stream).ListShards(context.Background(), "orders")
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "shardlease_stream_call_duration_seconds_count") || strings.HasPrefix(line, "shardlease_leases_held") {
			fmt.Println(line)
		}
	}
	// Output:
	// shardlease_leases_held{owner="worker-1"} 0
	// shardlease_stream_call_duration_seconds_count{op="ListShards",outcome="ok",owner="worker-1"} 1
}

type emptyStream struct{}

func (emptyStream) DescribeStream(context.Context, string) (engine.StreamInfo, error) {
	return engine.StreamInfo{}, nil
}
func (emptyStream) ListShards(context.Context, string) ([]engine.Shard, error) { return nil, nil }
func (emptyStream) GetShardIterator(context.Context, string, string, engine.Position) (string, error) {
	return "", nil
}
func (emptyStream) GetRecords(context.Context, string, int) (engine.RecordsPage, error) {
	return engine.RecordsPage{}, nil
}

type nopProcessor struct{}

func (nopProcessor) Initialize(context.Context, engine.InitInput) error { return nil }
func (nopProcessor) ProcessRecords(context.Context, engine.RecordsInput) error {
	return nil
}
func (nopProcessor) ShardEnded(context.Context, engine.ShardEndedInput) error { return nil }
func (nopProcessor) ShutdownRequested(context.Context, engine.ShutdownInput) error {
	return nil
}
func (nopProcessor) LeaseLost(context.Context, engine.LeaseLostInput) {}
