package fakes

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

func pendingKeys(t *testing.T, tbl *LeaseTable, who string) []string {
	t.Helper()
	ls, err := tbl.ListPending(context.Background(), who)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		if l.Pending != who {
			t.Fatalf("row %v listed for %s", l, who)
		}
		out = append(out, l.Key)
	}
	return out
}

// The pending index shows a row's Pending as it was IndexLag ago: a new
// value appears, and an old one disappears, only after the lag; rows come
// sorted by key, and a deleted row leaves the index.
func TestPendingIndexLags(t *testing.T) {
	clk := NewManualClock(defaultStart)
	tbl := NewLeaseTable(LeaseTableOptions{Clock: clk, IndexLag: time.Second})
	ctx := context.Background()
	row := func(k, p string, c int64) engine.Lease {
		return engine.Lease{Key: k, Counter: c, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon), Pending: p}
	}
	for _, k := range []string{"b", "a", "c"} {
		if err := tbl.CreateLease(ctx, row(k, "w1", 0)); err != nil {
			t.Fatal(err)
		}
	}
	if got := pendingKeys(t, tbl, "w1"); len(got) != 0 {
		t.Fatalf("before the lag: %v", got)
	}
	clk.Advance(time.Second)
	if got := pendingKeys(t, tbl, "w1"); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("after the lag: %v", got)
	}
	if err := tbl.UpdateLease(ctx, engine.Expect{Counter: 0}, row("a", "w2", 1)); err != nil {
		t.Fatal(err)
	}
	if err := tbl.DeleteLease(ctx, "b", engine.Expect{Counter: 0}); err != nil {
		t.Fatal(err)
	}
	if got := pendingKeys(t, tbl, "w1"); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("within the lag the old entries stay: %v", got)
	}
	clk.Advance(time.Second)
	if got := pendingKeys(t, tbl, "w1"); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after the lag: %v", got)
	}
	if got := pendingKeys(t, tbl, "w2"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("w2: %v", got)
	}
	if got := pendingKeys(t, tbl, ""); len(got) != 0 {
		t.Fatalf("rows without Pending are not indexed: %v", got)
	}
	noIdx := NewLeaseTable(LeaseTableOptions{NoIndex: true})
	if _, err := noIdx.ListPending(ctx, "w1"); !errors.Is(err, engine.ErrNoIndex) {
		t.Fatalf("a table without the index: %v", err)
	}
}
