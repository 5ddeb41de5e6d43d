package driversim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim/trace"
)

// node is one consumer incarnation (a process of the history): a real
// engine.Consumer whose store, stream, clock, processors and logger are the
// harness's. Its fields after start are guarded by the world's lock.
type node struct {
	w       *world
	id      int32
	slot    *slot
	owner   string
	started time.Time
	seed    uint64 // names the node's draws
	rng     rng
	dropRNG rng // drops of fan-out subscriptions (under w.mu)
	cons    *engine.Consumer
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run has returned

	dead        bool          // crashed: nothing it does reaches the world any more
	exited      bool          // Run returned
	frozenUntil time.Time     // a stop-the-world pause lasts until then
	thaw        chan struct{} // closed when the pause ends early (healing, crash, end)
	classes     map[classKey][]string
	cutStore    time.Time // partitions: calls fail until then
	cutStream   time.Time
	cutHang     bool              // partitioned calls hang until their deadline (else they fail at once)
	stallUntil  time.Time         // the processors' next steps wait until then (a slow shutdown)
	handoff     []time.Duration   // pending hand-off pauses: the next deliveries freeze the node for these
	holdNext    *hold             // pending: the next ProcessRecords of its key blocks
	holds       []*hold           // holds that caught a batch and are not released
	keyCalls    map[callKey]int32 // calls per (op, key), to name each call's draws
	acting      map[string]bool   // the leases it acts on, as its trace says
}

// classKey names a write the core sent: its key and the counter it writes.
type classKey struct {
	key     string
	counter int64
}

type callKey struct {
	op  engine.Op
	key string
}

// hold blocks one ProcessRecords call until the lease has moved to another
// consumer, or for a drawn time.
type hold struct {
	key      string
	dur      time.Duration
	release  chan struct{}
	released bool
}

func (h *hold) open() {
	if !h.released {
		h.released = true
		close(h.release)
	}
}

// errCrashed is what the calls of a crashed consumer end with (after
// hanging until their deadline): nothing it sends reaches the world.
var errCrashed = errors.New("driversim: the process has crashed")

// startNode starts a new consumer incarnation in sl; the caller holds
// w.mu.
func (w *world) startNode(sl *slot) *node {
	id := int32(len(w.nodes))
	n := &node{w: w, id: id, slot: sl, owner: sl.owner, started: time.Now(), seed: splitmix(w.o.Seed ^ splitmix(streamNode+uint64(id))),
		rng: newRNG(w.o.Seed, streamNode+uint64(id)), dropRNG: newRNG(w.o.Seed^0xd209, streamNode+uint64(id)),
		done: make(chan struct{}), thaw: make(chan struct{}), classes: map[classKey][]string{}, keyCalls: map[callKey]int32{},
		acting: map[string]bool{}}
	cfg := w.w.engineConfig(n.owner, n.rng.Uint64()|1)
	if w.w.FanOut.On {
		cfg.Consumer, cfg.ConsumerName = engine.FanOut, consumerName
	}
	switch cfg.Assignment = w.w.Assignment; {
	case cfg.Assignment == AssignmentMixed && n.rng.chance(0.5):
		cfg.Assignment = engine.AssignmentScan
	case cfg.Assignment == AssignmentMixed:
		cfg.Assignment = engine.AssignmentAssigner
	}
	cfg.Trace = n.trace
	if w.o.Mutation != "" {
		if err := planted.Set(&cfg, w.o.Mutation); err != nil {
			panic(fmt.Sprintf("driversim: %v", err)) // Run checked it
		}
	}
	cons, err := engine.NewConsumer(engine.ConsumerOptions{
		Config:    cfg,
		Store:     &nodeStore{n: n},
		Stream:    &nodeStream{n: n},
		Processor: n.processor,
		Clock:     nodeClock{Clock: clock.New(), n: n},
		// the production defaults otherwise (call pools, shutdown
		// timeout)
		CallTimeout:   w.w.CallTimeout,
		FailurePolicy: w.failurePolicy(),
		Logger:        slog.New(&logCounter{n: n}),
	})
	if err != nil {
		panic(fmt.Sprintf("driversim: consumer rejected: %v", err))
	}
	n.cons = cons
	w.nodes = append(w.nodes, n)
	sl.node, sl.down = n, false
	mode := "polling"
	if cfg.Consumer == engine.FanOut {
		mode = "fan-out"
	}
	r := trace.Record{Kind: trace.KindProcStart, Reason: "assignment=" + cfg.Assignment + " consumer=" + mode}
	n.rec(&r)
	w.emit(&r)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(n.done)
		n.exit(cons.Run(ctx))
	}()
	return n
}

// rec fills the process fields of a record.
func (n *node) rec(r *trace.Record) {
	r.Worker = int32(n.slot.idx)
	r.Proc = n.id
	r.Owner = n.owner
	now := time.Now()
	r.Mono = now.Sub(n.started)
	r.Wall = now.UnixNano()
}

// emit records r as this node's; the caller holds w.mu.
func (n *node) emit(r *trace.Record) {
	n.rec(r)
	n.w.emit(r)
}

// exit records that Run returned.
func (n *node) exit(err error) {
	w := n.w
	w.mu.Lock()
	defer w.mu.Unlock()
	n.exited = true
	if !n.dead {
		n.emit(&trace.Record{Kind: trace.KindProcStop, Reason: "exit"})
		if err != nil && !w.ended {
			w.runErrs = append(w.runErrs, fmt.Sprintf("%s#%d: %v", n.owner, n.id, err))
		}
	}
	if n.slot.node == n {
		n.slot.node, n.slot.down = nil, true
	}
}

// crash kills the node: from now on nothing it does reaches the world,
// and its context is cancelled so that its Run ends; the caller holds
// w.mu.
func (n *node) crash() {
	if n.dead || n.exited {
		return
	}
	n.dead = true
	n.w.stats.Crashes++
	n.emit(&trace.Record{Kind: trace.KindProcStop, Reason: "crash"})
	n.unfreeze()
	n.releaseHolds()
	if n.slot.node == n {
		n.slot.node, n.slot.down = nil, true
	}
	n.cancel()
}

// freeze pauses every goroutine of the node at its next clock read, reply
// or processor step, until d from now; the caller holds w.mu.
func (n *node) freeze(d time.Duration) {
	if until := time.Now().Add(d); until.After(n.frozenUntil) {
		n.frozenUntil = until
	}
}

// unfreeze ends a pause at once; the caller holds w.mu.
func (n *node) unfreeze() {
	n.frozenUntil = time.Time{}
	close(n.thaw)
	n.thaw = make(chan struct{})
}

// releaseHolds lets every held processor go; the caller holds w.mu.
func (n *node) releaseHolds() {
	if n.holdNext != nil {
		n.holdNext.open()
		n.holdNext = nil
	}
	for _, h := range n.holds {
		h.open()
	}
	n.holds = nil
}

// waitThawed returns once the node is not paused.
func (n *node) waitThawed() {
	for {
		n.w.mu.Lock()
		until, thaw := n.frozenUntil, n.thaw
		n.w.mu.Unlock()
		d := time.Until(until)
		if d <= 0 {
			return
		}
		select {
		case <-time.After(d):
		case <-thaw:
		}
	}
}

// sleep takes d of the node's time: longer if it is paused meanwhile.
func (n *node) sleep(d time.Duration) {
	time.Sleep(d)
	n.waitThawed()
}

// trace records the engine's trace events and fires the faults tied to
// them. It runs inside the consumer's Step.
func (n *node) trace(e engine.TraceEvent) {
	w := n.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if n.dead {
		return
	}
	if e.Kind == engine.TraceCallSent {
		k := classKey{e.Key, e.Counter}
		n.classes[k] = append(n.classes[k], e.Reason)
	}
	r := trace.Record{Kind: trace.FromEngine(e.Kind), Key: e.Key, Counter: e.Counter, Checkpoint: e.Checkpoint,
		First: e.First, Last: e.Last, Count: e.Count, Reason: e.Reason, Previous: e.Previous}
	n.rec(&r)
	r.Mono = e.Mono
	w.emit(&r)
	switch e.Kind {
	case engine.TraceActing:
		n.acting[e.Key] = true
	case engine.TraceStoppedActing, engine.TraceLeaseLost, engine.TraceLeaseReleased:
		delete(n.acting, e.Key)
	case engine.TraceDelivered:
		// a pause between the core's decision to deliver and the
		// runner's hand-off to the processor
		if len(n.handoff) > 0 && !w.healed {
			d := n.handoff[0]
			n.handoff = n.handoff[1:]
			w.stats.HandoffPauses++
			w.fault(n.slot.idx, e.Key, fmt.Sprintf("pause %s#%d for %v at the hand-off of %s..%s", n.owner, n.id, d, e.First, e.Last))
			n.freeze(d)
		}
	case engine.TraceLeaseAcquired:
		// the lease moved: processors of other consumers held on it go
		for _, o := range w.nodes {
			if o == n {
				continue
			}
			kept := o.holds[:0]
			for _, h := range o.holds {
				if h.key == e.Key {
					w.stats.HoldsReleasedByMove++
					h.open()
					continue
				}
				kept = append(kept, h)
			}
			o.holds = kept
		}
	}
}

// class returns the write class of a write of key producing counter, as
// the core named it when it sent it (TraceCallSent), or one inferred from
// the call; the caller holds w.mu.
func (n *node) class(op engine.Op, key string, expect engine.Expect, l engine.Lease) string {
	k := classKey{key, l.Counter}
	if cs := n.classes[k]; len(cs) > 0 {
		c := cs[0]
		if len(cs) == 1 {
			delete(n.classes, k)
		} else {
			n.classes[k] = cs[1:]
		}
		if c != "" {
			return c
		}
	}
	switch {
	case op == engine.OpCreateLease:
		return trace.WriteCreate
	case op == engine.OpDeleteLease:
		return trace.WriteDelete
	case l.Owner == "" && l.Checkpoint.IsShardEnd():
		return trace.WriteShardEnd
	case l.Owner == "":
		return trace.WriteRelease
	case l.Owner != expect.Owner:
		return trace.WriteTake
	}
	return trace.WriteRenew
}

// nodeClock is the consumer's clock: the real clock, which inside a
// synctest bubble reads the bubble's virtual time (time.Now, timers and
// context deadlines all follow it), except that a paused consumer's reads
// wait for the pause to end. Every goroutine of the Consumer reads it
// before it acts on a decision: the loop before each Step, the runner
// before its hand-off check, the call goroutines after each reply.
type nodeClock struct {
	clock.Clock
	n *node
}

// Now waits out a pause of the consumer, then reads the bubble's time.
func (c nodeClock) Now() time.Time {
	c.n.waitThawed()
	return time.Now()
}
