package engine

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A new assigner that took over an expired assigner row counts the
// process that held it out of its members, even when its first sight of
// that process's session row is recent (a deputy's scan saw the last
// renewal late): the dead assigner is never listed as a deputy of the
// row nor given a lease (soak seed 3030 of 1b4e506: T3, the new
// assigner listed its dead predecessor first among its deputies).
func TestNewAssignerCountsItsPredecessorOut(t *testing.T) {
	c := startSessions(t)
	d := c.cfg.withDefaults().LeaseDuration
	c.worker("X").down = true
	crash := c.now
	c.runUntil(3*d, "a new assigner", func() bool { a := c.assignerOf(); return a == "A" || a == "B" })
	took, taken := c.now, c.row(AssignerKey).Counter
	for end := c.now + d; c.now < end; {
		c.run(c.cfg.withDefaults().RenewInterval / 3)
		// (the take keeps the old member list: the new assigner writes
		// its own at its first renewal)
		if row := c.row(AssignerKey); row.Counter > taken && slices.Contains(row.Children, "X") {
			t.Fatalf("%v after the takeover (X crashed %v before it), the assigner row lists the dead X as a member: %v", c.now-took, took-crash, row.Children)
		}
	}
	if e, ok := c.assignedTo("X", took); ok {
		t.Errorf("the new assigner gave the dead X a lease: %v", e)
	}
}

// A worker whose take of the assigner row failed because another took
// the row first reads the row again soon, as a deputy does: it takes the
// row over a lease duration after its first sight of the winner's
// version if that one never renews, even when it is not the new
// assigner's deputy (soak seed 14343 of 1b4e506: T3, a worker that lost
// the race read the row again only two lease durations later).
func TestLostAssignerTakeTimesTheWinner(t *testing.T) {
	c := assigned(t, 10, Config{})
	c.start("X")
	c.run(time.Second)
	for _, id := range []string{"A", "B", "C", "D"} {
		c.start(id)
	}
	c.runUntil(2*time.Minute, "balanced 2 each", func() bool {
		for _, id := range []string{"X", "A", "B", "C", "D"} {
			if len(c.held(id)) != 2 {
				return false
			}
		}
		return true
	})
	c.run(5 * time.Second)
	cfg := c.cfg.withDefaults()
	var won time.Duration
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id != "C" || call.Key != AssignerKey || call.Op != OpUpdateLease || won != 0 {
			return Result{}, false
		}
		// Cz (whose deputies, D and X, are down) takes the row first,
		// then dies: C's take fails its condition
		old := c.row(AssignerKey)
		over := old.Clone()
		over.Owner, over.Writer, over.Counter = "Cz", "cz-nonce", old.Counter+1
		if err := c.store.UpdateLease(context.Background(), ExpectOf(old), over); err != nil {
			t.Fatal(err)
		}
		won = c.now
		return Result{Err: ErrConditionFailed}, true
	}
	// C, not a deputy of X (those are the members after X in the list:
	// A and B), is the only one left: it reads the row every two lease
	// durations and takes it once it stood still a lease duration
	for _, id := range []string{"X", "A", "B", "D"} {
		c.worker(id).down = true
	}
	c.runUntil(6*cfg.LeaseDuration, "C's take of the assigner row", func() bool { return won != 0 })
	c.intercept = nil
	c.runUntil(4*cfg.LeaseDuration, "C takes the row over from Cz", func() bool { return c.assignerOf() == "C" })
	// Cz's version stood still from won: C takes it a lease duration on,
	// within a poll interval and a tick or two, not at its next read of
	// a worker that is no deputy, two lease durations on
	if late := c.now - won - cfg.LeaseDuration; late > cfg.PendingPollInterval+time.Second {
		t.Errorf("C took the assigner row over %v after Cz's version stood a lease duration, want within %v", late, cfg.PendingPollInterval+time.Second)
	}
}

// Beside a live KCL worker's lease rows (written without a writer nonce),
// the assigner of a fleet of the default renewal never counts the KCL
// worker a member: it is not listed among the assigner row's deputies,
// where it would never take the row over, nor given a lease it would
// never take (soak seed 4370 of 1b4e506: T3, the KCL worker stood first
// in line to take over from a dead assigner).
func TestKCLWorkerIsNoMember(t *testing.T) {
	c := newCluster(t, 4, Config{Assignment: AssignmentAssigner})
	kcl := Lease{Key: shardKey(0), Owner: "kcl-worker", Counter: 7, Checkpoint: Checkpoint{Sequence: TrimHorizon}}
	if err := c.store.CreateLease(context.Background(), kcl); err != nil {
		t.Fatal(err)
	}
	c.start("A")
	c.run(time.Second)
	c.start("B")
	renew := c.kclRenews(kcl.Key)
	for end := c.now + time.Minute; c.now < end; {
		renew()
		c.run(100 * time.Millisecond)
		if m := c.row(AssignerKey).Children; slices.Contains(m, "kcl-worker") {
			t.Fatalf("at %v the assigner row lists the KCL worker as a member: %v", c.now, m)
		}
	}
	if e, ok := c.assignedTo("kcl-worker", 0); ok {
		t.Errorf("the assigner gave the KCL worker a lease: %v", e)
	}
	if n := len(c.held("A")) + len(c.held("B")); n != 3 {
		t.Errorf("A and B hold %d leases, want the 3 the KCL worker does not", n)
	}
}

// A restarted assigner (a new process under its owner id, which resumes
// its own assigner row) counts no owner a member for a row it sees for
// the first time: a row that names a worker that is gone (here one
// written just before the restart, as a dead process's rows stand until
// they expire) shows nothing of its life, and that owner is never listed,
// as a member nor as a deputy (soak seed 163 of d8f57de with -renewal
// session, T3: the restarted assigner listed three dead owner ids first
// after itself, and the live deputies it had inherited read the row at a
// non-deputy's pace).
func TestRestartedAssignerListsNoDeadOwner(t *testing.T) {
	c := assigned(t, 4, Config{})
	for _, id := range []string{"A", "B", "C"} {
		c.start(id)
	}
	c.runUntil(2*time.Minute, "every lease held", func() bool { return len(c.held("A"))+len(c.held("B"))+len(c.held("C")) == 4 })
	c.run(5 * time.Second)
	asg := c.assignerOf()
	if asg == "" {
		t.Fatal("no assigner")
	}
	// a lease of a worker that died: its row names it, unchanged since
	key := c.held(asg)[0]
	row := c.row(key)
	dead := row.Clone()
	dead.Owner, dead.Writer, dead.Counter = "gone", "gone-nonce", row.Counter+1
	if err := c.store.UpdateLease(context.Background(), ExpectOf(row), dead); err != nil {
		t.Fatal(err)
	}
	c.worker(asg).down = true // crashed; restarted at once under its id
	c.start(asg)
	restart := c.now
	d := c.cfg.withDefaults().LeaseDuration
	c.runUntil(d, "the restart resumes the assigner row", func() bool { return c.assignerOf() == asg })
	resumed := c.row(AssignerKey).Counter
	for end := c.now + 2*d; c.now < end; {
		c.run(c.cfg.withDefaults().RenewInterval / 3)
		if row := c.row(AssignerKey); row.Counter > resumed && slices.Contains(row.Children, "gone") {
			t.Fatalf("%v after the restart, the assigner row lists the owner of a row it saw once: %v", c.now-restart, row.Children)
		}
	}
	if e, ok := c.assignedTo("gone", 0); ok {
		t.Errorf("the restarted assigner gave the dead owner a lease: %v", e)
	}
}
