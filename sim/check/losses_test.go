package check

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// TestL2: a lease given up because "the row changed under" a write whose
// own attempt had applied, with nothing written after it, breaks L2 (an
// SDK retry read as a lost lease); one given up after another writer's
// write does not.
func TestL2(t *testing.T) {
	mk := func(other bool) []trace.Record {
		b := &hb{}
		b.add(1, trace.KindSend, 0, "k", func(r *trace.Record) { r.Reason, r.Call, r.Op = trace.WriteRenew, 7, engine.OpUpdateLease }).
			add(1.01, trace.KindApply, 0, "k", func(r *trace.Record) { r.Reason, r.Call, r.Outcome = trace.WriteRenew, 7, trace.OutcomeOK })
		if other {
			b.add(1.5, trace.KindApply, 5, "k", func(r *trace.Record) { r.Reason, r.Call, r.Outcome = trace.WriteTake, 3, trace.OutcomeOK })
		}
		b.add(1.02, trace.KindApply, 0, "k", func(r *trace.Record) {
			r.Reason, r.Call, r.Outcome, r.Fault = trace.WriteRenew, 7, trace.OutcomeCondition, "sdk-retry"
		}).add(2, trace.LeaseLost, 0, "k", reason("condition failed: the row changed under renew"))
		return sortedT(b.recs)
	}
	expect(t, CheckL2(mk(false), Options{End: time.Minute}), L2, 1)
	expect(t, CheckL2(mk(true), Options{End: time.Minute}), L2, 0)
}

// TestW2: a holder's next write of a lease waits until its last one is
// answered, or resolved when its outcome was unknown.
func TestW2(t *testing.T) {
	send := func(call uint64, reason string) func(r *trace.Record) {
		return func(r *trace.Record) { r.Reason, r.Call, r.Op = reason, call, engine.OpUpdateLease }
	}
	reply := func(call uint64, outcome string) func(r *trace.Record) {
		return func(r *trace.Record) { r.Call, r.Op, r.Outcome = call, engine.OpUpdateLease, outcome }
	}
	o := Options{End: time.Minute}
	ok := (&hb{}).
		add(1, trace.KindSend, 0, "k", send(1, trace.WriteRenew)).
		add(1.1, trace.KindReply, 0, "k", reply(1, trace.OutcomeOK)).
		add(2, trace.KindSend, 0, "k", send(2, trace.WriteCheckpoint)).
		add(3, trace.KindReply, 0, "k", reply(2, trace.OutcomeTimeout)).
		add(3.2, trace.Resolved, 0, "k", reason("checkpoint applied")).
		add(4, trace.KindSend, 0, "k", send(3, trace.WriteRenew)).
		add(4, trace.KindSend, 0, "j", send(4, trace.WriteRenew)) // another lease: its own slot
	expect(t, CheckW2(ok.recs, o), W2, 0)
	// a renewal while the checkpoint's outcome is unknown
	bad := (&hb{}).
		add(2, trace.KindSend, 0, "k", send(2, trace.WriteCheckpoint)).
		add(3, trace.KindReply, 0, "k", reply(2, trace.OutcomeTimeout)).
		add(3.1, trace.KindSend, 0, "k", send(3, trace.WriteRenew))
	expect(t, CheckW2(bad.recs, o), W2, 1)
	// two in flight at once
	bad = (&hb{}).
		add(2, trace.KindSend, 0, "k", send(2, trace.WriteCheckpoint)).
		add(2.1, trace.KindSend, 0, "k", send(3, trace.WriteRenew))
	expect(t, CheckW2(bad.recs, o), W2, 1)
	// a renewal sent as the lease was lost, of unknown outcome and never
	// resolved, then the lease taken again: the take's applied write moved
	// the row past that renewal's version (swarm seed 1215); without the
	// take, a renewal is still one too many
	lost := func(retaken bool) []trace.Record {
		b := (&hb{}).
			add(2, trace.LeaseLost, 0, "k", nil).
			add(2, trace.KindSend, 0, "k", send(2, trace.WriteRenew)).
			add(6, trace.KindReply, 0, "k", reply(2, trace.OutcomeTimeout))
		if retaken {
			b.add(20, trace.LeaseAcquired, 0, "k", reason("assigned"))
		}
		return b.add(22, trace.KindSend, 0, "k", send(3, trace.WriteRenew)).recs
	}
	expect(t, CheckW2(lost(true), o), W2, 0)
	expect(t, CheckW2(lost(false), o), W2, 1)
}
