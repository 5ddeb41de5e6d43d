package livecheck

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// hb builds raw histories (as the processes write them: Proc is the pid).
type hb struct{ recs []trace.Record }

func (b *hb) add(ms float64, k trace.Kind, owner string, pid int32, key string, fs ...func(r *trace.Record)) *hb {
	r := trace.Record{T: time.Duration(ms * float64(time.Millisecond)), Kind: k, Owner: owner, Proc: pid, Worker: -1, Key: key}
	for _, f := range fs {
		f(&r)
	}
	b.recs = append(b.recs, r)
	return b
}

func cp(s string) func(r *trace.Record) {
	return func(r *trace.Record) { r.Checkpoint = engine.Checkpoint{Sequence: s} }
}
func reason(s string) func(r *trace.Record) { return func(r *trace.Record) { r.Reason = s } }
func batch(first, last string, n int) func(r *trace.Record) {
	return func(r *trace.Record) { r.First, r.Last, r.Count = first, last, n }
}
func putSeq(seq string) func(r *trace.Record) {
	return func(r *trace.Record) { r.First = seq; r.Sent = r.T - time.Millisecond }
}

// wr adds an acknowledged write (send and reply).
func (b *hb) wr(ms float64, owner string, pid int32, key string, call uint64, class, expOwner string, expCounter int64, rowOwner string, counter int64, checkpoint string) *hb {
	b.add(ms, trace.KindSend, owner, pid, key, func(r *trace.Record) {
		r.Call, r.Op, r.Reason = call, engine.OpUpdateLease, class
		r.ExpOwner, r.ExpCounter, r.RowOwner, r.Counter = expOwner, expCounter, rowOwner, counter
		r.Checkpoint = engine.Checkpoint{Sequence: checkpoint}
	})
	return b.add(ms+0.5, trace.KindReply, owner, pid, key, func(r *trace.Record) {
		r.Call, r.Op, r.Reason, r.Outcome = call, engine.OpUpdateLease, class, trace.OutcomeOK
	})
}

const workerCfg = "role=worker lease=3s renew=1s margin=300ms"

func run(t *testing.T, final []engine.Lease, files ...*hb) *Report {
	t.Helper()
	var fs []history.File
	for _, f := range files {
		fs = append(fs, history.File{Records: f.recs})
	}
	m := history.Merge(fs, history.MergeOptions{Final: final})
	rep := Check(m, Options{Final: final, FinalKnown: final != nil})
	var buf bytes.Buffer
	rep.Print(&buf)
	t.Log("\n" + buf.String())
	return rep
}

func producer(seqs ...string) *hb {
	p := &hb{}
	for i, s := range seqs {
		p.add(float64(100+i), trace.KindPut, "producer", 9, "s0", putSeq(s))
	}
	return p
}

func TestCleanRunPasses(t *testing.T) {
	a := &hb{}
	a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
	a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "TRIM_HORIZON")
	a.add(11, trace.LeaseAcquired, "w1", 100, "s0", reason("unowned"))
	a.add(12, trace.Acting, "w1", 100, "s0", cp("TRIM_HORIZON"))
	a.add(13, trace.KindInitialized, "w1", 100, "s0", cp("TRIM_HORIZON"))
	a.add(200, trace.Delivered, "w1", 100, "s0", batch("1", "3", 3))
	a.add(201, trace.KindReceived, "w1", 100, "s0", batch("1", "3", 3))
	a.wr(202, "w1", 100, "s0", 2, "checkpoint", "w1", 2, "w1", 3, "3")
	a.add(203, trace.KindCheckpointAck, "w1", 100, "s0", cp("3"), func(r *trace.Record) { r.Outcome = trace.OutcomeOK })
	a.add(204, trace.KindDone, "w1", 100, "s0", reason("ok"))
	a.wr(300, "w1", 100, "s0", 3, "release", "w1", 3, "", 4, "3")
	a.add(301, trace.LeaseReleased, "w1", 100, "s0", reason("shutdown"))
	a.add(302, trace.KindProcStop, "w1", 100, "", reason("exit"))
	rep := run(t, []engine.Lease{{Key: "s0", Counter: 4, Checkpoint: engine.SequenceCheckpoint("3")}}, a, producer("1", "2", "3"))
	if rep.Failed() || rep.Produced != 3 || rep.Delivered != 3 || rep.Lost != 0 || rep.Uncovered != 0 {
		t.Fatalf("want a clean pass: %+v", rep)
	}
}

func TestLostUncoveredAndExcused(t *testing.T) {
	a := &hb{}
	a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
	a.add(12, trace.Acting, "w1", 100, "s0", cp("LATEST"))
	a.add(13, trace.KindInitialized, "w1", 100, "s0", cp("LATEST"))
	// the first LATEST iterator is answered at 100.5 ms: the put sent at
	// 99 ms is outside the contract
	a.add(100.5, trace.KindReply, "w1", 100, "s0", func(r *trace.Record) {
		r.Op, r.Reason, r.Outcome = engine.OpGetIterator, "LATEST", trace.OutcomeOK
	})
	a.add(200, trace.KindReceived, "w1", 100, "s0", batch("2", "2", 1))
	a.add(300, trace.KindProcStop, "w1", 100, "", reason("exit"))
	rep := run(t, []engine.Lease{{Key: "s0", Counter: 4, Checkpoint: engine.SentinelCheckpoint(engine.Latest)}}, a, producer("1", "2", "3"))
	if rep.BeforeLatest != 1 || rep.Lost != 1 || rep.Uncovered != 1 || !rep.Failed() {
		t.Fatalf("want 1 excused, 1 lost (3), 1 uncovered (2): %+v", rep)
	}
	if rep.Invariants[check.S4] == 0 {
		t.Fatalf("S4 should see the lost record")
	}
}

// A killed holder is replaced; the new owner starts from the checkpoint
// and re-delivers what followed it; a third one starts past a record and
// still gets it: that is not explained by a checkpoint.
func TestDuplicatesFailoverAndHandoffs(t *testing.T) {
	a, b, c, h := &hb{}, &hb{}, &hb{}, &hb{}
	a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
	a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "TRIM_HORIZON")
	a.add(12, trace.Acting, "w1", 100, "s0", cp("TRIM_HORIZON"))
	a.add(13, trace.KindInitialized, "w1", 100, "s0", cp("TRIM_HORIZON"))
	a.add(200, trace.KindReceived, "w1", 100, "s0", batch("1", "3", 3))
	a.wr(201, "w1", 100, "s0", 2, "checkpoint", "w1", 2, "w1", 3, "1")
	h.add(250, trace.KindFault, "w1", 100, "", reason(FaultKill))
	h.add(251, trace.KindProcStop, "w1", 100, "", reason("crash"))

	b.add(1, trace.KindProcStart, "w2", 200, "", reason(workerCfg))
	b.wr(3000, "w2", 200, "s0", 1, "take", "w1", 3, "w2", 4, "1")
	b.add(3001, trace.LeaseAcquired, "w2", 200, "s0", reason("expired"))
	b.add(3002, trace.Acting, "w2", 200, "s0", cp("1"))
	b.add(3003, trace.KindInitialized, "w2", 200, "s0", cp("1"))
	b.add(3010, trace.KindReceived, "w2", 200, "s0", batch("2", "3", 2))
	b.wr(3011, "w2", 200, "s0", 2, "checkpoint", "w2", 4, "w2", 5, "3")
	b.wr(3100, "w2", 200, "s0", 3, "release", "w2", 5, "", 6, "3")
	b.add(3101, trace.LeaseReleased, "w2", 200, "s0", reason("shutdown"))
	b.add(3102, trace.KindProcStop, "w2", 200, "", reason("exit"))

	c.add(2, trace.KindProcStart, "w3", 300, "", reason(workerCfg))
	c.wr(3200, "w3", 300, "s0", 1, "take", "", 6, "w3", 7, "3")
	c.add(3201, trace.LeaseAcquired, "w3", 300, "s0", reason("unowned"))
	c.add(3202, trace.Acting, "w3", 300, "s0", cp("3"))
	c.add(3203, trace.KindInitialized, "w3", 300, "s0", cp("3"))
	c.add(3210, trace.KindReceived, "w3", 300, "s0", batch("3", "3", 1))
	c.add(3300, trace.KindProcStop, "w3", 300, "", reason("exit"))

	rep := run(t, nil, a, b, c, h, producer("1", "2", "3"))
	if rep.Duplicated != 2 || rep.Extra != 3 || rep.DupCauses["after-checkpoint"] != 2 || rep.DupCauses["other"] != 1 {
		t.Fatalf("duplicates: %d (%d extra) %v", rep.Duplicated, rep.Extra, rep.DupCauses)
	}
	if len(rep.Kills) != 1 || rep.Kills[0].Shards != 1 || rep.Kills[0].Max != 3002*time.Millisecond-250*time.Millisecond {
		t.Fatalf("kills: %+v", rep.Kills)
	}
	if rep.Handoffs.Count != 2 || rep.Handoffs.ByCause["process crash"].Redelivered != 2 || rep.Handoffs.ByCause["planned move"].Redelivered != 1 {
		t.Fatalf("handoffs: %+v", rep.Handoffs)
	}
	if !rep.Failed() {
		t.Fatal("an unexplained re-delivery must fail the run")
	}
}

func TestLateWriteRegressionAndHealthyLoss(t *testing.T) {
	a, b := &hb{}, &hb{}
	a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
	b.add(1, trace.KindProcStart, "w2", 200, "", reason(workerCfg))
	a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "5")
	a.add(11, trace.LeaseAcquired, "w1", 100, "s0", reason("unowned"))
	// w2 takes the lease of a healthy w1 as "expired": a wrong take
	b.wr(500, "w2", 200, "s0", 1, "take", "w1", 2, "w2", 3, "5")
	b.add(501, trace.LeaseAcquired, "w2", 200, "s0", reason("expired"))
	a.add(600, trace.LeaseLost, "w1", 100, "s0", reason("condition failed: the row changed under renew"))
	// w2 stores a lower checkpoint
	b.wr(700, "w2", 200, "s0", 2, "checkpoint", "w2", 3, "w2", 4, "3")
	// w1 writes after its loss, and it lands (a planted bug); it also
	// stores 3 again, below the highest checkpoint 5
	a.wr(800, "w1", 100, "s0", 2, "renew", "w2", 4, "w1", 5, "3")
	rep := run(t, nil, a, b)
	if rep.CheckpointRegressions != 2 || rep.LateWrites != 1 || rep.HealthyLostToOthers != 1 || rep.Losses["superseded"] != 1 || rep.EarlyTakes != 1 {
		t.Fatalf("regressions %d late %d healthy-lost %d early takes %d losses %v", rep.CheckpointRegressions, rep.LateWrites, rep.HealthyLostToOthers, rep.EarlyTakes, rep.Losses)
	}
	if rep.Invariants[check.S2] == 0 || rep.Invariants[check.S3] == 0 {
		t.Fatalf("S2 and S3 should fire: %v", rep.Invariants)
	}
}

func TestBalanceStealIsNotAHealthyLoss(t *testing.T) {
	a, b := &hb{}, &hb{}
	a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
	b.add(1, trace.KindProcStart, "w2", 200, "", reason(workerCfg))
	a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "5")
	b.wr(500, "w2", 200, "s0", 1, "take", "w1", 2, "w2", 3, "5")
	b.add(501, trace.LeaseAcquired, "w2", 200, "s0", reason("stolen"))
	a.add(600, trace.LeaseLost, "w1", 100, "s0", reason("condition failed: the row changed under renew"))
	rep := run(t, nil, a, b)
	if rep.HealthyLostToOthers != 0 || rep.BalanceSteals != 1 || rep.Losses["stolen for balance"] != 1 {
		t.Fatalf("healthy-lost %d steals %d losses %v", rep.HealthyLostToOthers, rep.BalanceSteals, rep.Losses)
	}
}

// A paused worker whose own view of the lease expired during the pause
// must not deliver after SIGCONT; one that does is counted.
func TestZombieActsAfterAPause(t *testing.T) {
	for _, zombie := range []bool{false, true} {
		a, h := &hb{}, &hb{}
		a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
		a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "TRIM_HORIZON")
		a.add(11, trace.Acting, "w1", 100, "s0", cp("TRIM_HORIZON"))
		a.add(12, trace.Delivered, "w1", 100, "s0", batch("1", "1", 1))
		h.add(1000, trace.KindFault, "w1", 100, "", reason(FaultStop))
		h.add(5000, trace.KindFault, "w1", 100, "", reason(FaultCont))
		if zombie {
			a.add(5001, trace.Delivered, "w1", 100, "s0", batch("2", "2", 1))
		}
		a.add(5002, trace.LeaseLost, "w1", 100, "s0", reason("expired: no renewal applied within the lease duration"))
		rep := run(t, nil, a, h)
		if len(rep.Pauses) != 1 || rep.Pauses[0].Expired != 1 {
			t.Fatalf("pauses: %+v", rep.Pauses)
		}
		if got := rep.Pauses[0].Zombie; (got > 0) != zombie || rep.Failed() != zombie {
			t.Fatalf("zombie=%v: counted %d, failed %v", zombie, got, rep.Failed())
		}
	}
}

func TestPrintNamesEveryFigure(t *testing.T) {
	rep := run(t, nil, producer("1"))
	var buf bytes.Buffer
	rep.Print(&buf)
	for _, want := range []string{"produced", "lost", "delivered more than once", "re-delivered after the last checkpoint",
		"checkpoint regressions", "writes landed after the writer lost the lease", "handoffs", "S1", "S6", "verdict: FAIL"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// unrecordedRun is TestCleanRunPasses's worker receiving the batches got,
// and checkpointing at the last, with a producer that recorded puts.
func unrecordedRun(t *testing.T, puts []string, got ...[3]string) *Report {
	t.Helper()
	a := &hb{}
	a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
	a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "TRIM_HORIZON")
	a.add(11, trace.LeaseAcquired, "w1", 100, "s0", reason("unowned"))
	a.add(12, trace.Acting, "w1", 100, "s0", cp("TRIM_HORIZON"))
	a.add(13, trace.KindInitialized, "w1", 100, "s0", cp("TRIM_HORIZON"))
	last := ""
	for i, b := range got {
		n := 0
		for _, c := range b[2] {
			n = n*10 + int(c-'0')
		}
		a.add(float64(200+10*i), trace.Delivered, "w1", 100, "s0", batch(b[0], b[1], n))
		a.add(float64(201+10*i), trace.KindReceived, "w1", 100, "s0", batch(b[0], b[1], n))
		a.add(float64(204+10*i), trace.KindDone, "w1", 100, "s0", reason("ok"))
		last = b[1]
	}
	a.wr(300, "w1", 100, "s0", 2, "checkpoint", "w1", 2, "w1", 3, last)
	a.add(301, trace.KindCheckpointAck, "w1", 100, "s0", cp(last), func(r *trace.Record) { r.Outcome = trace.OutcomeOK })
	a.wr(400, "w1", 100, "s0", 3, "release", "w1", 3, "", 4, last)
	a.add(402, trace.KindProcStop, "w1", 100, "", reason("exit"))
	return run(t, []engine.Lease{{Key: "s0", Counter: 4, Checkpoint: engine.SequenceCheckpoint(last)}}, a, producer(puts...))
}

// TestUnrecordedProducersAreNotS4: a stream that held records before the
// recorded producer started (an earlier run, a producer without -record)
// hands the workers records nobody recorded as put. The check says it
// cannot know about them instead of failing S4; a batch that leaves out a
// recorded record still fails.
func TestUnrecordedProducersAreNotS4(t *testing.T) {
	// 1 and 2 were put before the run; 3..5 recorded
	rep := unrecordedRun(t, []string{"3", "4", "5"}, [3]string{"1", "3", "3"}, [3]string{"4", "5", "2"})
	if rep.Failed() || rep.Invariants[check.S4] != 0 || rep.Unrecorded != 2 || rep.Delivered != 3 {
		t.Fatalf("want a pass with 2 unrecorded records, 3 delivered: S4 %d, unrecorded %d, delivered %d: %+v",
			rep.Invariants[check.S4], rep.Unrecorded, rep.Delivered, rep.Violations)
	}
	var buf bytes.Buffer
	rep.Print(&buf)
	if !strings.Contains(buf.String(), "received but never recorded as put (earlier or unrecorded producers) 2, in s0") ||
		!strings.Contains(buf.String(), "verdict: PASS") {
		t.Errorf("the report does not say what it cannot know:\n%s", buf.String())
	}
	// a whole batch of unrecorded records before the recorded ones
	rep = unrecordedRun(t, []string{"3", "4"}, [3]string{"1", "2", "2"}, [3]string{"3", "4", "2"})
	if rep.Failed() || rep.Unrecorded != 2 {
		t.Fatalf("want a pass with 2 unrecorded records: %+v", rep.Violations)
	}
	// a hole among recorded records is still a violation
	rep = unrecordedRun(t, []string{"3", "4", "5", "6"}, [3]string{"3", "6", "3"})
	if !rep.Failed() || rep.Invariants[check.S4] == 0 {
		t.Fatalf("a batch that leaves out a recorded record passed: %+v", rep)
	}
}

// TestMalformedRowsFailTheCheck: malformed rows of the final table are
// listed with their reasons and fail the check.
func TestMalformedRowsFailTheCheck(t *testing.T) {
	a := &hb{}
	a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
	a.add(302, trace.KindProcStop, "w1", 100, "", reason("exit"))
	m := history.Merge([]history.File{{Records: a.recs}}, history.MergeOptions{})
	bad := []engine.MalformedRow{{Key: "shardId-000000000007", Reason: "attribute leaseCounter: want type N, got S"}, {Reason: "attribute leaseKey is missing"}}
	rep := Check(m, Options{FinalKnown: true, Malformed: bad})
	var buf bytes.Buffer
	rep.Print(&buf)
	out := buf.String()
	for _, want := range []string{"lease table: 2 malformed rows", "shardId-000000000007: attribute leaseCounter: want type N, got S",
		"(no readable leaseKey): attribute leaseKey is missing", "verdict: FAIL (2 malformed rows in the lease table)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !rep.Failed() {
		t.Error("malformed rows passed the check")
	}
	if rep := Check(m, Options{FinalKnown: true}); rep.Failed() {
		t.Errorf("the same history without malformed rows fails: %+v", rep)
	}
}

// TestGracefulHandoff: a worker shutting down releases its lease while the
// checkpoint its processor asked for at ShutdownRequested has not landed;
// the next owner starts at the older stored checkpoint and re-delivers
// what the processor had checkpointed: G1 fails the run. With the
// checkpoint written before the release, it passes.
func TestGracefulHandoff(t *testing.T) {
	for _, landed := range []bool{false, true} {
		a, b := &hb{}, &hb{}
		a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
		a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "TRIM_HORIZON")
		a.add(12, trace.Acting, "w1", 100, "s0", cp("TRIM_HORIZON"))
		a.add(13, trace.KindInitialized, "w1", 100, "s0", cp("TRIM_HORIZON"))
		a.add(200, trace.Delivered, "w1", 100, "s0", batch("1", "3", 3))
		a.add(200, trace.KindReceived, "w1", 100, "s0", batch("1", "3", 3))
		a.add(300, trace.KindNotice, "w1", 100, "s0", reason("ShutdownRequested"))
		a.add(301, trace.CheckpointRequested, "w1", 100, "s0", cp("3"))
		counter := int64(3)
		if landed {
			a.wr(302, "w1", 100, "s0", 2, "checkpoint", "w1", 2, "w1", 3, "3")
			a.add(303, trace.CheckpointWritten, "w1", 100, "s0", cp("3"))
			counter = 4
		}
		stored := "TRIM_HORIZON"
		if landed {
			stored = "3"
		}
		a.add(310, trace.CallSent, "w1", 100, "s0", reason("release"))
		a.wr(310, "w1", 100, "s0", 3, "release", "w1", counter-1, "", counter, stored)
		a.add(311, trace.LeaseReleased, "w1", 100, "s0", reason("shutdown"))
		a.add(312, trace.KindProcStop, "w1", 100, "", reason("exit"))

		b.add(1, trace.KindProcStart, "w2", 200, "", reason(workerCfg))
		b.wr(400, "w2", 200, "s0", 1, "take", "", counter, "w2", counter+1, stored)
		b.add(401, trace.LeaseAcquired, "w2", 200, "s0", reason("unowned"))
		b.add(402, trace.Acting, "w2", 200, "s0", cp(stored))
		b.add(403, trace.KindInitialized, "w2", 200, "s0", cp(stored))
		if !landed {
			b.add(410, trace.Delivered, "w2", 200, "s0", batch("1", "3", 3))
			b.add(410, trace.KindReceived, "w2", 200, "s0", batch("1", "3", 3))
			b.wr(411, "w2", 200, "s0", 2, "checkpoint", "w2", counter+1, "w2", counter+2, "3")
		}
		b.add(500, trace.KindProcStop, "w2", 200, "", reason("exit"))
		rep := run(t, nil, a, b, producer("1", "2", "3"))
		if got := rep.Invariants[check.G1]; (got > 0) == landed || rep.Failed() == landed {
			t.Fatalf("checkpoint landed %v: G1 %d, failed %v", landed, got, rep.Failed())
		}
	}
}

// A shard split before the application first read anything, which nobody
// read, whose children started at LATEST: its records are not the
// application's (the engine gives it no lease). The same shard split
// after the first read is owed: the engine listed it open, so its lease
// must have read it.
func TestResplitBeforeStartIsNotOwed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		splitAt float64
		lost    int
	}{{"split before the first read", 50, 0}, {"split after the first read", 150, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			a, p := &hb{}, &hb{}
			p.add(10, trace.KindPut, "producer", 9, "s0", putSeq("1"))
			p.add(11, trace.KindPut, "producer", 9, "s0", putSeq("2"))
			for _, c := range []string{"s1", "s2"} {
				p.add(tc.splitAt, trace.KindShardCreated, "reshard", 8, c, func(r *trace.Record) { r.Parent = "s0" })
			}
			a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
			for _, c := range []string{"s1", "s2"} {
				a.add(100, trace.Acting, "w1", 100, c, cp("LATEST"))
				a.add(101, trace.KindReply, "w1", 100, c, func(r *trace.Record) {
					r.Op, r.Reason, r.Outcome = engine.OpGetIterator, "LATEST", trace.OutcomeOK
				})
			}
			a.add(300, trace.KindProcStop, "w1", 100, "", reason("exit"))
			final := []engine.Lease{{Key: "s1", Counter: 2, Checkpoint: engine.SentinelCheckpoint(engine.Latest)},
				{Key: "s2", Counter: 2, Checkpoint: engine.SentinelCheckpoint(engine.Latest)}}
			rep := run(t, final, a, p)
			if rep.Lost != tc.lost {
				t.Fatalf("lost %d, want %d: %+v", rep.Lost, tc.lost, rep)
			}
			if tc.lost == 0 && rep.BeforeLatest != 2 {
				t.Errorf("excused %d before LATEST, want 2", rep.BeforeLatest)
			}
		})
	}
}

// In session renewal a lease's own view of expiry comes from its holder's
// session renewals, not the lease row's writes: a worker cut off from the
// table that acts within its session's validity is no zombie, one that
// acts past it is. A worker that renews per lease is timed by the lease's
// row, as before.
func TestZombieBySessionValidity(t *testing.T) {
	sess := engine.SessionKey("w1")
	for _, tc := range []struct {
		name    string
		session bool
		at      float64 // the delivery during the cut
		zombie  bool
	}{
		{"session, within its validity", true, 3000, false},
		{"session, past its validity", true, 4700, true},
		{"per lease, past the row's validity", false, 3000, true},
	} {
		a, h := &hb{}, &hb{}
		a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
		if tc.session {
			a.wr(5, "w1", 100, sess, 1, "take", "", 0, "w1", 1, "SHARD_END")
		}
		a.wr(10, "w1", 100, "s0", 2, "take", "", 1, "w1", 2, "TRIM_HORIZON")
		a.add(11, trace.Acting, "w1", 100, "s0", cp("TRIM_HORIZON"))
		a.add(12, trace.Delivered, "w1", 100, "s0", batch("1", "1", 1))
		if tc.session {
			// valid until 1900 + 3 s - 300 ms = 4600 ms
			a.wr(900, "w1", 100, sess, 3, "renew", "w1", 1, "w1", 2, "SHARD_END")
			a.wr(1900, "w1", 100, sess, 4, "renew", "w1", 2, "w1", 3, "SHARD_END")
		}
		h.add(2000, trace.KindFault, "w1", 100, "", reason(FaultBegin+" cut"))
		a.add(tc.at, trace.Delivered, "w1", 100, "s0", batch("2", "2", 1))
		h.add(6000, trace.KindFault, "w1", 100, "", reason(FaultEnd+" cut"))
		a.add(6001, trace.LeaseLost, "w1", 100, "s0", reason("expired: no renewal applied within the lease duration"))
		rep := run(t, nil, a, h)
		if len(rep.Pauses) != 1 {
			t.Fatalf("%s: cuts: %+v", tc.name, rep.Pauses)
		}
		if got := rep.Pauses[0].Zombie; (got > 0) != tc.zombie {
			t.Errorf("%s: counted %d zombie acts, want zombie=%v", tc.name, got, tc.zombie)
		}
	}
}

// A checkpoint the core decided on while it acted, which the driver sent
// late (its calls queued behind slow ones), acts when it was decided: it
// is fenced by the lease's version. One decided past the lease's own view
// of expiry is a zombie act.
func TestZombieCountsTheDecisionOfALateSend(t *testing.T) {
	for _, late := range []bool{false, true} {
		a, h := &hb{}, &hb{}
		a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
		a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "TRIM_HORIZON")
		a.add(11, trace.Acting, "w1", 100, "s0", cp("TRIM_HORIZON"))
		h.add(2000, trace.KindFault, "w1", 100, "", reason(FaultBegin+" cut"))
		decided := 2600.0 // valid until 10 + 3 s - 300 ms = 2710 ms
		if late {
			decided = 2750
		}
		a.add(decided, trace.CallSent, "w1", 100, "s0", func(r *trace.Record) { r.Counter, r.Reason = 3, trace.WriteCheckpoint })
		a.wr(2800, "w1", 100, "s0", 2, "checkpoint", "w1", 2, "w1", 3, "5")
		h.add(6000, trace.KindFault, "w1", 100, "", reason(FaultEnd+" cut"))
		rep := run(t, nil, a, h)
		if len(rep.Pauses) != 1 {
			t.Fatalf("cuts: %+v", rep.Pauses)
		}
		if got := rep.Pauses[0].Zombie; (got > 0) != late {
			t.Errorf("checkpoint decided at %v ms, sent at 2800 ms: counted %d zombie acts, want zombie=%v", decided, got, late)
		}
	}
}
