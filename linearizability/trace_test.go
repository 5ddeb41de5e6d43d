package linearizability_test

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	lin "github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim/trace"
)

// traceBuilder writes the records the simulator writes for store calls.
type traceBuilder struct {
	recs []trace.Record
	seq  uint64
}

func (b *traceBuilder) add(r trace.Record) {
	b.seq++
	r.Seq = b.seq
	b.recs = append(b.recs, r)
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

var th = engine.SentinelCheckpoint(engine.TrimHorizon)

// write records a write's send, its applies (one per attempt that reached
// the table: outcome and fault) and its reply (outcome "" for none).
func (b *traceBuilder) write(proc int32, call uint64, op engine.Op, key string, e engine.Expect, owner string, counter int64,
	sent, replied int, reply string, applies ...[2]string) {
	base := trace.Record{Proc: proc, Call: call, Op: op, Key: key, ExpOwner: e.Owner, ExpCounter: e.Counter,
		RowOwner: owner, Counter: counter, Checkpoint: th}
	s := base
	s.Kind, s.T = trace.KindSend, ms(sent)
	b.add(s)
	for i, a := range applies {
		r := base
		r.Kind, r.T, r.Sent, r.Outcome, r.Fault = trace.KindApply, ms(sent+1+i), ms(sent), a[0], a[1]
		b.add(r)
	}
	if reply != "" {
		b.add(trace.Record{Kind: trace.KindReply, T: ms(replied), Proc: proc, Call: call, Op: op, Key: key, Sent: ms(sent), Outcome: reply})
	}
}

func TestFromTrace(t *testing.T) {
	var b traceBuilder
	k := "shardId-0"
	// 1: create, ok
	b.write(1, 1, engine.OpCreateLease, k, engine.Expect{}, "", 0, 0, 5, "ok", [2]string{"ok", ""})
	// 2: a take that applied and whose reply was lost
	b.write(1, 2, engine.OpUpdateLease, k, exp("", 0), "w1", 1, 10, 40, "timeout", [2]string{"ok", "reply-lost"})
	// 3: a take by w2 of the same counter: condition failed
	b.write(2, 1, engine.OpUpdateLease, k, exp("", 0), "w2", 1, 20, 25, "condition-failed", [2]string{"condition-failed", ""})
	// 4: a renew by w1 whose first attempt applied and whose SDK retry
	// failed its condition: the reply says condition-failed
	b.write(1, 3, engine.OpUpdateLease, k, exp("w1", 1), "w1", 2, 50, 70, "condition-failed",
		[2]string{"ok", ""}, [2]string{"condition-failed", "sdk-retry"})
	// 5: a throttled checkpoint
	b.write(1, 4, engine.OpUpdateLease, k, exp("w1", 2), "w1", 3, 80, 85, "throttled", [2]string{"throttled", "throttled"})
	// 6: a renew in flight when its process died (no reply)
	b.write(1, 5, engine.OpUpdateLease, k, exp("w1", 2), "w1", 3, 90, 0, "", [2]string{"ok", ""})
	// reads: the simulator's GetLease reply carries no row; cmd/live's does
	b.add(trace.Record{Kind: trace.KindReply, T: ms(30), Proc: 3, Call: 1, Op: engine.OpGetLease, Key: k, Sent: ms(28), Outcome: "ok"})
	b.add(trace.Record{Kind: trace.KindReply, T: ms(100), Proc: 3, Call: 2, Op: engine.OpGetLease, Key: "other", Sent: ms(99), Outcome: "not-found"})
	b.add(trace.Record{Kind: trace.KindReply, T: ms(120), Proc: 3, Call: 3, Op: engine.OpGetLease, Key: k, Sent: ms(110), Outcome: "ok",
		RowOwner: "w1", Counter: 3, Checkpoint: th})
	b.add(trace.Record{Kind: trace.KindReply, T: ms(121), Proc: 3, Call: 4, Op: engine.OpGetLease, Key: k, Sent: ms(111), Outcome: "timeout"})
	b.add(trace.Record{Kind: trace.KindReply, T: ms(130), Proc: 3, Call: 5, Op: engine.OpListLeases, Sent: ms(125), Outcome: "ok", Count: 1})
	// not store calls, and other records
	b.add(trace.Record{Kind: trace.KindReply, T: ms(131), Proc: 3, Call: 6, Op: engine.OpGetIterator, Key: k, Outcome: "ok"})
	b.add(trace.Record{Kind: trace.LeaseAcquired, T: ms(132), Proc: 1, Key: k, Counter: 1})

	h, err := lin.FromTrace(b.recs)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		client  int
		id      uint64
		op      engine.Op
		call    int64
		ret     int64
		outcome lin.Outcome
	}
	n := func(d time.Duration) int64 { return int64(d) }
	wants := []want{
		{1, 1, engine.OpCreateLease, n(ms(0)), n(ms(5)), lin.OutcomeOK},
		{1, 2, engine.OpUpdateLease, n(ms(10)), lin.Never, lin.OutcomeUnknown},
		{2, 1, engine.OpUpdateLease, n(ms(20)), n(ms(25)), lin.OutcomeConditionFailed},
		{1, 3, engine.OpUpdateLease, n(ms(50)), lin.Never, lin.OutcomeUnknown},
		{1, 4, engine.OpUpdateLease, n(ms(80)), n(ms(85)), lin.OutcomeThrottled},
		{1, 5, engine.OpUpdateLease, n(ms(90)), lin.Never, lin.OutcomeUnknown},
		{3, 2, engine.OpGetLease, n(ms(99)), n(ms(100)), lin.OutcomeNotFound},
		{3, 3, engine.OpGetLease, n(ms(110)), n(ms(120)), lin.OutcomeOK},
	}
	if len(h) != len(wants) {
		for _, op := range h {
			t.Logf("%+v", op)
		}
		t.Fatalf("%d ops, want %d", len(h), len(wants))
	}
	for i, w := range wants {
		op := h[i]
		got := want{op.Client, op.ID, op.Input.Op, op.Call, op.Return, op.Output.Outcome}
		if got != w {
			t.Errorf("op %d: got %+v, want %+v", i, got, w)
		}
	}
	if h[2].Input.Expect != exp("", 0) || h[2].Input.Row != (lin.Row{Key: k, Owner: "w2", Counter: 1, Checkpoint: th}) {
		t.Errorf("take input: %+v", h[2].Input)
	}
	if h[7].Output.Row != (lin.Row{Key: k, Owner: "w1", Counter: 3, Checkpoint: th}) {
		t.Errorf("read row: %+v", h[7].Output.Row)
	}
	res, err := lin.Check(h, 5*time.Second)
	if err != nil || !res.Ok {
		t.Fatalf("%v %s", err, res.Info)
	}

	// The same history, but the read after the process died saw a row
	// nobody wrote: flagged.
	b.recs[len(b.recs)-5].Counter = 7
	h, _ = lin.FromTrace(b.recs)
	if res, _ := lin.Check(h, 5*time.Second); res.Ok {
		t.Fatalf("passed a read of a version nobody wrote: %s", res.Info)
	}
}

func TestFromTraceErrors(t *testing.T) {
	reply := trace.Record{Kind: trace.KindReply, Seq: 1, Proc: 1, Call: 1, Op: engine.OpUpdateLease, Key: "k", Outcome: "ok"}
	if _, err := lin.FromTrace([]trace.Record{reply}); err == nil {
		t.Error("a write reply without its send: no error")
	}
	var b traceBuilder
	b.write(1, 1, engine.OpCreateLease, "k", engine.Expect{}, "", 0, 0, 5, "ok", [2]string{"ok", ""})
	b.add(trace.Record{Kind: trace.KindReply, Proc: 1, Call: 1, Op: engine.OpCreateLease, Key: "k", Outcome: "ok"})
	if _, err := lin.FromTrace(b.recs); err == nil {
		t.Error("two replies to one call: no error")
	}
}

// A history that records only what the table saw (KindApply, no KindSend)
// still yields its writes.
func TestFromTraceApplyOnly(t *testing.T) {
	recs := []trace.Record{
		{Kind: trace.KindApply, Seq: 1, T: ms(2), Proc: 1, Call: 1, Op: engine.OpCreateLease, Key: "k", Sent: ms(1), Outcome: "ok", Checkpoint: th},
		{Kind: trace.KindReply, Seq: 2, T: ms(3), Proc: 1, Call: 1, Op: engine.OpCreateLease, Key: "k", Sent: ms(1), Outcome: "ok"},
	}
	h, err := lin.FromTrace(recs)
	if err != nil || len(h) != 1 || h[0].Call != int64(ms(1)) || h[0].Output.Outcome != lin.OutcomeOK {
		t.Fatalf("%v %+v", err, h)
	}
}
