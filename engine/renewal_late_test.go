package engine

import (
	"slices"
	"testing"
	"time"
)

// A renewal whose reply comes after the validity of the last one has run
// out keeps the lease when it applied: the holder stops acting at its
// margin, keeps the lease while the renewal's outcome is unknown, and acts
// again when the reply says it applied (its validity runs from its send).
// Losing the lease at once would leave the row renewed by a worker that
// no longer holds it, for the others to wait out a whole lease duration
// (an explorer world, seed 7: a failover of 2.23 lease durations).
func TestLateRenewalKeepsTheLease(t *testing.T) {
	c := newCluster(t, 1, Config{Assignment: AssignmentScan})
	c.stream.put(shardKey(0), 3)
	c.start("A")
	key := shardKey(0)
	c.runUntil(time.Minute, "A holds the lease", func() bool { return len(c.held("A")) == 1 })
	cfg := c.cfg.withDefaults()
	c.run(cfg.LeaseDuration)
	// hold A's next write to the lease: it applies, its reply waits
	c.hold = func(tw *tWorker, call Call) bool { return tw.id == "A" && call.Op == OpUpdateLease && call.Key == key }
	c.runUntil(cfg.RenewInterval*2, "A's next write held", func() bool { return len(c.heldReplies) == 1 })
	c.hold = nil
	sent := c.now
	tw := c.worker("A")
	h := tw.w.holdingOf(key)
	if h == nil {
		t.Fatal("A holds no lease")
	}
	old := tw.w.validUntil(h)
	// past the old validity, short of the held write's own
	c.runUntil(cfg.LeaseDuration, "A's own-view expiry of its last applied renewal", func() bool { return tw.w.now.Mono >= old })
	c.run(10 * time.Millisecond)
	if !slices.Contains(c.held("A"), key) {
		t.Fatalf("A gave the lease up at its old expiry (%v after the held write was sent) with a renewal in flight", c.now-sent)
	}
	if tw.w.isActing(h) {
		t.Fatal("A acts past its margin with its renewal's outcome unknown")
	}
	c.releaseHeld(func(Call) bool { return true })
	c.run(10 * time.Millisecond)
	if !slices.Contains(c.held("A"), key) || !tw.w.isActing(tw.w.holdingOf(key)) {
		t.Fatalf("A does not act again once its renewal's reply says it applied (held %v)", c.held("A"))
	}
	if lost := c.traceOf(TraceLeaseLost, "A", key); len(lost) > 0 {
		t.Fatalf("A lost the lease: %+v", lost[0])
	}
}
