package driversim

import (
	"context"
	"errors"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// errProcessor is what a failing processor returns.
var errProcessor = errors.New("driversim: the processor failed (injected)")

// processor is the record processor of one lease of one node: it records
// what it is told (KindInitialized, KindReceived, KindDone, KindNotice,
// KindCheckpointAck) when it is told it, in true time, then behaves as the
// seed says: it takes its time, blocks until its lease has moved, fails,
// panics, and checkpoints what it processed at a drawn pace, after every
// batch once the faults have stopped, and at a graceful shutdown. The
// engine calls it from one goroutine, one call at a time, so its own
// fields need no lock.
type processor struct {
	n     *node
	shard engine.ShardRef
	key   string

	last    engine.Checkpoint // the last record processed
	hasLast bool
	asked   engine.Checkpoint // the last checkpoint acknowledged
	lastCP  time.Time
	// patient processors checkpoint with a context that is never
	// cancelled: they wait for the outcome even once the consumer has
	// stopped (and its processors' context is cancelled)
	patient bool
	// rng draws the processor's behaviour: a stream of its own, named by
	// the node, the shard and how many processors the node made for it
	// before, so that processors running concurrently draw the same
	// whatever order they run in
	rng rng
}

func (n *node) processor(shard engine.ShardRef) engine.Processor {
	n.w.mu.Lock()
	defer n.w.mu.Unlock()
	k := callKey{key: "processor/" + shard.Stream + "/" + shard.Shard}
	n.keyCalls[k]++
	r := newRNG(n.seed^splitmix(uint64(n.keyCalls[k])), hashString(k.key))
	return &processor{n: n, shard: shard, lastCP: time.Now(), patient: r.chance(0.5), rng: r}
}

// begin records r unless the node is dead, and reports whether it is
// alive; the behaviour draws are made under the same lock by draw.
func (p *processor) begin(r trace.Record, draw func(rng)) bool {
	w := p.n.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.n.dead {
		return false
	}
	p.n.emit(&r)
	if draw != nil {
		draw(p.rng)
	}
	return true
}

func (p *processor) record(r trace.Record) {
	w := p.n.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if !p.n.dead {
		p.n.emit(&r)
	}
}

// behaviour is what a processor does with one call.
type behaviour struct {
	hold       *hold
	slow       time.Duration
	fail, boom bool
	checkpoint bool
}

// draw draws a behaviour; the caller holds w.mu.
func (p *processor) draw(r rng, records bool) behaviour {
	w := p.n.w
	var b behaviour
	if records {
		if h := p.n.holdNext; h != nil && h.key == p.key && !w.healed {
			p.n.holdNext = nil
			p.n.holds = append(p.n.holds, h)
			b.hold = h
			w.stats.Holds++
			w.fault(p.n.slot.idx, p.key, "hold the processor of "+p.key+" on "+p.n.owner+" until the lease moves or "+h.dur.String())
		}
		b.checkpoint = w.healed || time.Since(p.lastCP) >= w.w.CheckpointPace || r.chance(0.05)
	}
	if w.healed {
		return b
	}
	rt := w.w.Rates
	if r.chance(rt.ProcSlow) {
		b.slow = r.logUniform(time.Millisecond, 2*w.w.Engine.LeaseDuration)
		w.stats.SlowBatches++
	}
	switch {
	case r.chance(rt.ProcPanic):
		b.boom = true
		w.stats.Panics++
	case r.chance(rt.ProcFail):
		b.fail = true
		w.stats.FailedBatches++
	}
	return b
}

// work carries out the waiting part of a behaviour.
func (p *processor) work(b behaviour) {
	if h := b.hold; h != nil {
		t := time.NewTimer(h.dur)
		select {
		case <-h.release:
		case <-t.C:
		}
		t.Stop()
		p.n.w.mu.Lock()
		h.open()
		p.n.w.mu.Unlock()
	}
	if b.slow > 0 {
		p.n.sleep(b.slow)
	}
	p.n.w.mu.Lock()
	stall := time.Until(p.n.stallUntil)
	p.n.w.mu.Unlock()
	if stall > 0 {
		time.Sleep(stall)
	}
	p.n.waitThawed()
}

func (p *processor) Initialize(ctx context.Context, in engine.InitInput) error {
	p.key = in.Key
	if !in.Start.IsSentinel() {
		p.last, p.hasLast, p.asked = in.Start, true, in.Start
	}
	var b behaviour
	if !p.begin(trace.Record{Kind: trace.KindInitialized, Key: in.Key, Checkpoint: in.Start}, func(r rng) { b = p.draw(r, false) }) {
		return errCrashed
	}
	p.work(b)
	if b.boom {
		panic("driversim: Initialize panics (injected)")
	}
	if b.fail {
		return errProcessor
	}
	return nil
}

func (p *processor) ProcessRecords(ctx context.Context, in engine.RecordsInput) error {
	first, last := in.Records[0], in.Records[len(in.Records)-1]
	r := trace.Record{Kind: trace.KindReceived, Key: p.key, First: first.Sequence, Last: last.Sequence, Count: len(in.Records)}
	for i := 1; i < len(in.Records); i++ {
		a, b := in.Records[i-1], in.Records[i] // ordered by the checkers' comparator, not the engine's
		if check.ParseSubSeq(a.Sequence, a.SubSequence).Compare(check.ParseSubSeq(b.Sequence, b.SubSequence)) >= 0 {
			r.Reason = "unsorted"
		}
	}
	var b behaviour
	if !p.begin(r, func(r rng) { b = p.draw(r, true) }) {
		return errCrashed
	}
	p.work(b)
	if b.fail || b.boom {
		p.record(trace.Record{Kind: trace.KindDone, Key: p.key, Reason: "failed", First: first.Sequence, Last: last.Sequence, Count: len(in.Records)})
		if b.boom {
			panic("driversim: ProcessRecords panics (injected)")
		}
		return errProcessor
	}
	p.last, p.hasLast = engine.Checkpoint{Sequence: last.Sequence, SubSequence: last.SubSequence}, true
	if b.checkpoint {
		p.checkpoint(ctx, in.Checkpointer)
	}
	p.record(trace.Record{Kind: trace.KindDone, Key: p.key, Reason: "ok", First: first.Sequence, Last: last.Sequence, Count: len(in.Records)})
	return nil
}

// checkpoint asks for a checkpoint at the last record processed, if it is
// not the last one acknowledged, and records the outcome.
func (p *processor) checkpoint(ctx context.Context, cp engine.Checkpointer) {
	if !p.hasLast || p.last == p.asked {
		return
	}
	p.n.waitThawed()
	want := p.last
	if p.patient {
		ctx = context.WithoutCancel(ctx)
	}
	err := cp.Checkpoint(ctx, want)
	out := trace.OutcomeOK
	switch {
	case err == nil:
		p.asked, p.lastCP = want, time.Now()
	case errors.Is(err, engine.ErrLeaseLost):
		out = "lease-lost"
	case errors.Is(err, engine.ErrCheckpointRejected):
		out = "rejected"
	default:
		out = outcome(err)
	}
	r := trace.Record{Kind: trace.KindCheckpointAck, Key: p.key, Checkpoint: want, Outcome: out}
	if err != nil {
		r.Reason = err.Error()
	}
	p.record(r)
}

func (p *processor) ShardEnded(ctx context.Context, in engine.ShardEndedInput) error {
	if !p.begin(trace.Record{Kind: trace.KindNotice, Key: p.key, Reason: engine.NoticeShardEnded.String()}, nil) {
		return errCrashed
	}
	p.n.waitThawed()
	p.answered("ok")
	return nil
}

func (p *processor) ShutdownRequested(ctx context.Context, in engine.ShutdownInput) error {
	var b behaviour
	if !p.begin(trace.Record{Kind: trace.KindNotice, Key: p.key, Reason: engine.NoticeShutdownRequested.String()}, func(r rng) { b = p.draw(r, false) }) {
		return errCrashed
	}
	p.work(b)
	if b.boom {
		p.answered("failed")
		panic("driversim: ShutdownRequested panics (injected)")
	}
	p.checkpoint(ctx, in.Checkpointer)
	p.answered("ok")
	return nil
}

// answered records the processor's answer to a notice (KindDone with no
// records, as the simulator records it): how it returned, "ok" or
// "failed" (a panic).
func (p *processor) answered(how string) {
	p.record(trace.Record{Kind: trace.KindDone, Key: p.key, Reason: how})
}

func (p *processor) LeaseLost(ctx context.Context, in engine.LeaseLostInput) {
	p.record(trace.Record{Kind: trace.KindNotice, Key: p.key, Reason: engine.NoticeLeaseLost.String()})
}

// failurePolicy returns the world's failure policy, or nil. Its decision
// is a function of the seed and the batch (not of the order of goroutines).
func (w *world) failurePolicy() *engine.FailurePolicy {
	if w.w.FailurePolicy <= 0 {
		return nil
	}
	return &engine.FailurePolicy{MaxAttempts: w.w.FailurePolicy, Decide: func(_ context.Context, b engine.FailedBatch) engine.FailureDecision {
		h := splitmix(w.o.Seed ^ hashString(b.Key+"/"+b.Records[0].Sequence) ^ uint64(b.Attempts))
		w.mu.Lock()
		w.stats.PolicyDecisions++
		w.mu.Unlock()
		switch h % 4 {
		case 0:
			return engine.SkipBatch
		case 1:
			return engine.HandedOff
		case 2:
			panic("driversim: the failure policy panics (injected)")
		}
		return engine.RetryBatch
	}}
}
