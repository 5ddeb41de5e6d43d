package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

func TestMetricsFromTraceStoreAndProcessor(t *testing.T) {
	m := New("w1")
	ref := engine.ShardRef{Stream: "s", Shard: "sh0"}
	m.Trace(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "sh0", Shard: ref, Reason: "unowned"})
	m.Trace(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "sh1", Shard: engine.ShardRef{Stream: "s", Shard: "sh1"}, Reason: "stolen"})
	m.Trace(engine.TraceEvent{Kind: engine.TraceLeaseLost, Key: "sh1", Reason: "expired: no renewal applied within the lease duration"})
	m.Trace(engine.TraceEvent{Kind: engine.TraceCheckpointWritten, Key: "sh0"})
	m.Trace(engine.TraceEvent{Kind: engine.TraceCheckpointRejected, Key: "sh0"})
	m.StoreCall(engine.OpUpdateLease, "renew", 20*time.Millisecond, "ok")
	m.StoreCall(engine.OpUpdateLease, "checkpoint", 5*time.Millisecond, "ok")
	m.Processed(ref, 7, 1500)
	m.Trace(engine.TraceEvent{Kind: engine.TraceAggregateDropped, Key: "sh0", Reason: engine.DropCorrupt + ": kpl: the MD5 digest does not match"})
	m.Trace(engine.TraceEvent{Kind: engine.TraceAggregateDropped, Key: "sh0", Reason: engine.DropHashRange + ": user record 1 of 2"})
	m.Trace(engine.TraceEvent{Kind: engine.TraceAggregateDropped, Key: "sh0", Reason: engine.DropHashRange + ": user record 0 of 2"})
	m.Trace(engine.TraceEvent{Kind: engine.TraceAggregateUndecoded, Key: "sh0", Reason: engine.DropCorrupt + ": kpl: malformed"})

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{
		`shardlease_leases_held{owner="w1"} 1`,
		`shardlease_leases_taken_total{owner="w1",reason="stolen"} 1`,
		`shardlease_leases_stolen_total{owner="w1"} 1`,
		`shardlease_leases_lost_total{cause="expired",owner="w1"} 1`,
		`shardlease_checkpoints_total{owner="w1",result="written"} 1`,
		`shardlease_checkpoints_total{owner="w1",result="rejected"} 1`,
		`shardlease_records_processed_total{owner="w1"} 7`,
		`shardlease_millis_behind_latest{owner="w1",shard="sh0",stream="s"} 1500`,
		`shardlease_renew_duration_seconds_count{owner="w1"} 1`,
		`shardlease_store_call_duration_seconds_count{op="UpdateLease",outcome="ok",owner="w1",write="checkpoint"} 1`,
		`shardlease_kpl_aggregates_dropped_total{action="dropped",cause="corrupt",owner="w1"} 1`,
		`shardlease_kpl_aggregates_dropped_total{action="dropped",cause="hash-range",owner="w1"} 2`,
		`shardlease_kpl_aggregates_dropped_total{action="delivered",cause="corrupt",owner="w1"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(string(b), name) {
			t.Errorf("scrape lacks %s", name)
		}
	}
}
