package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// kb builds hand-made histories of KPL aggregates: positions are
// (sequence, sub-sequence).
type kb struct{ recs []trace.Record }

func (b *kb) add(t float64, k trace.Kind, proc int32, f func(r *trace.Record)) *kb {
	r := trace.Record{Seq: uint64(len(b.recs) + 1), T: time.Duration(t * float64(time.Second)), Kind: k, Worker: proc, Proc: proc, Key: "s0"}
	if proc >= 0 {
		r.Owner = "w" + string(rune('0'+proc))
	}
	if f != nil {
		f(&r)
	}
	b.recs = append(b.recs, r)
	return b
}

// aggregate is a put of n user records (n 1: a plain record).
func aggregate(seq string, n int) func(*trace.Record) {
	return func(r *trace.Record) { r.First, r.Count = seq, n }
}

// got is a batch of n user records first/fsub..last/lsub.
func got(first string, fsub int32, last string, lsub int32, n int) func(*trace.Record) {
	return func(r *trace.Record) {
		r.First, r.FirstSub, r.Last, r.LastSub, r.Count = first, fsub, last, lsub, n
	}
}

func at(seq string, sub int64) func(*trace.Record) {
	return func(r *trace.Record) { r.Checkpoint = engine.Checkpoint{Sequence: seq, SubSequence: sub} }
}

// applied is an applied checkpoint write of w1 at counter c.
func applied(c int64, seq string, sub int64) func(*trace.Record) {
	return func(r *trace.Record) {
		r.Op, r.Reason, r.Outcome = engine.OpUpdateLease, trace.WriteCheckpoint, trace.OutcomeOK
		r.ExpOwner, r.ExpCounter, r.RowOwner, r.Counter = "w1", c-1, "w1", c
		r.Checkpoint = engine.Checkpoint{Sequence: seq, SubSequence: sub}
	}
}

// kplShard is a shard with a plain record 10, an aggregate 20 of three
// user records and a plain record 30, read from TRIM_HORIZON by w1.
func kplShard() *kb {
	return (&kb{}).
		add(0.1, trace.KindPut, -1, aggregate("10", 0)).
		add(0.2, trace.KindPut, -1, aggregate("20", 3)).
		add(0.3, trace.KindPut, -1, aggregate("30", 0)).
		add(1, trace.KindApply, 1, func(r *trace.Record) {
			r.Op, r.Reason, r.Outcome, r.RowOwner, r.Counter = engine.OpCreateLease, trace.WriteCreate, trace.OutcomeOK, "", 1
			r.Checkpoint.Sequence = engine.TrimHorizon
		}).
		add(1.1, trace.KindApply, 1, func(r *trace.Record) {
			r.Op, r.Reason, r.Outcome, r.ExpCounter, r.RowOwner, r.Counter = engine.OpUpdateLease, trace.WriteTake, trace.OutcomeOK, 1, "w1", 2
			r.Checkpoint.Sequence = engine.TrimHorizon
		}).
		add(1.2, trace.Acting, 1, at(engine.TrimHorizon, 0)).
		add(1.3, trace.KindInitialized, 1, at(engine.TrimHorizon, 0))
}

// judge runs the checkers (batch, online, reference: compareReference
// fails the test if they disagree) and returns the violations of inv.
func judge(t *testing.T, b *kb, final engine.Checkpoint, inv string) []check.Violation {
	t.Helper()
	opts := check.Options{End: 100 * time.Second, Heal: 50 * time.Second, Bound: 10 * time.Second}
	h := check.History{Records: b.recs, FinalKnown: true, Final: []engine.Lease{{Key: "s0", Owner: "w1", Counter: 9, Checkpoint: final}}}
	compareReference(t, h, opts, true)
	var out []check.Violation
	for _, v := range check.All(h, opts).Violations {
		if v.Invariant == inv {
			out = append(out, v)
		}
	}
	return out
}

func wantViolation(t *testing.T, vs []check.Violation, inv, detail string) {
	t.Helper()
	for _, v := range vs {
		if strings.Contains(v.Detail, detail) {
			return
		}
	}
	t.Errorf("no %s violation naming %q: %v", inv, detail, vs)
}

// TestKPLCheckers: the checkers follow user records of KPL aggregates, at
// (sequence, sub-sequence), and agree with the reference on each history:
// a good one passes, and each bad one fails.
func TestKPLCheckers(t *testing.T) {
	all := func(b *kb) *kb {
		return b.add(2, trace.KindReceived, 1, got("10", 0, "20", 1, 3)).
			add(2.1, trace.KindApply, 1, applied(3, "20", 0)).
			add(3, trace.KindReceived, 1, got("20", 2, "30", 0, 2)).
			add(3.1, trace.KindApply, 1, applied(4, "30", 0))
	}
	for _, inv := range []string{check.S3, check.S4, check.S6} {
		if vs := judge(t, all(kplShard()), engine.SequenceCheckpoint("30"), inv); len(vs) > 0 {
			t.Fatalf("a good history: %v", vs)
		}
	}

	t.Run("checkpoint inside an aggregate goes back", func(t *testing.T) {
		// 20/2 written and acknowledged, then 20/1 written over it
		b := kplShard().
			add(2, trace.KindReceived, 1, got("10", 0, "20", 2, 4)).
			add(2.1, trace.KindApply, 1, applied(3, "20", 2)).
			add(2.2, trace.KindCheckpointAck, 1, func(r *trace.Record) { at("20", 2)(r); r.Outcome = trace.OutcomeOK }).
			add(2.3, trace.KindApply, 1, applied(4, "20", 1))
		wantViolation(t, judge(t, b, engine.Checkpoint{Sequence: "20", SubSequence: 1}, check.S3), check.S3, "")
		// the same checkpoints in order are fine
		ok := kplShard().
			add(2, trace.KindReceived, 1, got("10", 0, "20", 2, 4)).
			add(2.1, trace.KindApply, 1, applied(3, "20", 1)).
			add(2.2, trace.KindApply, 1, applied(4, "20", 2))
		if vs := judge(t, ok, engine.Checkpoint{Sequence: "20", SubSequence: 2}, check.S3); len(vs) > 0 {
			t.Errorf("checkpoints 20/1 then 20/2: %v", vs)
		}
	})

	t.Run("a user record of an aggregate never delivered", func(t *testing.T) {
		// a resume at 20/0 that reads after 20: 20/1 and 20/2 are lost
		b := kplShard().
			add(2, trace.KindReceived, 1, got("10", 0, "20", 0, 2)).
			add(2.1, trace.KindApply, 1, applied(3, "20", 0)).
			add(3, trace.KindInitialized, 2, at("20", 0)).
			add(3.1, trace.KindReceived, 2, got("30", 0, "30", 0, 1))
		vs := judge(t, b, engine.SequenceCheckpoint("30"), check.S4)
		wantViolation(t, vs, check.S4, "never got 20/1")
		wantViolation(t, vs, check.S4, "2 records within retention never delivered, the first 20/1")
		// a batch that leaves a user record out of its middle
		hole := kplShard().add(2, trace.KindReceived, 1, got("10", 0, "30", 0, 4))
		wantViolation(t, judge(t, hole, engine.SequenceCheckpoint("30"), check.S4), check.S4, "a batch of 4 records spans 5")
		// a final checkpoint inside the aggregate does not cover its rest
		short := kplShard().add(2, trace.KindReceived, 1, got("10", 0, "30", 0, 5))
		wantViolation(t, judge(t, short, engine.Checkpoint{Sequence: "20", SubSequence: 1}, check.S4), check.S4, "does not cover the delivered record 30")
	})

	t.Run("order broken inside an aggregate", func(t *testing.T) {
		// 20/1 again after 20/2 was delivered, without a failure
		b := kplShard().
			add(2, trace.KindReceived, 1, got("10", 0, "20", 2, 4)).
			add(3, trace.KindReceived, 1, got("20", 1, "30", 0, 3))
		wantViolation(t, judge(t, b, engine.SequenceCheckpoint("30"), check.S6), check.S6, "batch 20/1..30 after 20/2 was already delivered")
		// a batch whose last user record is before its first
		back := kplShard().add(2, trace.KindReceived, 1, got("20", 2, "20", 1, 2))
		wantViolation(t, judge(t, back, engine.SequenceCheckpoint("30"), check.S6), check.S6, "is not in sequence order")
		// after a failed batch, delivering it again from its first user
		// record is in order
		retry := kplShard().
			add(2, trace.KindReceived, 1, got("10", 0, "20", 0, 2)).
			add(2.5, trace.KindReceived, 1, got("20", 1, "20", 2, 2)).
			add(2.6, trace.KindDone, 1, func(r *trace.Record) {
				r.Reason, r.First, r.FirstSub, r.Last, r.LastSub = "failed", "20", 1, "20", 2
			}).
			add(3, trace.KindReceived, 1, got("20", 1, "30", 0, 3))
		if vs := judge(t, retry, engine.SequenceCheckpoint("30"), check.S6); len(vs) > 0 {
			t.Errorf("a failed batch delivered again: %v", vs)
		}
		// but not from a user record before it
		early := kplShard().
			add(2, trace.KindReceived, 1, got("10", 0, "20", 0, 2)).
			add(2.5, trace.KindReceived, 1, got("20", 1, "20", 2, 2)).
			add(2.6, trace.KindDone, 1, func(r *trace.Record) {
				r.Reason, r.First, r.FirstSub, r.Last, r.LastSub = "failed", "20", 1, "20", 2
			}).
			add(3, trace.KindReceived, 1, got("20", 0, "30", 0, 4))
		wantViolation(t, judge(t, early, engine.SequenceCheckpoint("30"), check.S6), check.S6, "after 20/2 was already delivered")
	})
}

// TestKPLWorld: a drawn KPL world puts aggregates, delivers their user
// records with sub-sequence numbers, checkpoints inside aggregates, and
// breaks no invariant; its history is judged alike by the checkers and
// the reference.
func TestKPLWorld(t *testing.T) {
	var seed uint64
	for s := uint64(1); s < 50; s++ {
		if w, err := drawWorld(Options{Seed: s}); err == nil && w.KPL.Share > 0 && w.Shards <= 8 {
			seed = s
			break
		}
	}
	if seed == 0 {
		t.Fatal("no KPL world among seeds 1-49")
	}
	res, err := Run(Options{Seed: seed, KeepTrace: true, LinBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Violations) > 0 {
		t.Fatalf("seed %d: %v", seed, res.Violations)
	}
	var aggs, subs, mid int
	for i := range res.Trace {
		r := &res.Trace[i]
		switch {
		case r.Kind == trace.KindPut && r.Count > 1:
			aggs++
		case r.Kind == trace.KindReceived && (r.FirstSub > 0 || r.LastSub > 0):
			subs++
		case r.Kind == trace.KindApply && r.Outcome == trace.OutcomeOK && r.Reason == trace.WriteCheckpoint && r.Checkpoint.SubSequence > 0:
			mid++
		}
	}
	t.Logf("seed %d (%s): %d aggregates put, %d batches with sub-sequence numbers, %d checkpoints past an aggregate's first user record", seed, res.World.KPL, aggs, subs, mid)
	if aggs == 0 || subs == 0 || mid == 0 {
		t.Fatalf("seed %d: %d aggregates, %d batches with sub-sequence numbers, %d checkpoints inside aggregates: want each", seed, aggs, subs, mid)
	}
	w := res.World
	opts := check.Options{End: w.Chaos + w.Quiet, Heal: w.Chaos, Bound: w.Bound, Balance: w.Balance, BalanceSlack: 1}
	compareReference(t, check.History{Records: res.Trace, Final: res.Final, FinalKnown: true}, opts, true)
}

// TestKPLPin: Options.KPL "on" gives a world that is not a swarm's the
// KPL workload a swarm draws for the seed when it draws one, "off" takes
// it from a swarm world, and anything else is refused.
func TestKPLPin(t *testing.T) {
	drawn := 0
	for seed := uint64(1); seed <= 30; seed++ {
		sw, err := drawWorld(Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		on, err := drawWorld(Options{Seed: seed, Faults: "crash", KPL: "on"})
		if err != nil {
			t.Fatal(err)
		}
		if on.KPL.Share == 0 {
			t.Fatalf("seed %d: -kpl on drew no KPL workload", seed)
		}
		if sw.KPL.Share != 0 {
			drawn++
			if sw.KPL != on.KPL {
				t.Errorf("seed %d: pinned %+v, the swarm's %+v", seed, on.KPL, sw.KPL)
			}
		}
		off, err := drawWorld(Options{Seed: seed, KPL: "off"})
		if err != nil {
			t.Fatal(err)
		}
		if off.KPL.Share != 0 {
			t.Errorf("seed %d: -kpl off drew %+v", seed, off.KPL)
		}
	}
	if drawn == 0 {
		t.Error("no swarm world of seeds 1-30 drew KPL aggregates")
	}
	if _, err := drawWorld(Options{Seed: 1, KPL: "maybe"}); err == nil {
		t.Error("KPL maybe was accepted")
	}
}
