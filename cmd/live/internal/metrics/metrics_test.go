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
		"go_goroutines",
	} {
		if !strings.Contains(string(b), name) {
			t.Errorf("scrape lacks %s", name)
		}
	}
}

func TestFanOutMetrics(t *testing.T) {
	m := New("w1")
	ref := engine.ShardRef{Stream: "s", Shard: "sh0"}
	m.Trace(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "sh0", Shard: ref, Reason: "unowned"})
	m.Subscribed(ref, "ok", false)
	m.Event(ref, 3, 250)
	m.Event(ref, 0, 40) // an event without records still says how far behind
	m.SubscriptionEnded(ref, "lifetime")
	m.Subscribed(ref, "in-use", false)
	m.Subscribed(ref, "ok", true)
	m.SubscriptionEnded(ref, "taken-over")
	m.Subscribed(ref, "weird", false)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{
		`shardlease_subscriptions_total{outcome="ok",owner="w1"} 2`,
		`shardlease_subscriptions_total{outcome="in-use",owner="w1"} 1`,
		`shardlease_subscriptions_total{outcome="error",owner="w1"} 1`,
		`shardlease_subscriptions_total{outcome="throttled",owner="w1"} 0`,
		`shardlease_subscription_renewals_total{owner="w1"} 1`,
		`shardlease_subscription_ends_total{cause="lifetime",owner="w1"} 1`,
		`shardlease_subscription_ends_total{cause="taken-over",owner="w1"} 1`,
		`shardlease_subscription_ends_total{cause="error",owner="w1"} 0`,
		`shardlease_subscription_events_total{owner="w1"} 2`,
		`shardlease_millis_behind_latest{owner="w1",shard="sh0",stream="s"} 40`,
	} {
		if !strings.Contains(string(b), name) {
			t.Errorf("scrape lacks %s", name)
		}
	}
}
