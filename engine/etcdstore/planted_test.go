//go:build shardlease_mutations

package etcdstore_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/internal/etcdtest"
)

// TestPlantedOwnerOnlyCompare: with the compare naming only the owner, an
// update that expects a stale counter of the same owner applies, which the
// contract suite's update/wrong_counter_fails refuses.
func TestPlantedOwnerOnlyCompare(t *testing.T) {
	s := newStore(t)
	etcdstore.SetPlanted(s, "owner-only-compare")
	ctx := etcdtest.Context(t)
	l := engine.Lease{Key: "k", Owner: "w1", Counter: 3, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	if err := s.CreateLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	stale := l
	stale.Counter = 9
	if err := s.UpdateLease(ctx, engine.Expect{Owner: "w1", Counter: 2}, stale); err != nil {
		t.Fatalf("the planted bug did not apply a stale write (%v): the contract suite would not see it", err)
	}
	if err := s.UpdateLease(ctx, engine.Expect{Owner: "w2", Counter: 9}, stale); !errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("another owner's expectation = %v, want still refused", err)
	}
}

// TestPlantedWatchResumeAtCurrent: a watch resumed at the current revision
// never reports the writes made while it was cancelled.
func TestPlantedWatchResumeAtCurrent(t *testing.T) {
	cc := &cuttingClient{Client: etcdtest.Shared(t).Client(t)}
	s, err := etcdstore.New(cc, etcdtest.Prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	etcdstore.SetPlanted(s, "watch-resume-at-current")
	got := resumeScenario(t, s, cc)
	if slices.Contains(keysOf(got), "c") || slices.Contains(keysOf(got), "d") {
		t.Fatalf("the planted bug reported %v: TestWatchResumesWithoutGap would not see it", keysOf(got))
	}
}
