package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// assigned returns a cluster of workers in assigned mode, renewing per
// lease unless cfg says otherwise (the tests of the assigner's rules;
// RenewalAuto has its own).
func assigned(t *testing.T, shards int, cfg Config) *cluster {
	cfg.Assignment = AssignmentAssigner
	if cfg.Renewal == "" {
		cfg.Renewal = RenewalPerLease
	}
	return newCluster(t, shards, cfg)
}

// assignerOf returns the id of the worker that is the assigner, or "".
func (c *cluster) assignerOf() string {
	for _, tw := range c.workers {
		if !tw.down && !tw.stopped && tw.w.IsAssigner() {
			return tw.id
		}
	}
	return ""
}

// firstAct returns the monotonic time of owner's first acting on key at or
// after from, or -1.
func (c *cluster) firstAct(owner, key string, from time.Duration) time.Duration {
	for _, e := range c.trace {
		if e.Owner == owner && e.Key == key && e.Kind == TraceActing && e.Mono >= from {
			return e.Mono
		}
	}
	return -1
}

// start3 starts A, B, C on 6 shards with records, and runs until every
// lease is held and balanced 2-2-2.
func start3(t *testing.T) *cluster {
	c := assigned(t, 6, Config{})
	for i := 0; i < 6; i++ {
		c.stream.put(shardKey(i), 3)
	}
	for _, id := range []string{"A", "B", "C"} {
		c.start(id)
	}
	c.runUntil(2*time.Minute, "balanced 2-2-2", func() bool {
		return len(c.held("A")) == 2 && len(c.held("B")) == 2 && len(c.held("C")) == 2
	})
	c.run(5 * time.Second)
	return c
}

// A worker that crashes loses its leases to the others within 1.5 lease
// durations of its last act (the assigner observes every lease and assigns
// the expired ones at the moment they expire in its view).
func TestAssignedFailoverWithinOneAndAHalfLeaseDurations(t *testing.T) {
	c := start3(t)
	d := c.cfg.withDefaults().LeaseDuration
	victim := "B"
	if c.assignerOf() == victim {
		victim = "C"
	}
	keys := c.held(victim)
	c.worker(victim).down = true
	crash := c.now
	c.runUntil(2*d, "the victim's leases reassigned", func() bool {
		n := 0
		for _, id := range []string{"A", "B", "C"} {
			if id != victim {
				n += len(c.held(id))
			}
		}
		return n == 6
	})
	for _, k := range keys {
		last := crash // it acted until it crashed
		var first time.Duration = -1
		for _, id := range []string{"A", "B", "C"} {
			if id != victim {
				if f := c.firstAct(id, k, crash); f >= 0 {
					first = f
				}
			}
		}
		if gap := first - last; first < 0 || gap > 3*d/2 {
			t.Errorf("%s: no acting owner for %v (last act %v, first %v), want at most %v", k, gap, last, first, 3*d/2)
		} else if gap < d-c.cfg.withDefaults().RenewInterval {
			t.Errorf("%s: taken over %v after the last act, before the holder's lease could have expired", k, gap)
		}
		asg, acq := c.traceOf(TraceAssigned, "", k), c.traceOf(TraceLeaseAcquired, "", k)
		if !(len(asg) > 0 && asg[len(asg)-1].Previous == victim) && !(len(acq) > 0 && acq[len(acq)-1].Previous == victim) {
			t.Errorf("%s: not assigned away from %s: %v %v", k, victim, asg, acq)
		}
	}
}

// The assigner's crash: a deputy takes the assigner row over once it
// expires in its view, and reassigns the old assigner's leases at once
// (they were bound to its row), all within 1.5 lease durations.
func TestAssignedAssignerCrash(t *testing.T) {
	c := start3(t)
	d := c.cfg.withDefaults().LeaseDuration
	old := c.assignerOf()
	if old == "" {
		t.Fatal("no assigner")
	}
	keys := c.held(old)
	c.worker(old).down = true
	crash := c.now
	c.runUntil(2*d, "a new assigner and the old one's leases reassigned", func() bool {
		n := 0
		for _, tw := range c.workers {
			if tw.id != old {
				n += len(c.held(tw.id))
			}
		}
		return c.assignerOf() != "" && n == 6
	})
	for _, k := range keys {
		last := crash
		first := time.Duration(-1)
		for _, tw := range c.workers {
			if tw.id != old {
				if f := c.firstAct(tw.id, k, crash); f >= 0 {
					first = f
				}
			}
		}
		if gap := first - last; first < 0 || gap > 3*d/2 {
			t.Errorf("%s of the old assigner: no acting owner for %v, want at most %v", k, gap, 3*d/2)
		}
	}
}

// The assigner and a holder crash together: the surviving deputy, which
// scans the table once the assigner row stands still longer than its
// renewals allow, takes the holder's leases within 1.6 lease durations,
// not a lease duration after it became the assigner (2 lease durations
// and more), and hands nothing to the old assigner.
func TestAssignedAssignerAndHolderCrashTogether(t *testing.T) {
	c := start3(t)
	d := c.cfg.withDefaults().LeaseDuration
	old := c.assignerOf()
	var victim, survivor string
	for _, id := range []string{"A", "B", "C"} {
		switch {
		case id == old:
		case victim == "":
			victim = id
		default:
			survivor = id
		}
	}
	keys := c.held(victim)
	c.worker(old).down = true
	c.worker(victim).down = true
	crash := c.now
	c.runUntil(3*d, "the survivor holds every lease", func() bool { return len(c.held(survivor)) == 6 })
	for _, k := range keys {
		if gap := c.firstAct(survivor, k, crash) - crash; gap > 8*d/5 {
			t.Errorf("%s of the crashed holder: acted on %v after the crash, want at most %v", k, gap, 8*d/5)
		}
		for _, e := range c.traceOf(TraceAssigned, "", k) {
			if e.Mono > crash && strings.HasPrefix(e.Reason, "to "+victim+":") {
				t.Errorf("%s assigned to the dead holder: %s", k, e.Reason)
			}
		}
	}
	for _, e := range c.trace {
		// (the old assigner's own row expired: it is no member; the victim
		// looks alive until its rows have stood still for two renewals and
		// a scan interval, so the old assigner's leases may go to it first)
		if e.Kind == TraceAssigned && e.Mono > crash && strings.HasPrefix(e.Reason, "to "+old+":") {
			t.Errorf("%s assigned to the old assigner: %s", e.Key, e.Reason)
		}
	}
}

// A balance move is a cooperative handoff: the source finishes its batch,
// its processor checkpoints, it releases the lease to the receiver, which
// acts at once: a gap far under 0.4 lease durations and no record
// delivered twice.
func TestAssignedBalanceMoveIsACooperativeHandoff(t *testing.T) {
	c := assigned(t, 4, Config{})
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	a := c.start("A")
	x := c.start("X") // a second worker, so the move's source need not be the assigner
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	c.runUntil(10*time.Second, "all records delivered", func() bool { return totalGot(a)+totalGot(x) == 12 })
	b := c.start("B")
	d := c.cfg.withDefaults().LeaseDuration
	joined := c.now
	c.runUntil(2*time.Minute, "B gets a share", func() bool { return len(c.held("B")) >= 1 })
	for _, k := range c.held("B") {
		rel := c.traceOf(TraceLeaseReleased, "", k)
		if len(rel) == 0 || rel[len(rel)-1].Mono < joined {
			t.Fatalf("%s reached B without a release: %v", k, rel)
		}
		from := rel[len(rel)-1].Owner
		// the old owner acted until its processor checkpointed, just
		// before the release
		gap := c.firstAct("B", k, joined) - rel[len(rel)-1].Mono
		if gap > 2*d/5 {
			t.Errorf("%s: moved from %s to B with a gap of %v, want at most %v", k, from, gap, 2*d/5)
		}
	}
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 2)
	}
	c.runUntil(time.Minute, "the new records delivered", func() bool { return totalGot(a)+totalGot(x)+totalGot(b) == 20 })
	for k, got := range b.got {
		seen := map[string]bool{}
		for _, s := range append(append(slices.Clone(a.got[k]), x.got[k]...), got...) {
			if seen[s] {
				t.Errorf("%s: record %s delivered twice across a planned move", k, s)
			}
			seen[s] = true
		}
	}
}

// A handoff request to a holder that has just died does not put its
// lease's expiry off: the request renews nothing, so the assigner still
// counts the lease as standing still since it first saw the holder's last
// renewal, and reassigns it within 1.5 lease durations of the crash, not
// a lease duration after its own request.
func TestAssignedHandoffRequestToADeadHolder(t *testing.T) {
	c := assigned(t, 4, Config{})
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	// X, started first, is the assigner; A holds leases, and (first in
	// the members' order) is the first source of a balance move
	c.start("X")
	c.run(time.Second)
	c.start("A")
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	if c.assignerOf() != "X" {
		t.Fatalf("the assigner is %q, want X", c.assignerOf())
	}
	d := c.cfg.withDefaults().LeaseDuration
	c.run(5 * time.Second)
	keys := c.held("A")
	c.worker("A").down = true
	crash := c.now
	c.run(4 * time.Second)
	c.start("B") // the assigner's balance now asks A, dead, to hand a lease to B
	c.runUntil(2*d, "A's leases reassigned", func() bool { return len(c.held("X"))+len(c.held("B")) == 4 })
	requested := 0
	for _, k := range keys {
		var request time.Duration = -1
		for _, e := range c.traceOf(TraceAssigned, "", k) {
			if e.Mono > crash && strings.HasPrefix(e.Reason, "handoff to ") && request < 0 {
				request = e.Mono
			}
		}
		first := time.Duration(-1)
		for _, id := range []string{"X", "B"} {
			if f := c.firstAct(id, k, crash); f >= 0 && (first < 0 || f < first) {
				first = f
			}
		}
		if first < 0 || first-crash > 3*d/2 {
			t.Errorf("%s: first act after the crash at %v, want within %v", k, first-crash, 3*d/2)
		}
		if request >= 0 {
			requested++
			if first-request >= d {
				t.Errorf("%s: acted on %v after the handoff request to the dead holder: the request put the expiry off", k, first-request)
			}
		}
	}
	if requested == 0 {
		for _, e := range c.trace {
			if e.Kind == TraceAssigned || e.Kind == TraceLeaseAcquired {
				t.Logf("%v %s %s %s %s", e.Mono-crash, e.Kind, e.Owner, e.Key, e.Reason)
			}
		}
		t.Fatal("no handoff request was sent to the dead holder: the test no longer tells its story")
	}
}

// A graceful shutdown releases every lease to the assigner, which hands
// them out at once: each gap far under 0.4 lease durations.
func TestAssignedShutdownHandsOverFast(t *testing.T) {
	c := start3(t)
	d := c.cfg.withDefaults().LeaseDuration
	leaving := "B"
	if c.assignerOf() == leaving {
		leaving = "C"
	}
	keys := c.held(leaving)
	c.step(c.worker(leaving), Input{Kind: InputShutdown})
	at := c.now
	c.runUntil(d, "the leaving worker's leases taken", func() bool {
		return len(c.held("A"))+len(c.held("B"))+len(c.held("C")) == 6 && c.worker(leaving).stopped
	})
	for _, k := range keys {
		rel := c.traceOf(TraceLeaseReleased, leaving, k)
		if len(rel) == 0 {
			t.Fatalf("%s not released by %s", k, leaving)
		}
		last := rel[len(rel)-1].Mono
		first := time.Duration(-1)
		for _, id := range []string{"A", "B", "C"} {
			if id != leaving {
				if f := c.firstAct(id, k, at); f >= 0 {
					first = f
				}
			}
		}
		if gap := first - last; first < 0 || gap > 2*d/5 {
			t.Errorf("%s: gap %v after a graceful shutdown, want at most %v", k, gap, 2*d/5)
		}
	}
}

// The pending index is eventually consistent: a worker that is shown a
// row that no longer waits for it (the index lags) reads it first and does
// nothing; a row shown to the wrong worker is never taken by it.
func TestAssignedStaleIndexIsConfirmed(t *testing.T) {
	c := start3(t)
	stale := map[string][]Lease{}
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if call.Op != OpListPending {
			return Result{}, false
		}
		// Every worker is shown every lease as waiting for it.
		l, _ := c.store.ListLeases(context.Background(), true)
		var rows []Lease
		for _, r := range l.Leases {
			if !IsReserved(r.Key) {
				rows = append(rows, Lease{Key: r.Key, Pending: call.Key})
			}
		}
		stale[tw.id] = rows
		return Result{Listing: Listing{Leases: rows}}, true
	}
	before := map[string][]string{}
	for _, id := range []string{"A", "B", "C"} {
		before[id] = c.held(id)
	}
	c.run(30 * time.Second)
	for _, id := range []string{"A", "B", "C"} {
		if got := c.held(id); !slices.Equal(got, before[id]) {
			t.Errorf("%s holds %v after a lying index, held %v", id, got, before[id])
		}
	}
	if len(stale) == 0 {
		t.Fatal("the index was never read")
	}
}

// Without a pending index (a table made before it existed) a worker
// configured for an assigner takes leases itself, and says so.
func TestAssignedFallsBackWithoutIndex(t *testing.T) {
	c := assigned(t, 2, Config{})
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if call.Op == OpListPending {
			return Result{Err: ErrNoIndex}, true
		}
		return Result{}, false
	}
	c.stream.put(shardKey(0), 2)
	c.stream.put(shardKey(1), 2)
	a := c.start("A")
	c.runUntil(30*time.Second, "records delivered", func() bool { return totalGot(a) == 4 })
	if len(c.traceOf(TraceModeFallback, "A", "")) != 1 {
		t.Errorf("no fallback reported")
	}
	if _, err := c.store.GetLease(context.Background(), AssignerKey); err == nil {
		if r := c.row(AssignerKey); r.Owner != "" {
			t.Errorf("a fallen-back worker holds the assigner row: %v", r)
		}
	}
}

// Scan-mode and assigned-mode workers on one table (a rolling deploy from
// one to the other): every lease is held by one of them, none twice.
func TestAssignedAndScanWorkersTogether(t *testing.T) {
	c := assigned(t, 6, Config{})
	for i := 0; i < 6; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.cfg.Assignment = AssignmentScan
	c.start("S")
	c.cfg.Assignment = AssignmentAssigner
	c.start("B")
	c.runUntil(2*time.Minute, "every lease held", func() bool {
		return len(c.held("A"))+len(c.held("S"))+len(c.held("B")) == 6
	})
	c.run(time.Minute)
	seen := map[string]string{}
	for _, id := range []string{"A", "S", "B"} {
		for _, k := range c.held(id) {
			if o, dup := seen[k]; dup {
				t.Errorf("%s held by %s and %s", k, o, id)
			}
			seen[k] = id
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d leases held after a minute, want 6", len(seen))
	}
}

// With BalanceThroughput the assigner balances the KB per second that
// holders report with their renewals: one hot shard ends up alone on one
// worker, the cold ones on the other; then nothing moves for ten minutes.
func TestAssignedBalancesByThroughput(t *testing.T) {
	c := assigned(t, 4, Config{BalanceBy: BalanceThroughput})
	hot := shardKey(0)
	feed := func() {
		for i := 0; i < 4; i++ {
			size := 10
			if shardKey(i) == hot {
				size = 20000
			}
			c.stream.seq++
			c.stream.recs[shardKey(i)] = append(c.stream.recs[shardKey(i)], Record{Sequence: fmt.Sprintf("4959%052d", c.stream.seq), Data: make([]byte, size)})
		}
	}
	c.start("A")
	c.start("B")
	placed := func() bool {
		for _, id := range []string{"A", "B"} {
			held := c.held(id)
			if slices.Contains(held, hot) && len(held) != 1 {
				return false
			}
		}
		return len(c.held("A"))+len(c.held("B")) == 4
	}
	for start := c.now; !placed(); {
		if c.now-start > 3*time.Minute {
			t.Fatalf("the hot shard does not sit alone: A %v, B %v", c.held("A"), c.held("B"))
		}
		feed()
		c.run(time.Second)
	}
	moves := len(c.traceOf(TraceHandingOver, "", ""))
	if moves == 0 {
		t.Fatal("placed without a move: the test shows nothing")
	}
	t.Logf("placed after %d moves at %v: A %v, B %v", moves, c.now, c.held("A"), c.held("B"))
	for i := 0; i < 600; i++ {
		feed()
		c.run(time.Second)
	}
	if n := len(c.traceOf(TraceHandingOver, "", "")); n != moves {
		t.Errorf("%d more moves in ten steady minutes", n-moves)
	}
	if !placed() {
		t.Errorf("the placement did not hold: A %v, B %v", c.held("A"), c.held("B"))
	}
}

// A worker whose take of the assigner row has not come back (its reply
// lost, its resolving reads lost too) may hold the row without knowing it,
// and a successor that takes the row over once it expires reassigns the
// leases written under its writer at once: the worker must act on its
// leases as if they were bound to the row, until a lease duration less the
// margin after it sent the take (swarm seed 152 with 65% of the assigner
// row's calls lost: S1, the worker kept delivering shardId-000000000008
// after the new assigner reassigned it).
func TestAssignerTakeInFlightBindsLeases(t *testing.T) {
	u := newUnit(t, Config{Assignment: AssignmentAssigner})
	key := shardKey(0)
	u.stream.add(key)
	u.stream.put(key, 2)
	u.put(Lease{Key: key, Checkpoint: startSeq(), Pending: me})
	u.hold = func(c Call) bool { return c.Op.IsWrite() && (c.Lease.Key == AssignerKey || c.Key == AssignerKey) }
	u.tick()
	u.runTo(3 * time.Second)
	take, ok := u.pending(OpCreateLease, AssignerKey)
	if !ok {
		take, ok = u.pending(OpUpdateLease, AssignerKey)
	}
	if !ok {
		t.Fatalf("no take of the assigner row in flight:\n%s", u.dump())
	}
	if !u.w.Acting(key) {
		t.Fatalf("not acting on %s:\n%s", key, u.dump())
	}
	var sent time.Duration
	for _, c := range u.sent {
		if c.c.ID == take.ID {
			sent = c.at
		}
	}
	cfg := u.w.cfg
	u.runTo(sent + cfg.LeaseDuration - cfg.SafetyMargin + time.Millisecond)
	if u.w.Acting(key) {
		t.Fatalf("still acting on %s at %v, a lease duration less the margin after the take of the assigner row (sent at %v) whose outcome it does not know",
			key, u.now, sent)
	}
}

// The assigner's graceful shutdown releases its assigner row as soon as
// its last other lease is released, not at the row's next renewal: the
// worker stops within a round trip of its last release, and a deputy
// takes the row over at once (issue 19: 0.55-2.9 s from SIGTERM to exit
// live, the others 0-20 ms).
func TestAssignerShutdownReleasesItsRowAtOnce(t *testing.T) {
	c := start3(t)
	d := c.cfg.withDefaults().LeaseDuration
	leaving := c.assignerOf()
	if leaving == "" {
		t.Fatal("no assigner")
	}
	tw := c.worker(leaving)
	c.step(tw, Input{Kind: InputShutdown})
	c.runUntil(d, "the assigner stopped", func() bool { return tw.stopped })
	var lastLease, row time.Duration = -1, -1
	for _, e := range c.traceOf(TraceLeaseReleased, leaving, "") {
		if e.Key == AssignerKey {
			row = e.Mono
		} else {
			lastLease = max(lastLease, e.Mono)
		}
	}
	if row < 0 || lastLease < 0 {
		t.Fatalf("releases: assigner row at %v, last lease at %v", row, lastLease)
	}
	if gap := row - lastLease; gap > 50*time.Millisecond {
		t.Errorf("the assigner row was released %v after the last lease, want within a round trip", gap)
	}
	var next string
	c.runUntil(d, "a new assigner", func() bool { next = c.assignerOf(); return next != "" })
	for _, e := range c.traceOf(TraceLeaseAcquired, next, AssignerKey) {
		if e.Mono >= row {
			if wait := e.Mono - row; wait > c.cfg.withDefaults().PendingPollInterval+50*time.Millisecond {
				t.Errorf("%s took the released assigner row %v after its release, want within a poll", next, wait)
			}
			return
		}
	}
	t.Errorf("%s never took the assigner row after its release", next)
}

// A leaving assigner releases its leases to the least loaded other
// members, not to the assigner: each is taken at its receiver's next poll,
// without waiting for a successor to take the assigner row over and scan,
// and the fleet is balanced at once.
func TestLeavingAssignerReleasesToMembers(t *testing.T) {
	c := start3(t)
	d := c.cfg.withDefaults()
	leaving := c.assignerOf()
	keys := c.held(leaving)
	if len(keys) == 0 {
		t.Fatal("the assigner holds no lease")
	}
	tw := c.worker(leaving)
	c.step(tw, Input{Kind: InputShutdown})
	c.runUntil(d.LeaseDuration, "every lease held by the others", func() bool {
		n := 0
		for _, id := range []string{"A", "B", "C"} {
			if id != leaving {
				n += len(c.held(id))
			}
		}
		return n == 6 && tw.stopped
	})
	for _, k := range keys {
		rel := c.traceOf(TraceLeaseReleased, leaving, k)
		if len(rel) == 0 {
			t.Fatalf("%s not released", k)
		}
		at := rel[len(rel)-1].Mono
		first := time.Duration(-1)
		for _, id := range []string{"A", "B", "C"} {
			if f := c.firstAct(id, k, at); id != leaving && f >= 0 {
				first = f
			}
		}
		// a poll (jittered by up to a tenth) and the harness's tick
		if poll := d.PendingPollInterval*11/10 + 200*time.Millisecond; first < 0 || first-at > poll {
			t.Errorf("%s: acted on %v after its release, want within a poll (%v)", k, first-at, poll)
		}
	}
	for _, id := range []string{"A", "B", "C"} {
		if id != leaving && len(c.held(id)) != 3 {
			t.Errorf("%s holds %d leases, want 3: %v", id, len(c.held(id)), c.counts())
		}
	}
}

// A fleet started together is balanced within 3 s of its last worker's
// start, each lease moved at most once (issue 19: one worker of three was
// left without a lease for about 10 s live, 20 s here): an assigner that
// created the assigner row knows every lease from its first scan and
// balances at once, a new member's hello brings a scan forward, and the
// assigner hands its own leases over without counting them against the
// limit of requests in flight. Started a second apart, a lease may move
// twice (the second worker's share is given before the third joins), but
// the fleet is balanced as fast.
func TestFreshFleetBalancesFast(t *testing.T) {
	for _, gap := range []time.Duration{0, 300 * time.Millisecond, time.Second, 3 * time.Second} {
		c := assigned(t, 6, Config{})
		for i := 0; i < 6; i++ {
			c.stream.put(shardKey(i), 3)
		}
		c.start("A")
		c.run(gap)
		c.start("B")
		c.run(gap)
		c.start("C")
		last := c.now
		c.runUntil(time.Minute, "balanced 2-2-2", func() bool {
			return len(c.held("A")) == 2 && len(c.held("B")) == 2 && len(c.held("C")) == 2
		})
		if took := c.now - last; took > 3*time.Second {
			t.Errorf("started %v apart: balanced %v after the last start, want within 3s", gap, took)
		}
		if gap < time.Second {
			for k, n := range c.acquisitions() {
				if k != AssignerKey && n > 2 {
					t.Errorf("started %v apart: %s acquired %d times, want at most twice (one move)", gap, k, n)
				}
			}
		}
	}
}

// acquisitions counts the acquisitions of each lease key.
func (c *cluster) acquisitions() map[string]int {
	n := map[string]int{}
	for _, e := range c.trace {
		if e.Kind == TraceLeaseAcquired {
			n[e.Key]++
		}
	}
	return n
}
