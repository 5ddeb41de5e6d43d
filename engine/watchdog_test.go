package engine

import (
	"slices"
	"testing"
	"time"
)

// A reply that never comes (a driver bug, a lost goroutine) must not stop
// the worker from scanning and syncing for good.
func TestScanAndSyncRecoverFromAReplyThatNeverComes(t *testing.T) {
	u := newUnit(t, Config{})
	u.hold = func(c Call) bool { return c.Op == OpListLeases || c.Op == OpListShards }
	u.tick()
	if _, ok := u.pending(OpListLeases, ""); !ok {
		t.Fatal("no first scan")
	}
	first := len(u.sent)
	// Never answer. Within 2 lease durations plus a sync interval, the
	// worker must ask again.
	u.runTo(2*DefaultLeaseDuration + DefaultShardSyncInterval + 2*time.Second)
	again := 0
	for _, s := range u.sent[first:] {
		if s.c.Op == OpListLeases || s.c.Op == OpListShards {
			again++
		}
	}
	if again == 0 {
		t.Fatal("the worker never scanned again after a lost reply")
	}
	// Late replies of the abandoned round are ignored, not miscounted.
	for _, c := range slices.Clone(u.out) {
		u.reply(c, u.apply(c))
	}
	u.runTo(u.now + DefaultShardSyncInterval*3)
	if u.w.sync.waiting < 0 {
		t.Fatalf("sync bookkeeping went negative: %d", u.w.sync.waiting)
	}
}
