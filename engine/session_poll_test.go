package engine

import (
	"context"
	"slices"
	"testing"
	"time"
)

// In session renewal the assigner scans every half lease duration by
// default: it times leases by the session rows it reads in between.
func TestSessionScanIntervalDefault(t *testing.T) {
	cfg := Config{Owner: "w", Streams: []StreamConfig{{Name: "s"}}, Renewal: RenewalSession}
	got, err := cfg.Validate()
	if err != nil || got.AssignerScanInterval != got.LeaseDuration/2 {
		t.Errorf("session renewal: AssignerScanInterval %v, %v; want LeaseDuration/2 = %v", got.AssignerScanInterval, err, got.LeaseDuration/2)
	}
	cfg.Renewal = RenewalPerLease
	if got, _ := cfg.Validate(); got.AssignerScanInterval != got.LeaseDuration/3 {
		t.Errorf("per-lease renewal: AssignerScanInterval %v, want LeaseDuration/3 = %v", got.AssignerScanInterval, got.LeaseDuration/3)
	}
}

// The assigner reads the session row of every worker whose leases it
// times between its scans, every PendingPollInterval, and ends a dead
// worker's session a lease duration after the first of those reads that
// showed its last renewal: within a lease duration and a poll interval of
// that renewal, not a lease duration and a scan interval.
func TestSessionPollsTimeTheLastRenewal(t *testing.T) {
	c := startSessions(t)
	cfg := c.cfg.withDefaults()
	d, poll := cfg.LeaseDuration, cfg.PendingPollInterval
	type read struct {
		by  string
		at  time.Duration
		key string
	}
	var reads, scans []read
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		switch {
		case call.Op == OpGetLease && IsSessionRow(call.Key) && call.Key != SessionKey(tw.id):
			reads = append(reads, read{tw.id, c.now, call.Key})
		case call.Op == OpListLeases && tw.w.IsAssigner():
			scans = append(scans, read{tw.id, c.now, ""})
		}
		return Result{}, false
	}
	c.run(3 * d)
	asg := ""
	for _, id := range []string{"X", "A", "B"} {
		if c.worker(id).w.IsAssigner() {
			asg = id
		}
	}
	if asg == "" || asg == "B" {
		t.Fatalf("assigner %q: want X or A", asg)
	}
	polled := 0
	for _, r := range reads {
		if r.by == asg && r.key == SessionKey("B") {
			polled++
		}
	}
	// three lease durations: six scans, 24 polls (jittered by a tenth)
	if want := int(3*d/poll) * 3 / 4; polled < want || len(scans) > 8 {
		t.Fatalf("in %v the assigner %s read B's session row %d times (want at least %d) and scanned %d times (want at most 8)", 3*d, asg, polled, want, len(scans))
	}
	var lastRenewed time.Duration
	for _, e := range c.traceOf(TraceLeaseRenewed, "B", SessionKey("B")) {
		lastRenewed = e.Mono
	}
	c.worker("B").down = true
	crash := c.now
	c.runUntil(3*d, "B's session ended", func() bool { return c.firstTraceAt(TraceCallSent, SessionKey("B"), crash) < 1<<62 })
	ended := c.firstTraceAt(TraceCallSent, SessionKey("B"), crash)
	if limit := lastRenewed + d + poll + poll/10 + 10*time.Millisecond; ended > limit {
		t.Errorf("B's session (last renewed at %v) ended at %v, after %v: a lease duration and a poll interval", lastRenewed, ended, limit)
	}
}

// A member whose session stands still in the assigner's session polls
// for two renew intervals and a poll is given none of a dead worker's
// leases: it is likely dead too, and a lease assigned to it would wait a
// lease duration more for its receiver (assigner.sessionStill).
func TestSessionStillMemberGetsNoLease(t *testing.T) {
	c := startXABWith(t, Config{Renewal: RenewalSession})
	d := c.cfg.withDefaults().LeaseDuration
	keysA := c.held("A")
	c.worker("A").down = true
	c.run(time.Second)
	c.worker("B").down = true
	downB := c.now
	c.runUntil(3*d, "A's leases taken by X", func() bool {
		held := c.held("X")
		for _, k := range keysA {
			if !slices.Contains(held, k) {
				return false
			}
		}
		return true
	})
	if e, ok := c.assignedTo("B", downB); ok {
		t.Errorf("%s assigned to B (%s), whose session had stood still since it died at %v", e.Key, e.Reason, downB)
	}
}

// A worker that shuts down releases its leases to the assigner, then its
// session row: the assigner's next session poll shows the session
// released and it reads the worker's leases at once, so it assigns them
// without waiting for the pending index or a scan to show them (here
// neither does: the index lags, the scans are throttled).
func TestReleasedSessionLeasesAssignedAtOnce(t *testing.T) {
	c := startXABWith(t, Config{Renewal: RenewalSession})
	cfg := c.cfg.withDefaults()
	keysA := c.held("A")
	tw := c.worker("A")
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		switch {
		case tw.id == "X" && call.Op == OpListPending && call.Key == AssignerPending:
			return Result{Listing: Listing{}}, true
		case tw.id == "X" && call.Op == OpListLeases:
			return Result{Err: ErrThrottled}, true
		}
		return Result{}, false
	}
	c.step(tw, Input{Kind: InputShutdown})
	c.runUntil(cfg.LeaseDuration, "A stopped", func() bool { return tw.stopped })
	tw.down = true
	stop := c.now
	c.runUntil(cfg.LeaseDuration, "A's leases taken", func() bool {
		for _, k := range keysA {
			if !slices.Contains(c.held("X"), k) && !slices.Contains(c.held("B"), k) {
				return false
			}
		}
		return true
	})
	if limit := stop + 2*cfg.PendingPollInterval + cfg.PendingPollInterval/5; c.now > limit {
		t.Errorf("A's leases %v taken at %v, A stopped at %v: want within two polls (%v)", keysA, c.now, stop, limit)
	}
}

// A worker whose watch reports an assignment before it may take leases
// (its start-up scan has not yet shown that no KCL worker renews on the
// table) reads what waits for it again once it may, by a poll of the
// index although its watch is up: the watch reported the assignment once
// and says nothing more until the row changes (swarm seed 1836 with
// -renewal session, T2).
func TestSessionRefusedAssignmentTakenOnceChecked(t *testing.T) {
	c := assigned(t, 4, Config{WatchPending: true, Renewal: RenewalSession})
	c.push = newPushHub()
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.start("X")
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	c.hold = func(tw *tWorker, call Call) bool { return tw.id == "B" && call.Op == OpListLeases }
	c.start("B")
	waiting := func() bool {
		for i := 0; i < 4; i++ {
			if c.row(shardKey(i)).Pending == "B" {
				return true
			}
		}
		return false
	}
	c.runUntil(time.Minute, "a lease waits for B", waiting)
	c.run(2 * time.Second)
	if len(c.held("B")) != 0 || !waiting() {
		t.Fatalf("B holds %v before its start-up scan came back; want nothing, and a lease waiting for it", c.held("B"))
	}
	c.hold = nil
	c.releaseHeld(func(call Call) bool { return call.Op == OpListLeases })
	checked := c.now
	c.runUntil(time.Minute, "B takes a lease", func() bool { return len(c.held("B")) > 0 })
	if limit := checked + c.cfg.withDefaults().PendingPollInterval/2; c.now > limit {
		t.Errorf("B took its first lease at %v, its start-up scan came back at %v: want it within half a poll interval (%v)", c.now, checked, limit)
	}
}

// A worker that takes leases itself (a fleet migrating back to scan mode,
// its scans eventually consistent) is left alone with the leases of a
// dead session-renewal worker: it ends that session (a write of the
// session row conditioned on the version it timed) before it takes them,
// as the assigner does, and takes them once the end applied; while the
// session is renewed it takes none of them (swarm seed 4639 with
// -renewal session: such leases stood unowned for good).
func TestScanWorkerEndsADeadSession(t *testing.T) {
	c := sessions(t, 4)
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.runUntil(time.Minute, "A holds every lease", func() bool { return len(c.held("A")) == 4 })
	c.cfg.Renewal, c.cfg.Assignment = RenewalPerLease, AssignmentScan
	c.start("S")
	d := c.cfg.withDefaults()
	c.run(3 * d.LeaseDuration)
	if held := c.held("S"); len(held) != 0 {
		t.Fatalf("S took %v from A, whose session it renews", held)
	}
	keys := c.held("A")
	c.worker("A").down = true
	crash := c.now
	c.runUntil(3*d.LeaseDuration+2*d.TakeInterval, "S holds A's leases", func() bool { return len(c.held("S")) == len(keys) })
	ended := c.firstTraceAt(TraceCallSent, SessionKey("A"), crash)
	if end := c.row(SessionKey("A")); end.Owner != "" || ended > c.now {
		t.Fatalf("A's session row after S took its leases: owner %q (end sent at %v); want it ended first", end.Owner, ended)
	}
	for _, k := range keys {
		for _, e := range c.traceOf(TraceLeaseAcquired, "S", k) {
			if e.Mono < ended {
				t.Errorf("S took %s at %v, before A's session was ended (%v)", k, e.Mono, ended)
			}
		}
	}
}

// A member whose own lease rows renew (per lease, in a fleet migrating
// between modes) is alive whatever a session row of its owner id shows:
// one an earlier process left ended (or standing) keeps it from no lease
// (swarm seed 9552: L1, a per-lease member left out of the balance).
func TestPerLeaseMemberBesideAnOldSessionRowGetsLeases(t *testing.T) {
	c := assigned(t, 6, Config{Renewal: RenewalSession})
	for i := 0; i < 6; i++ {
		c.stream.put(shardKey(i), 3)
	}
	old := Lease{Key: SessionKey("B"), Counter: 4, Writer: "gone", Session: "gone@3", Checkpoint: SentinelCheckpoint(ShardEnd)}
	if err := c.store.CreateLease(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	c.start("X")
	c.run(time.Second)
	c.start("A")
	c.cfg.Renewal = RenewalPerLease
	c.start("B")
	c.runUntil(2*time.Minute, "balanced 2-2-2", func() bool {
		return len(c.held("X")) == 2 && len(c.held("A")) == 2 && len(c.held("B")) == 2
	})
}
