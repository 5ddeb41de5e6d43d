package check

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

func feedOnline(o Options, recs []trace.Record) *Online {
	o.Forget = true
	c := NewOnline(o)
	for i := range recs {
		c.Observe(&recs[i])
	}
	return c
}

// TestOnlineS1ZombieOverEndedTenures: a process that acts again after two
// later tenures of others have come and gone overlaps both; Forget must
// keep the ended tenures while the earlier one is open.
func TestOnlineS1ZombieOverEndedTenures(t *testing.T) {
	b := (&hb{}).
		add(1, trace.Acting, 1, "s0", nil).
		add(5, trace.Acting, 2, "s0", nil).
		add(6, trace.LeaseLost, 2, "s0", nil).
		add(8, trace.Acting, 3, "s0", nil).
		add(9, trace.LeaseReleased, 3, "s0", nil).
		add(20, trace.Acting, 4, "s1", nil). // time goes on elsewhere
		add(30, trace.KindReceived, 1, "s0", batch("10", "10", 1))
	rep, _ := feedOnline(Options{}, b.recs).Finish(nil, false)
	expect(t, rep.Violations, S1, 2)
	if len(rep.Violations) != 2 || !strings.Contains(rep.Violations[0].Detail, "w1#1 acted 1s..30s") {
		t.Errorf("violations: %v", rep.Violations)
	}
	// without the zombie act, the ended tenures are forgotten: nothing
	ok := (&hb{recs: append([]trace.Record(nil), b.recs[:6]...)}).add(30, trace.LeaseLost, 1, "s0", nil)
	c := feedOnline(Options{}, ok.recs)
	if rep, _ := c.Finish(nil, false); len(rep.Violations) != 0 {
		t.Errorf("violations: %v", rep.Violations)
	}
	if n := len(c.keys.lookup("s0").kt.kept); n != 0 {
		t.Errorf("%d tenures of s0 kept after every one ended", n)
	}
}

// s4Forgotten is a shard whose records 10-12 were received and covered
// by an applied checkpoint (so forgotten), and 13-15 put after.
func s4Forgotten() *hb {
	b := puts(&hb{}, "s0", 1, "10", "11", "12", "13", "14", "15")
	return b.add(2, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
		add(3, trace.KindReceived, 1, "s0", batch("10", "12", 3)).
		add(4, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 1, "w1", 2, "12"))
}

// TestOnlineS4BelowTheForgottenRecords: batches and positions at or below
// records already received and covered are checked on what is kept.
func TestOnlineS4BelowTheForgottenRecords(t *testing.T) {
	o := Options{End: 100 * time.Second}
	c := feedOnline(o, s4Forgotten().recs)
	if p := c.keys.lookup("s0").sp; p.base != 3 || len(p.kept()) != 3 {
		t.Fatalf("forgotten %d, kept %d; want 3 and 3", p.base, len(p.kept()))
	}
	// a re-read from 11 whose batch of 3 cannot hold 11 and the 3 kept
	// records 13-15
	bad := s4Forgotten().
		add(5, trace.KindInitialized, 2, "s0", cp("10")).
		add(6, trace.KindReceived, 2, "s0", batch("11", "15", 3))
	rep, _ := feedOnline(o, bad.recs).Finish(nil, false)
	expect(t, rep.Violations, S4, 1)
	if !strings.Contains(rep.Violations[0].Detail, "spans at least 4 records") {
		t.Errorf("violation: %v", rep.Violations[0])
	}
	// a record among the kept ones that is owed to no processor (a corrupt
	// aggregate the engine drops): the re-read holds 11 and 13 and 15
	notOwed := func(n int) []trace.Record {
		return s4Forgotten().
			add(4.5, trace.KindTrim, -1, "s0", func(r *trace.Record) {
				r.First, r.Last, r.Count, r.Reason = "14", "14", 1, trace.NotOwedPrefix+"a corrupt KPL aggregate, which the engine drops"
			}).
			add(5, trace.KindInitialized, 2, "s0", cp("10")).
			add(6, trace.KindReceived, 2, "s0", batch("11", "15", n)).recs
	}
	rep, _ = feedOnline(o, notOwed(3)).Finish(nil, false)
	expect(t, rep.Violations, S4, 0)
	rep, _ = feedOnline(o, notOwed(2)).Finish(nil, false)
	expect(t, rep.Violations, S4, 1)
	// the new owner starts at the checkpoint and skips 13
	skip := s4Forgotten().
		add(5, trace.KindInitialized, 2, "s0", cp("12")).
		add(6, trace.KindReceived, 2, "s0", batch("14", "15", 2))
	rep, _ = feedOnline(o, skip.recs).Finish(nil, false)
	expect(t, rep.Violations, S4, 1)
	if !strings.Contains(rep.Violations[0].Detail, "never got 13") {
		t.Errorf("violation: %v", rep.Violations[0])
	}
	// and reading on from 13 is fine
	ok := s4Forgotten().
		add(5, trace.KindInitialized, 2, "s0", cp("12")).
		add(6, trace.KindReceived, 2, "s0", batch("13", "15", 3))
	rep, _ = feedOnline(o, ok.recs).Finish(nil, false)
	expect(t, rep.Violations, S4, 0)
}

// TestOnlineS4EndOfRunAfterForgetting: the end-of-run checks still see the
// last record that had to be delivered when it was forgotten.
func TestOnlineS4EndOfRunAfterForgetting(t *testing.T) {
	o := Options{End: 100 * time.Second, Heal: 50 * time.Second, Bound: 10 * time.Second}
	b := puts(&hb{}, "s0", 1, "10", "11").
		add(2, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
		add(3, trace.KindReceived, 1, "s0", batch("10", "11", 2)).
		add(4, trace.KindApply, 1, "s0", write(engine.OpUpdateLease, trace.WriteCheckpoint, "w1", 1, "w1", 2, "11"))
	c := feedOnline(o, b.recs)
	if n := len(c.keys.lookup("s0").sp.kept()); n != 0 {
		t.Fatalf("%d records kept after all were covered", n)
	}
	// the final table lost the checkpoint: record 11 is not covered
	rep, _ := c.Finish([]engine.Lease{{Key: "s0", Checkpoint: engine.SequenceCheckpoint("10")}}, true)
	expect(t, rep.Violations, S4, 1)
	for _, v := range rep.Violations {
		if v.Invariant == S4 && !strings.Contains(v.Detail, "does not cover the delivered record 11") {
			t.Errorf("violation: %v", v)
		}
	}
}

// TestOnlineL1TrimmedInTheWindow: a record put after healing that
// retention trimmed before anyone received it was never delivered, though
// the log forgot it at the trim.
func TestOnlineL1TrimmedInTheWindow(t *testing.T) {
	o := Options{End: 100 * time.Second, Heal: 40 * time.Second, Bound: 10 * time.Second}
	b := (&hb{}).
		add(0, trace.KindProcStart, 1, "", nil).
		add(0, trace.KindShardCreated, -1, "s0", nil).
		add(1, trace.Acting, 1, "s0", nil).
		add(60, trace.KindPut, -1, "s0", seq("10")).
		add(65, trace.KindTrim, -1, "s0", batch("10", "10", 1))
	c := feedOnline(o, b.recs)
	if n := len(c.keys.lookup("s0").sp.kept()); n != 0 {
		t.Fatalf("%d records kept after the trim", n)
	}
	rep, _ := c.Finish(nil, false)
	expect(t, rep.Violations, L1, 1)
	if !strings.Contains(rep.Violations[0].Detail, "was never delivered") {
		t.Errorf("violation: %v", rep.Violations[0])
	}
}

// TestOnlineForgetsAsTheHistoryGrows: over a long history of one shard
// read, checkpointed and handed between processes, an Online with Forget
// keeps a bounded number of records, tenures and process states.
func TestOnlineForgetsAsTheHistoryGrows(t *testing.T) {
	o := Options{End: 24 * time.Hour, Forget: true}
	c := NewOnline(o)
	var recNo uint64
	feed := func(at time.Duration, k trace.Kind, proc int32, f func(r *trace.Record)) {
		recNo++
		r := trace.Record{Seq: recNo, T: at, Kind: k, Worker: proc, Proc: proc, Key: "s0", Owner: "w" + itoa(int(proc))}
		if f != nil {
			f(&r)
		}
		c.Observe(&r)
	}
	n := 0
	at := time.Duration(0)
	for proc := int32(1); proc <= 200; proc++ {
		feed(at, trace.KindProcStart, proc, nil)
		feed(at, trace.KindInitialized, proc, cp("TRIM_HORIZON"))
		for i := 0; i < 500; i++ {
			at += 10 * time.Millisecond
			n++
			s := itoa(1000000 + n)
			feed(at, trace.KindPut, -1, seq(s))
			feed(at+time.Millisecond, trace.KindReceived, proc, batch(s, s, 1))
			if i%10 == 9 {
				feed(at+2*time.Millisecond, trace.KindApply, proc, write(engine.OpUpdateLease, trace.WriteCheckpoint, "", 0, "w", 0, s))
			}
		}
		feed(at+3*time.Millisecond, trace.KindProcStop, proc, nil)
	}
	if k := len(c.keys.lookup("s0").sp.kept()); k > 10 {
		t.Errorf("%d records kept of %d", k, n)
	}
	if cap(c.keys.lookup("s0").sp.puts) > 1000 {
		t.Errorf("the record log grew to %d entries", cap(c.keys.lookup("s0").sp.puts))
	}
	if k := len(c.keys.lookup("s0").kt.kept); k > 1 {
		t.Errorf("%d tenures kept", k)
	}
	if s4, s6, g1, open := procState(c); s4 != 0 || s6 != 0 || g1 != 0 || open != 0 || len(c.ten.byProc) != 0 {
		t.Errorf("state of stopped processes kept: S4 %d, S6 %d, G1 %d, open tenures %d", s4, s6, g1, open)
	}
	rep, f := c.Finish(nil, false)
	for _, v := range rep.Violations {
		if v.Invariant != S2 && v.Invariant != S3 { // the checkpoint writes are not a real lease's
			t.Errorf("violation: %v", v)
		}
	}
	if f.Handoffs != 199 {
		t.Errorf("handoffs %d, want 199", f.Handoffs)
	}
}

// TestOnlineMeasureFailoverOfAnOpenTenure: a failover is measured when the
// old owner's tenure ends, even if the new owner started before that (and
// at the end for one still open).
func TestOnlineMeasureFailoverOfAnOpenTenure(t *testing.T) {
	b := puts(&hb{}, "s0", 0, "10", "11", "12").
		add(1, trace.KindReceived, 1, "s0", batch("10", "11", 2)).
		add(5, trace.KindReceived, 2, "s0", batch("10", "12", 3)).
		add(6, trace.KindProcStop, 1, "", nil)
	_, f := feedOnline(Options{End: time.Hour}, b.recs).Finish(nil, false)
	if f.Handoffs != 1 || len(f.Failovers) != 1 || f.Failovers[0] != 4*time.Second || f.Redelivered != 2 {
		t.Errorf("figures %+v; want 1 handoff, a 4s failover, 2 re-deliveries", f)
	}
}

// procState counts the per-process states an Online keeps: S4's and S6's
// readers, G1's checkpoints and the open tenures.
func procState(c *Online) (s4, s6, g1, open int) {
	for _, ks := range c.keys.all {
		for _, sl := range ks.procs {
			if sl.s4 != nil {
				s4++
			}
			if sl.s6 != nil {
				s6++
			}
			if sl.g1 != nil {
				g1++
			}
			if sl.ten != nil {
				open++
			}
		}
	}
	return s4, s6, g1, open
}
