package check

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// hb builds hand-made histories.
type hb struct{ recs []trace.Record }

func (b *hb) add(t float64, k trace.Kind, proc int32, key string, f func(r *trace.Record)) *hb {
	r := trace.Record{Seq: uint64(len(b.recs) + 1), T: time.Duration(t * float64(time.Second)), Kind: k, Worker: proc, Proc: proc, Key: key}
	if proc >= 0 {
		r.Owner = "w" + itoa(int(proc))
	}
	if f != nil {
		f(&r)
	}
	b.recs = append(b.recs, r)
	return b
}

func cp(s string) func(r *trace.Record) {
	return func(r *trace.Record) { r.Checkpoint = engine.Checkpoint{Sequence: s} }
}

func batch(first, last string, n int) func(r *trace.Record) {
	return func(r *trace.Record) { r.First, r.Last, r.Count = first, last, n }
}

func seq(s string) func(r *trace.Record) { return func(r *trace.Record) { r.First = s } }

// write is an applied store write.
func write(op engine.Op, reason string, expOwner string, expCounter int64, rowOwner string, counter int64, checkpoint string) func(r *trace.Record) {
	return func(r *trace.Record) {
		r.Op, r.Reason, r.Outcome = op, reason, trace.OutcomeOK
		r.ExpOwner, r.ExpCounter, r.RowOwner, r.Counter = expOwner, expCounter, rowOwner, counter
		r.Checkpoint = engine.Checkpoint{Sequence: checkpoint}
	}
}

func expect(t *testing.T, vs []Violation, inv string, n int) {
	t.Helper()
	got := 0
	for _, v := range vs {
		if v.Invariant == inv {
			got++
		}
	}
	if (n == 0) != (got == 0) {
		var lines []string
		for _, v := range vs {
			lines = append(lines, v.String())
		}
		t.Fatalf("%s: want %d violations, got %d:\n%s", inv, n, got, strings.Join(lines, "\n"))
	}
}

func TestS1(t *testing.T) {
	ok := (&hb{}).
		add(1, trace.Acting, 1, "s0", cp("TRIM_HORIZON")).
		add(2, trace.KindReceived, 1, "s0", batch("10", "12", 3)).
		add(3, trace.KindSend, 1, "s0", func(r *trace.Record) { r.Reason = trace.WriteCheckpoint }).
		add(4, trace.LeaseLost, 1, "s0", nil).
		add(5, trace.Acting, 2, "s0", nil).
		add(6, trace.KindReceived, 2, "s0", batch("13", "13", 1)).
		add(6, trace.KindReceived, 1, "s1", batch("20", "20", 1))
	expect(t, checkS1T(t, ok.recs, Options{}), S1, 0)

	// process 1 keeps delivering after process 2 started: overlap
	bad := (&hb{}).
		add(1, trace.Acting, 1, "s0", nil).
		add(2, trace.Acting, 2, "s0", nil).
		add(3, trace.KindReceived, 1, "s0", batch("10", "12", 3))
	vs := checkS1T(t, bad.recs, Options{})
	expect(t, vs, S1, 1)
	if vs[0].From != 2*time.Second || vs[0].To != 3*time.Second {
		t.Errorf("window %v..%v", vs[0].From, vs[0].To)
	}
	// a checkpoint write sent after the lease moved is an act too
	bad2 := (&hb{}).
		add(1, trace.Acting, 1, "s0", nil).
		add(2, trace.Acting, 2, "s0", nil).
		add(3, trace.KindSend, 1, "s0", func(r *trace.Record) { r.Reason = trace.WriteCheckpoint })
	expect(t, checkS1T(t, bad2.recs, Options{}), S1, 1)
	// a crash ends the tenure
	ok2 := (&hb{}).
		add(1, trace.Acting, 1, "s0", nil).
		add(2, trace.KindProcStop, 1, "", nil).
		add(3, trace.Acting, 2, "s0", nil)
	expect(t, checkS1T(t, ok2.recs, Options{}), S1, 0)
}

func TestS2(t *testing.T) {
	ok := (&hb{}).
		add(1, trace.KindApply, 1, "s0", write(engine.OpCreateLease, trace.WriteCreate, "", 0, "", 1, "TRIM_HORIZON")).
		add(2, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteTake, "", 1, "w1", 2, "TRIM_HORIZON")).
		add(3, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 2, "w1", 3, "5")).
		add(4, trace.KindApply, 2, "s0", write(engine.OpUpdateLease, trace.WriteTake, "w1", 3, "w2", 4, "5")).
		add(5, trace.KindApply, 2, "s0", write(engine.OpUpdateLease, trace.WriteRenew, "w2", 4, "w2", 5, "5"))
	expect(t, checkS2T(t, ok.recs, Options{}), S2, 0)
	// an unconditional checkpoint of the old owner lands after the take
	bad := (&hb{recs: append([]trace.Record(nil), ok.recs...)}).
		add(6, trace.KindApply, 1, "s0", func(r *trace.Record) {
			write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 3, "w1", 6, "7")(r)
			r.Unconditional = true
		})
	vs := checkS2T(t, bad.recs, Options{})
	expect(t, vs, S2, 1)
	if !strings.Contains(vs[0].Detail, "held by w2") {
		t.Errorf("detail: %s", vs[0].Detail)
	}
	// a take over a version the taker had not seen
	bad2 := (&hb{recs: append([]trace.Record(nil), ok.recs[:3]...)}).
		add(4, trace.KindApply, 2, "s0", write(engine.OpUpdateLease, trace.WriteTake, "w1", 2, "w2", 3, "5"))
	expect(t, checkS2T(t, bad2.recs, Options{}), S2, 1)
	// a delete of a finished, unowned row by anyone is fine
	ok3 := (&hb{recs: append([]trace.Record(nil), ok.recs...)}).
		add(6, trace.KindApply, 2, "s0", write(engine.OpUpdateLease, trace.WriteShardEnd, "w2", 5, "", 6, "SHARD_END")).
		add(7, trace.KindApply, 1, "s0", write(engine.OpDeleteLease, trace.WriteDelete, "", 6, "", 0, ""))
	expect(t, checkS2T(t, ok3.recs, Options{}), S2, 0)
	// a renew of a row the writer released lands: not fenced
	bad3 := (&hb{recs: append([]trace.Record(nil), ok3.recs[:6]...)}).
		add(7, trace.KindApply, 2, "s0", write(engine.OpUpdateLease, trace.WriteRenew, "", 6, "", 7, "SHARD_END"))
	expect(t, checkS2T(t, bad3.recs, Options{}), S2, 1)
	// failed writes do not count
	ok2 := (&hb{recs: append([]trace.Record(nil), ok.recs...)}).
		add(6, trace.KindApply, 1, "s0", func(r *trace.Record) {
			write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 3, "w1", 4, "7")(r)
			r.Outcome = trace.OutcomeCondition
		})
	expect(t, checkS2T(t, ok2.recs, Options{}), S2, 0)
}

func TestS3(t *testing.T) {
	base := func() *hb {
		return (&hb{}).
			add(1, trace.KindApply, 1, "s0", write(engine.OpCreateLease, trace.WriteCreate, "", 0, "", 1, "TRIM_HORIZON")).
			add(2, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteTake, "", 1, "w1", 2, "TRIM_HORIZON")).
			add(3, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 2, "w1", 3, "20")).
			add(3.1, trace.KindCheckpointAck, 1, "s0", func(r *trace.Record) { r.Outcome = trace.OutcomeOK; r.Checkpoint.Sequence = "20" })
	}
	ok := base().
		add(4, trace.KindApply, 2, "s0", write(engine.OpUpdateLease, trace.WriteTake, "w1", 3, "w2", 4, "20")).
		add(5, trace.Acting, 2, "s0", cp("20"))
	expect(t, checkS3T(t, History{Records: ok.recs, FinalKnown: true, Final: []engine.Lease{{Key: "s0", Owner: "w2", Counter: 4, Checkpoint: engine.SequenceCheckpoint("20")}}}, Options{}), S3, 0)

	regress := base().add(4, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 3, "w1", 4, "9"))
	expect(t, checkS3T(t, History{Records: regress.recs}, Options{}), S3, 1)

	// re-created after SHARD_END and delete, at TRIM_HORIZON
	recreate := base().
		add(4, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 3, "w1", 4, "SHARD_END")).
		add(5, trace.KindApply, 1, "s0", write(engine.OpDeleteLease, trace.WriteDelete, "w1", 4, "", 0, "")).
		add(6, trace.KindApply, 2, "s0", write(engine.OpCreateLease, trace.WriteCreate, "", 0, "", 1, "TRIM_HORIZON"))
	expect(t, checkS3T(t, History{Records: recreate.recs}, Options{}), S3, 1)

	// acknowledged but never stored
	ack := (&hb{}).
		add(1, trace.KindApply, 1, "s0", write(engine.OpCreateLease, trace.WriteCreate, "", 0, "w1", 1, "TRIM_HORIZON")).
		add(2, trace.KindCheckpointAck, 1, "s0", func(r *trace.Record) { r.Outcome = trace.OutcomeOK; r.Checkpoint.Sequence = "20" })
	expect(t, checkS3T(t, History{Records: ack.recs}, Options{}), S3, 1)

	// new owner starts before the stored checkpoint
	early := base().
		add(4, trace.KindApply, 2, "s0", write(engine.OpUpdateLease, trace.WriteTake, "w1", 3, "w2", 4, "20")).
		add(5, trace.Acting, 2, "s0", cp("TRIM_HORIZON"))
	expect(t, checkS3T(t, History{Records: early.recs}, Options{}), S3, 1)

	// the final table is behind
	expect(t, checkS3T(t, History{Records: ok.recs, FinalKnown: true, Final: []engine.Lease{{Key: "s0", Owner: "w2", Counter: 4, Checkpoint: engine.SequenceCheckpoint("10")}}}, Options{}), S3, 1)
}

func puts(b *hb, key string, t float64, seqs ...string) *hb {
	for _, s := range seqs {
		b.add(t, trace.KindPut, -1, key, seq(s))
	}
	return b
}

func TestS4(t *testing.T) {
	o := Options{End: 100 * time.Second, Heal: 50 * time.Second, Bound: 10 * time.Second}
	final := []engine.Lease{{Key: "s0", Owner: "w1", Checkpoint: engine.SequenceCheckpoint("13")}}
	mk := func() *hb {
		b := puts(&hb{}, "s0", 1, "10", "11", "12", "13")
		return b.add(2, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON"))
	}
	ok := mk().
		add(3, trace.KindReceived, 1, "s0", batch("10", "11", 2)).
		add(4, trace.KindReceived, 1, "s0", batch("12", "13", 2))
	vs, _ := checkS4T(t, History{Records: ok.recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 0)

	// a record never delivered
	never := mk().add(3, trace.KindReceived, 1, "s0", batch("10", "11", 2))
	vs, _ = checkS4T(t, History{Records: never.recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 1)

	// skipped at handoff: the new owner starts at 11 but gets 13 first
	skip := mk().
		add(3, trace.KindReceived, 1, "s0", batch("10", "12", 3)).
		add(4, trace.KindInitialized, 2, "s0", cp("11")).
		add(5, trace.KindReceived, 2, "s0", batch("13", "13", 1))
	vs, _ = checkS4T(t, History{Records: skip.recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 1)

	// a failed answer to a batch of an earlier tenure does not rewind
	late := mk().
		add(3, trace.KindReceived, 1, "s0", batch("10", "10", 1)).
		add(4, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
		add(5, trace.KindReceived, 1, "s0", batch("10", "12", 3)).
		add(6, trace.KindDone, 1, "s0", func(r *trace.Record) { r.Reason = "failed"; r.First, r.Last = "10", "10" }).
		add(7, trace.KindReceived, 1, "s0", batch("13", "13", 1))
	vs, _ = checkS4T(t, History{Records: late.recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 0)

	// a failed batch passed over by the failure policy: reading goes on
	// after it; without the skip event the same history skips records
	failed := func(skipped bool) *hb {
		b := mk().
			add(3, trace.KindReceived, 1, "s0", batch("10", "11", 2)).
			add(4, trace.KindDone, 1, "s0", func(r *trace.Record) { r.Reason = "failed"; r.First, r.Last = "10", "11" })
		if skipped {
			b.add(4, trace.BatchSkipped, 1, "s0", func(r *trace.Record) { r.First, r.Last, r.Count, r.Reason = "10", "11", 3, "skipped" })
		}
		return b.add(5, trace.KindReceived, 1, "s0", batch("12", "13", 2))
	}
	vs, _ = checkS4T(t, History{Records: failed(true).recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 0)
	vs, _ = checkS4T(t, History{Records: failed(false).recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 1)
	// a skip of another batch than the last one received does not count
	other := mk().
		add(3, trace.KindReceived, 1, "s0", batch("10", "11", 2)).
		add(4, trace.KindDone, 1, "s0", func(r *trace.Record) { r.Reason = "failed"; r.First, r.Last = "10", "11" }).
		add(4, trace.BatchSkipped, 1, "s0", func(r *trace.Record) { r.First, r.Last, r.Count = "10", "10", 3 }).
		add(5, trace.KindReceived, 1, "s0", batch("12", "13", 2))
	vs, _ = checkS4T(t, History{Records: other.recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 1)

	// a batch that leaves a record out
	hole := mk().add(3, trace.KindReceived, 1, "s0", batch("10", "13", 3))
	vs, _ = checkS4T(t, History{Records: hole.recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 1)

	// final checkpoint behind the delivered records
	vs, _ = checkS4T(t, History{Records: ok.recs, Final: []engine.Lease{{Key: "s0", Checkpoint: engine.SequenceCheckpoint("11")}}, FinalKnown: true}, o)
	expect(t, vs, S4, 1)

	// records trimmed before delivery are counted, not flagged
	trimmed := puts(&hb{}, "s0", 1, "10", "11", "12", "13").
		add(2, trace.KindTrim, -1, "s0", batch("10", "11", 2)).
		add(3, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
		add(4, trace.KindReceived, 1, "s0", batch("12", "13", 2))
	vs, lost := checkS4T(t, History{Records: trimmed.recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 0)
	if lost != 2 {
		t.Errorf("lost = %d, want 2", lost)
	}
}

func TestS5(t *testing.T) {
	base := func() *hb {
		return (&hb{}).
			add(0, trace.KindShardCreated, -1, "s0", nil).
			add(1, trace.KindShardClosed, -1, "s0", func(r *trace.Record) { r.Last = "20" }).
			add(1, trace.KindShardCreated, -1, "s1", func(r *trace.Record) { r.Parent = "s0" }).
			add(1, trace.KindShardCreated, -1, "s2", func(r *trace.Record) { r.Parent = "s0" })
	}
	ok := base().
		add(2, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 3, "w1", 4, "SHARD_END")).
		add(3, trace.KindReceived, 2, "s1", batch("30", "30", 1))
	expect(t, checkS5T(t, ok.recs, Options{}), S5, 0)
	bad := base().
		add(2, trace.KindReceived, 2, "s1", batch("30", "30", 1)).
		add(3, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 3, "w1", 4, "SHARD_END"))
	expect(t, checkS5T(t, bad.recs, Options{}), S5, 1)
	// merge: both parents must end
	merge := (&hb{}).
		add(1, trace.KindShardCreated, -1, "s3", func(r *trace.Record) { r.Parent, r.Parent2 = "s1", "s2" }).
		add(2, trace.KindApply, 1, "s1", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 3, "w1", 4, "SHARD_END")).
		add(3, trace.KindReceived, 2, "s3", batch("30", "30", 1))
	expect(t, checkS5T(t, merge.recs, Options{}), S5, 1)
}

func TestS6(t *testing.T) {
	ok := (&hb{}).
		add(1, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
		add(2, trace.KindReceived, 1, "s0", batch("10", "11", 2)).
		add(3, trace.KindDone, 1, "s0", func(r *trace.Record) { r.Reason = "failed"; r.First, r.Last = "10", "11" }).
		add(4, trace.KindReceived, 1, "s0", batch("10", "11", 2)).
		add(5, trace.KindReceived, 1, "s0", batch("12", "12", 1)).
		add(6, trace.KindInitialized, 2, "s0", cp("10")).
		add(7, trace.KindReceived, 2, "s0", batch("11", "12", 2))
	expect(t, checkS6T(t, ok.recs, Options{}), S6, 0)
	bad := (&hb{}).
		add(1, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
		add(2, trace.KindReceived, 1, "s0", batch("10", "11", 2)).
		add(3, trace.KindReceived, 1, "s0", batch("11", "12", 2))
	expect(t, checkS6T(t, bad.recs, Options{}), S6, 1)
	unsorted := (&hb{}).add(2, trace.KindReceived, 1, "s0", func(r *trace.Record) {
		batch("10", "12", 3)(r)
		r.Reason = "unsorted"
	})
	expect(t, checkS6T(t, unsorted.recs, Options{}), S6, 1)
}

func TestL1(t *testing.T) {
	o := Options{End: 100 * time.Second, Heal: 40 * time.Second, Bound: 10 * time.Second, Balance: true, BalanceSlack: 1}
	base := func() *hb {
		return (&hb{}).
			add(0, trace.KindProcStart, 1, "", nil).
			add(0, trace.KindProcStart, 2, "", nil).
			add(0, trace.KindShardCreated, -1, "s0", nil).
			add(0, trace.KindShardCreated, -1, "s1", nil)
	}
	ok := base().
		add(1, trace.Acting, 1, "s0", nil).
		add(1, trace.Acting, 2, "s1", nil).
		add(60, trace.KindPut, -1, "s0", seq("10")).
		add(61, trace.KindReceived, 1, "s0", batch("10", "10", 1))
	final := []engine.Lease{{Key: "s0", Owner: "w1"}, {Key: "s1", Owner: "w2"}}
	expect(t, checkL1T(t, History{Records: ok.recs, Final: final, FinalKnown: true}, o), L1, 0)

	// s1 has no owner at the end
	orphan := base().add(1, trace.Acting, 1, "s0", nil).add(1, trace.Acting, 2, "s1", nil).add(30, trace.LeaseLost, 2, "s1", nil)
	expect(t, checkL1T(t, History{Records: orphan.recs}, o), L1, 1)

	// a record put after healing is delivered too late
	slow := base().
		add(1, trace.Acting, 1, "s0", nil).
		add(1, trace.Acting, 2, "s1", nil).
		add(60, trace.KindPut, -1, "s0", seq("10")).
		add(75, trace.KindReceived, 1, "s0", batch("10", "10", 1))
	expect(t, checkL1T(t, History{Records: slow.recs}, o), L1, 1)

	// unbalanced: w1 holds 4 leases, w2 none
	unb := []engine.Lease{{Key: "a", Owner: "w1"}, {Key: "b", Owner: "w1"}, {Key: "c", Owner: "w1"}, {Key: "d", Owner: "w1"}}
	expect(t, checkL1T(t, History{Records: ok.recs, Final: unb, FinalKnown: true}, o), L1, 2)
}

func TestMeasure(t *testing.T) {
	b := puts(&hb{}, "s0", 0, "10", "11", "12", "13").
		add(0, trace.KindShardCreated, -1, "s0", nil).
		add(1, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
		add(1, trace.KindReceived, 1, "s0", batch("10", "12", 3)).
		add(2, trace.KindProcStop, 1, "", nil).
		add(7, trace.KindInitialized, 2, "s0", cp("10")).
		add(7, trace.KindReceived, 2, "s0", batch("11", "13", 3)).
		add(8, trace.KindReply, 2, "", func(r *trace.Record) { r.Op, r.Outcome = engine.OpUpdateLease, trace.OutcomeOK }).
		add(9, trace.KindReply, 2, "", func(r *trace.Record) { r.Op, r.Outcome, r.Count = engine.OpListLeases, trace.OutcomeOK, 5 }).
		add(9, trace.KindReply, 1, "", func(r *trace.Record) { r.Op, r.Outcome, r.Count = engine.OpListLeases, trace.OutcomeThrottled, 0 }).
		add(10, trace.KindReply, 2, "s0", func(r *trace.Record) { r.Op, r.Outcome = engine.OpGetLease, trace.OutcomeOK })
	f := measureT(t, b.recs, 3600*time.Second)
	if f.Handoffs != 1 || f.Redelivered != 2 || len(f.Failovers) != 1 || f.Failovers[0] != 6*time.Second || f.StoreCalls != 4 {
		t.Fatalf("figures %+v", f)
	}
	// a scan reads every row it returns; a GetLease one row; a write none
	if f.RowsRead != 6 {
		t.Fatalf("rows read %d, want 5 (a scan) + 1 (a GetLease)", f.RowsRead)
	}
}

func TestExcerpt(t *testing.T) {
	b := (&hb{}).
		add(1, trace.Acting, 1, "s0", nil).
		add(2, trace.Acting, 2, "s0", nil).
		add(3, trace.KindReceived, 1, "s0", batch("10", "12", 3)).
		add(3, trace.KindReceived, 1, "s9", batch("10", "12", 3))
	vs := checkS1T(t, b.recs, Options{})
	ex := Excerpt(b.recs, vs[0], time.Second, 10)
	if len(ex) != 3 || !strings.HasPrefix(ex[1], "> ") {
		t.Fatalf("excerpt %q", ex)
	}
}

// TestStaleFailedAnswer: a processor's late "failed" answer to a batch of
// an earlier tenure of the same process, with the same records as the
// batch of the current tenure, is not a failure of the current batch:
// reading goes on, and nothing is skipped (found by the soak, swarm seed
// 48678 before the batch numbers were recorded). Without batch numbers
// (a recorded history) the records alone must stand for the batch.
func TestStaleFailedAnswer(t *testing.T) {
	o := Options{End: 100 * time.Second}
	final := []engine.Lease{{Key: "s0", Owner: "w1", Checkpoint: engine.SequenceCheckpoint("12")}}
	num := func(n uint64) func(r *trace.Record) { return func(r *trace.Record) { r.Call = n } }
	both := func(fs ...func(r *trace.Record)) func(r *trace.Record) {
		return func(r *trace.Record) {
			for _, f := range fs {
				f(r)
			}
		}
	}
	failed := func(r *trace.Record) { r.Reason = "failed"; r.First, r.Last = "10", "10" }
	ok := func(r *trace.Record) { r.Reason = "ok"; r.First, r.Last = "10", "10" }
	mk := func(batches bool) *hb {
		n := func(i uint64) func(r *trace.Record) {
			if !batches {
				i = 0
			}
			return num(i)
		}
		b := puts(&hb{}, "s0", 1, "10", "11", "12")
		return b.add(2, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
			add(3, trace.KindReceived, 1, "s0", both(batch("10", "10", 1), n(5))). // its answer comes late
			add(4, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
			add(5, trace.KindReceived, 1, "s0", both(batch("10", "10", 1), n(9))).
			add(6, trace.KindDone, 1, "s0", both(ok, n(9))).
			add(7, trace.KindDone, 1, "s0", both(failed, n(5))). // stale
			add(8, trace.KindReceived, 1, "s0", both(batch("11", "12", 2), n(10)))
	}
	vs, _ := checkS4T(t, History{Records: mk(true).recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 0)
	expect(t, checkS6T(t, mk(true).recs, o), S6, 0)
	// without batch numbers the late answer looks like the current one's
	vs, _ = checkS4T(t, History{Records: mk(false).recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 1)
	// and a failed answer to the current batch still asks for it again
	again := mk(true)
	again.recs = again.recs[:len(again.recs)-1]
	again.add(7.5, trace.KindDone, 1, "s0", both(failed, num(9))).add(8, trace.KindReceived, 1, "s0", both(batch("11", "12", 2), num(10)))
	vs, _ = checkS4T(t, History{Records: again.recs, Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 1)
}
