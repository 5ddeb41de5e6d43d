package fakes

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// TestListLeasesEventualPerRow: an eventually consistent scan reads each
// row as of its own lag, so one scan mixes rows of different ages, shows a
// row deleted since and misses one created since; a lag past StaleLag is
// clamped.
func TestListLeasesEventualPerRow(t *testing.T) {
	ctx := context.Background()
	tbl, clk := newTable(t, 10*time.Second, 1)
	lease := func(k string, c int64) engine.Lease {
		return engine.Lease{Key: k, Owner: "w", Counter: c, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	}
	must(t, tbl.CreateLease(ctx, lease("a", 1)))
	must(t, tbl.CreateLease(ctx, lease("d", 1)))
	clk.Advance(4 * time.Second) // t=4
	must(t, tbl.UpdateLease(ctx, engine.Expect{Owner: "w", Counter: 1}, lease("a", 2)))
	must(t, tbl.DeleteLease(ctx, "d", engine.Expect{Owner: "w", Counter: 1}))
	must(t, tbl.CreateLease(ctx, lease("n", 1)))
	clk.Advance(4 * time.Second) // t=8
	lags := map[string]time.Duration{"a": 6 * time.Second, "d": 6 * time.Second, "n": 6 * time.Second}
	var asked []string
	l, err := tbl.ListLeasesEventual(ctx, func(k string) time.Duration { asked = append(asked, k); return lags[k] })
	must(t, err)
	got := map[string]int64{}
	for _, r := range l.Leases {
		got[r.Key] = r.Counter
	}
	// as of t=2: a at counter 1, the deleted d, not yet n
	if len(got) != 2 || got["a"] != 1 || got["d"] != 1 {
		t.Fatalf("scan as of 6s ago: %v, want a@1 and the deleted d, not the new n", got)
	}
	if !slices.Equal(asked, []string{"a", "d", "n"}) {
		t.Fatalf("lags asked for %v, want every key in order", asked)
	}
	// mixed: a fresh, d and n old
	lags = map[string]time.Duration{"a": 0, "d": 6 * time.Second, "n": 6 * time.Second}
	l, err = tbl.ListLeasesEventual(ctx, func(k string) time.Duration { return lags[k] })
	must(t, err)
	got = map[string]int64{}
	for _, r := range l.Leases {
		got[r.Key] = r.Counter
	}
	if len(got) != 2 || got["a"] != 2 || got["d"] != 1 {
		t.Fatalf("mixed scan: %v, want a@2 (fresh) with the deleted d, not n", got)
	}
	// clamped to StaleLag: at t=20 a lag of an hour reads as of t=10
	clk.Advance(12 * time.Second)
	l, err = tbl.ListLeasesEventual(ctx, func(string) time.Duration { return time.Hour })
	must(t, err)
	if len(l.Leases) != 2 || l.Leases[0].Key != "a" || l.Leases[0].Counter != 2 || l.Leases[1].Key != "n" {
		t.Fatalf("clamped scan: %v, want a@2 and n", l.Leases)
	}
}

// TestListPendingEventualPerKey: each key's index entry lags by its own
// amount.
func TestListPendingEventualPerKey(t *testing.T) {
	ctx := context.Background()
	clk := NewManualClock(defaultStart)
	tbl := NewLeaseTable(LeaseTableOptions{Clock: clk, IndexLag: 10 * time.Second})
	for _, k := range []string{"a", "b"} {
		must(t, tbl.CreateLease(ctx, engine.Lease{Key: k, Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon), Pending: "w1"}))
	}
	clk.Advance(5 * time.Second)
	lags := map[string]time.Duration{"a": 0, "b": 8 * time.Second}
	ls, err := tbl.ListPendingEventual(ctx, "w1", func(k string) time.Duration { return lags[k] })
	must(t, err)
	if len(ls) != 1 || ls[0].Key != "a" {
		t.Fatalf("index: %v, want a only (b's entry 8s behind, before its row)", ls)
	}
	// the uniform lag (ListPending) shows neither yet
	if ks := pendingKeys(t, tbl, "w1"); len(ks) != 0 {
		t.Fatalf("ListPending: %v, want none within the 10s lag", ks)
	}
}
