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
