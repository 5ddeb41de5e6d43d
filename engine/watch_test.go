package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// pushHub keeps the workers' pending watches over the cluster's MemStore:
// a watch starts at once when a worker asks for it (Ready.Watch), and every
// create or update that applies with a Pending is reported to the workers
// that watch that value, by their next tick.
type pushHub struct {
	rev int64
	// startAfter, if set, holds back the start of who's watches until the
	// cluster's time reaches it.
	startAfter func(who string) time.Duration
	now        func() time.Duration
	watching   map[*tWorker]map[string]bool
	// drop, if set, loses the change (and the watch: reported Lost) of
	// key for who instead of reporting it.
	drop func(who, key string) bool
	// changes counts the changes reported per worker.
	changes map[string]int
}

func newPushHub() *pushHub {
	return &pushHub{watching: map[*tWorker]map[string]bool{}, changes: map[string]int{}}
}

func (h *pushHub) keep(tw *tWorker, want []string) {
	cur := h.watching[tw]
	if cur == nil {
		cur = map[string]bool{}
		h.watching[tw] = cur
	}
	for who := range cur {
		if !slices.Contains(want, who) {
			delete(cur, who)
		}
	}
	for _, who := range want {
		if h.startAfter != nil && h.now() < h.startAfter(who) {
			continue
		}
		if !cur[who] {
			cur[who] = true
			tw.inbox = append(tw.inbox, Input{Kind: InputWatch, Watch: WatchInput{Who: who, Started: true}})
		}
	}
}

func (h *pushHub) applied(c *cluster, call Call, r Result) {
	if r.Err != nil || (call.Op != OpCreateLease && call.Op != OpUpdateLease) || call.Lease.Pending == "" {
		return
	}
	h.rev++
	who, key := call.Lease.Pending, call.Lease.Key
	for _, tw := range c.workers {
		if tw.down || tw.stopped || !h.watching[tw][who] {
			continue
		}
		if h.drop != nil && h.drop(who, key) {
			delete(h.watching[tw], who) // started again when the worker asks
			tw.inbox = append(tw.inbox, Input{Kind: InputWatch, Watch: WatchInput{Who: who, Lost: ErrWatchLost}})
			continue
		}
		h.changes[tw.id]++
		tw.inbox = append(tw.inbox, Input{Kind: InputWatch, Watch: WatchInput{Who: who, Changes: []PendingChange{{Key: key, Revision: h.rev}}}})
	}
}

// pushed returns a cluster of assigned-mode workers whose store pushes
// what waits for them (Config.WatchPending).
func pushed(t *testing.T, shards int) *cluster {
	c := assigned(t, shards, Config{WatchPending: true})
	c.push = newPushHub()
	return c
}

// countCalls counts, from now on, the calls of op each worker makes.
func (c *cluster) countCalls(op Op) map[string]int {
	n := map[string]int{}
	prev := c.intercept
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if call.Op == op {
			n[tw.id]++
		}
		if prev != nil {
			return prev(tw, call)
		}
		return Result{}, false
	}
	return n
}

// With pushed assignments a steady fleet reads no pending index at all,
// and a balance move's gap is the watch's delivery (here: within the
// tick) plus the take, not a poll interval.
func TestPushedAssignmentsNeedNoPolls(t *testing.T) {
	c := pushed(t, 4)
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	a := c.start("A")
	x := c.start("X")
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	polls := c.countCalls(OpListPending)
	c.run(30 * time.Second)
	if polls["A"]+polls["X"] != 0 {
		t.Errorf("a steady fleet with pushed assignments read the pending index %v times in 30 s, want none", polls)
	}
	b := c.start("B")
	joined := c.now
	c.runUntil(time.Minute, "B gets a share", func() bool { return len(c.held("B")) >= 1 })
	c.run(30 * time.Second)
	if polls["B"] > 2 || polls["A"]+polls["X"] != 0 {
		t.Errorf("reads of the pending index after B joined: %v; want at most 2 by B (its first, and the one its watch owes when it starts), none by the others", polls)
	}
	for _, k := range c.held("B") {
		rel := c.traceOf(TraceLeaseReleased, "", k)
		if len(rel) == 0 || rel[len(rel)-1].Mono < joined {
			t.Fatalf("%s reached B without a release: %v", k, rel)
		}
		if gap := c.firstAct("B", k, joined) - rel[len(rel)-1].Mono; gap > 100*time.Millisecond {
			t.Errorf("%s: moved to B with a gap of %v, want it within the tick the release applied in", k, gap)
		}
	}
	if c.push.changes["B"] == 0 {
		t.Fatal("nothing was pushed to B")
	}
	if n := totalGot(a) + totalGot(x) + totalGot(b); n < 12 {
		t.Errorf("%d of 12 records delivered", n)
	}
}

// A watch that is lost (a compaction) leaves the worker polling the index
// until a watch starts again: an assignment whose change the lost watch
// never reported is still taken, by the read the new watch owes.
func TestPushedLostWatchFallsBackToTheIndex(t *testing.T) {
	c := pushed(t, 4)
	lost := ""
	c.push.drop = func(who, key string) bool {
		if who == "B" && lost == "" {
			lost = key
			return true
		}
		return false
	}
	for _, id := range []string{"A", "X"} {
		c.start(id)
	}
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	c.start("B")
	c.runUntil(time.Minute, "B gets a share", func() bool { return len(c.held("B")) >= 1 })
	if lost == "" {
		t.Fatal("no change to B was lost: the test no longer tells its story")
	}
	if !slices.Contains(c.held("B"), lost) {
		// it may have been reassigned elsewhere meanwhile; what matters is
		// that it was not left waiting
		if l := c.row(lost); l.Pending == "B" && l.Owner == "" {
			t.Fatalf("%s still waits for B after its watch was lost: %v", lost, l)
		}
	}
}

// A watch that starts (again) owes one read of the index: what was
// assigned before it started, and missed by the polls before (here: an
// index that lags until then), is taken by that read, not left until the
// assigner gives up on it.
func TestPushedWatchStartReadsTheIndexOnce(t *testing.T) {
	c := pushed(t, 4)
	for _, id := range []string{"A", "X"} {
		c.start(id)
	}
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	// B's watch is held back, and its reads of the index show nothing
	// until the watch has started
	held := true
	c.push.now = func() time.Duration { return c.now }
	c.push.startAfter = func(who string) time.Duration {
		if who == "B" && held {
			return 1 << 62
		}
		return 0
	}
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id == "B" && call.Op == OpListPending && (held || !c.push.watching[tw]["B"]) {
			return Result{}, true // until its watch has started
		}
		return Result{}, false
	}
	c.start("B")
	waiting := func() bool {
		l, _ := c.store.ListPending(context.Background(), "B")
		return len(l) > 0
	}
	c.runUntil(time.Minute, "a lease waits for B", waiting)
	held = false
	at := c.now
	d := c.cfg.withDefaults().LeaseDuration
	c.runUntil(d/4, "B takes what waits for it", func() bool { return len(c.held("B")) >= 1 })
	t.Logf("taken %v after the watch could start", c.now-at)
}

// A change reported while the worker reads that row (its read was sent
// before the change) is read again once that read has answered: no change
// is left unread, as no poll would show it later.
func TestPushedChangeDuringReadIsReadAgain(t *testing.T) {
	c := pushed(t, 4)
	for _, id := range []string{"A", "X"} {
		c.start(id)
	}
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	var reads []string
	injected := false
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id != "B" || call.Op != OpGetLease || IsReserved(call.Key) {
			return Result{}, false
		}
		reads = append(reads, call.Key)
		if !injected {
			injected = true
			// a change of the row arrives before this read's answer
			tw.inbox = append(tw.inbox, Input{Kind: InputWatch, Watch: WatchInput{Who: "B", Changes: []PendingChange{{Key: call.Key, Revision: 1 << 40}}}})
		}
		l, err := c.store.GetLease(context.Background(), call.Key)
		return Result{Lease: l, Err: err}, true
	}
	c.start("B")
	c.runUntil(time.Minute, "B gets a share", func() bool { return len(c.held("B")) >= 1 })
	if !injected || len(reads) < 2 || reads[0] != reads[1] {
		t.Fatalf("B read %v: a change reported during its read of the row was not read again", reads)
	}
}

// Consumer watches when its store pushes (PendingWatcher), and refuses
// Config.WatchPending with a store that cannot.
func TestConsumerWatchesPendingStores(t *testing.T) {
	base := ConsumerOptions{Config: Config{Owner: "w", Streams: []StreamConfig{{Name: "s"}}}, Stream: newTStream(1),
		Processor: func(ShardRef) Processor { return nil }}
	o := base
	o.Store = &watchingMemStore{MemStore: NewMemStore()}
	c, err := NewConsumer(o)
	if err != nil {
		t.Fatal(err)
	}
	if !c.worker.Config().WatchPending {
		t.Error("a PendingWatcher store did not turn WatchPending on")
	}
	o = base
	o.Config.WatchPending = true
	if _, err := NewConsumer(o); err == nil {
		t.Error("WatchPending with a store that cannot push was accepted")
	}
	o = base
	o.Store = &watchingMemStore{MemStore: NewMemStore()}
	o.Config.Assignment = AssignmentScan
	if c, err := NewConsumer(o); err != nil || c.worker.Config().WatchPending {
		t.Errorf("scan mode with a PendingWatcher store: WatchPending %v, %v; want off", c != nil && c.worker.Config().WatchPending, err)
	}
}

// watchingMemStore is a MemStore that claims to push (its watches never
// report anything).
type watchingMemStore struct{ *MemStore }

func (s *watchingMemStore) WatchPending(ctx context.Context, who string) (PendingWatch, error) {
	return nil, errors.New("not in this test")
}

// A worker that takes a lease assigned to it and releases it for its
// shutdown before any assigner scan has shown its take is leaving: the
// assigner, told of the release at once by the watch, must not hand the
// lease back to it (it learns the release's writer from its own
// assignment), and another worker takes it within the tick.
func TestPushedReleaseBeforeAScanIsNotAssignedBack(t *testing.T) {
	c := pushed(t, 4)
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.start("X")
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	b := c.start("B")
	c.runUntil(time.Minute, "B takes a share", func() bool { return len(c.held("B")) >= 1 })
	keys := c.held("B")
	c.step(b, Input{Kind: InputShutdown})
	at := c.now
	d := c.cfg.withDefaults().LeaseDuration
	c.runUntil(d, "B's leases taken by A or X", func() bool { return len(c.held("A"))+len(c.held("X")) == 4 && b.stopped })
	for _, k := range keys {
		for _, e := range c.traceOf(TraceAssigned, "", k) {
			if e.Mono >= at && strings.HasPrefix(e.Reason, "to B:") {
				t.Errorf("%s assigned back to B, which released it for its shutdown, at %v: %s", k, e.Mono-at, e.Reason)
			}
		}
		rel := c.traceOf(TraceLeaseReleased, "B", k)
		if len(rel) == 0 {
			t.Fatalf("%s not released by B", k)
		}
		first := max(c.firstAct("A", k, at), c.firstAct("X", k, at))
		if gap := first - rel[len(rel)-1].Mono; gap > 100*time.Millisecond {
			t.Errorf("%s: taken %v after B released it, want within the tick", k, gap)
		}
	}
}

// A row the watch reported is read again later when its read comes back
// while the assigner is not acting (its renewal slow, past the safety
// margin, but not lost): a hello so read and dropped would otherwise
// never be read again, since no write changes the row (the worker's own
// hellos fail their condition while the row stands), and the worker would
// stay out of the member list for good (etcd swarm world 501 of h-faults).
func TestPushedReadWhileLapsingIsReadAgain(t *testing.T) {
	c := pushed(t, 4)
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.start("X")
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	asg := c.assignerOf()
	hello := HelloPrefix + "B"
	// hold the assigner's renewals of its row and its read of B's hello
	c.hold = func(tw *tWorker, call Call) bool {
		return tw.id == asg && ((call.Op == OpUpdateLease && call.Key == AssignerKey) || (call.Op == OpGetLease && call.Key == hello))
	}
	c.start("B")
	c.runUntil(time.Second, "the assigner reads B's hello", func() bool {
		return slices.ContainsFunc(c.heldReplies, func(h heldReply) bool { return h.call.Key == hello })
	})
	cfg := c.cfg.withDefaults()
	c.run(cfg.LeaseDuration - cfg.SafetyMargin) // past its margin: not acting as the assigner
	if c.worker(asg).w.isAssigner() {
		t.Fatalf("%s still acts as the assigner with its renewals held for %v", asg, cfg.LeaseDuration-cfg.SafetyMargin)
	}
	c.releaseHeld(func(call Call) bool { return call.Key == hello })
	c.run(100 * time.Millisecond)
	c.hold = nil
	c.releaseHeld(func(Call) bool { return true }) // the renewal applied: it acts again
	c.runUntil(2*cfg.LeaseDuration, "the assigner acting again", func() bool { return c.worker(asg).w.isAssigner() })
	c.runUntil(3*cfg.LeaseDuration, "B gets a share", func() bool { return len(c.held("B")) >= 1 })
}

// A take of a row assigned to this worker that did not apply (an error of
// unknown outcome, then a read that found it not applied) leaves the row
// waiting for it, and the watch reports nothing more: the worker reads it
// again a poll interval later and takes it, not once the assigner gives up
// on the assignment a lease duration on (swarm seed 598 in an etcd world).
func TestPushedTakeNotAppliedIsTriedAgain(t *testing.T) {
	c := pushed(t, 4)
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.runUntil(time.Minute, "A holds all", func() bool { return len(c.held("A")) == 4 })
	failed := ""
	var failedAt time.Duration
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id == "X" && failed == "" && call.Op == OpUpdateLease && call.Lease.Owner == "X" && !IsReserved(call.Key) {
			failed, failedAt = call.Key, c.now
			return Result{Err: errors.New("connection reset (not applied)")}, true
		}
		return Result{}, false
	}
	c.start("X")
	cfg := c.cfg.withDefaults()
	c.runUntil(time.Minute, "X's first take fails", func() bool { return failed != "" })
	c.runUntil(cfg.LeaseDuration, "X takes the lease its failed take was for", func() bool { return slices.Contains(c.held("X"), failed) })
	if took := c.now - failedAt; took > cfg.PendingPollInterval*11/10+500*time.Millisecond {
		t.Errorf("X took %s %v after its take failed, want within a poll interval (%v)", failed, took, cfg.PendingPollInterval)
	}
}

// A row the index shows while a write of it is in flight is read once
// that write has ended, with the watch up: nothing else would show it
// again (soak seed 28644 of d8f57de, L1: the read the assigner's watch
// owed at its start skipped a worker's new hello while the delete of its
// last one was in flight; the hello stood for good, every later one
// failed its create, and the worker was never a member again).
func TestPushedRowBusyAtTheOwedReadIsReadAgain(t *testing.T) {
	c := pushed(t, 4)
	c.start("A")
	c.start("X")
	c.runUntil(time.Minute, "A and X hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("X")) == 2 })
	asg := c.assignerOf()
	tw := c.worker(asg)
	hello := HelloPrefix + "B"
	// the assigner's delete of B's hello applies; its reply is held
	c.hold = func(h *tWorker, call Call) bool {
		return h == tw && call.Op == OpDeleteLease && call.Key == hello
	}
	c.start("B")
	c.runUntil(time.Second, "the assigner deletes B's hello", func() bool {
		return slices.ContainsFunc(c.heldReplies, func(h heldReply) bool { return h.call.Key == hello })
	})
	// B says hello again (a new process under its id) while the delete's
	// reply is on its way, and the assigner's watch is lost just then:
	// the write is missed, and the read the restarted watch owes shows it
	row := Lease{Key: hello, Counter: 1, Checkpoint: SentinelCheckpoint(ShardEnd), Pending: AssignerPending, Writer: "b-again"}
	if err := c.store.CreateLease(context.Background(), row); err != nil {
		t.Fatal(err)
	}
	delete(c.push.watching[tw], AssignerPending)
	tw.inbox = append(tw.inbox, Input{Kind: InputWatch, Watch: WatchInput{Who: AssignerPending, Lost: ErrWatchLost}})
	reads := c.countCalls(OpListPending)
	c.runUntil(time.Second, "the assigner's owed read of the index", func() bool { return reads[asg] > 0 && !tw.w.asg.as.pollInFlight })
	c.run(100 * time.Millisecond)
	c.hold = nil
	released := c.now
	c.releaseHeld(func(Call) bool { return true })
	cfg := c.cfg.withDefaults()
	c.runUntil(cfg.LeaseDuration, "B's new hello read and deleted", func() bool {
		_, err := c.store.GetLease(context.Background(), hello)
		return errors.Is(err, ErrNotFound)
	})
	t.Logf("the new hello deleted %v after the delete in flight ended", c.now-released)
}
