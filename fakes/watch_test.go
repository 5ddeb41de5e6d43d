package fakes

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

// TestPendingChanges: every write that leaves a row waiting is logged for
// its Pending value with the table's revision, readable from any kept
// revision, and lost (engine.ErrWatchLost) before a compaction.
func TestPendingChanges(t *testing.T) {
	tb := NewLeaseTable(LeaseTableOptions{Watch: true})
	ctx := context.Background()
	w := func(l engine.Lease) {
		t.Helper()
		cur, err := tb.GetLease(ctx, l.Key)
		if errors.Is(err, engine.ErrNotFound) {
			err = tb.CreateLease(ctx, l)
		} else if err == nil {
			l.Counter = cur.Counter + 1
			err = tb.UpdateLease(ctx, engine.ExpectOf(cur), l)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	row := func(key, pending string) engine.Lease {
		return engine.Lease{Key: key, Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon), Pending: pending}
	}
	w(row("a", "w1")) // rev 1
	w(row("b", "w2")) // rev 2
	w(row("a", "w1")) // rev 3: written again while it waits
	w(row("a", ""))   // rev 4: no longer waits
	w(row("c", "w1")) // rev 5
	if err := tb.UpdateLease(ctx, engine.Expect{Owner: "x", Counter: 9}, row("c", "w1")); err == nil {
		t.Fatal("a failed condition applied")
	}
	if tb.Revision() != 5 {
		t.Fatalf("revision %d after 5 applied writes", tb.Revision())
	}
	keys := func(from int64) []string {
		cs, err := tb.PendingChanges("w1", from)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Key+"@"+string(rune('0'+c.Revision)))
		}
		return out
	}
	if got, want := keys(1), []string{"a@1", "a@3", "c@5"}; !slices.Equal(got, want) {
		t.Fatalf("changes of w1 from 1: %v, want %v", got, want)
	}
	if got, want := keys(2), []string{"a@3", "c@5"}; !slices.Equal(got, want) {
		t.Fatalf("changes of w1 from 2: %v, want %v", got, want)
	}
	if got := keys(6); len(got) != 0 {
		t.Fatalf("changes of w1 from 6: %v, want none", got)
	}
	tb.Compact(4)
	if _, err := tb.PendingChanges("w1", 3); !errors.Is(err, engine.ErrWatchLost) {
		t.Fatalf("changes from a compacted revision: %v, want engine.ErrWatchLost", err)
	}
	if got, want := keys(4), []string{"c@5"}; !slices.Equal(got, want) {
		t.Fatalf("changes of w1 from 4 after the compaction: %v, want %v", got, want)
	}
	if NewLeaseTable(LeaseTableOptions{}).watch != nil {
		t.Fatal("a table without Watch keeps a log")
	}
}
