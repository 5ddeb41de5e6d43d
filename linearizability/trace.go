package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// FromTrace returns the lease-table history in a sim/trace history (one
// from the simulator, or a merged cmd/live history): one Op per store
// call, built from its records —
//
//   - KindSend (writes): the send time T and what was sent (Key, ExpOwner,
//     ExpCounter, and the row RowOwner, Counter, Checkpoint);
//   - KindApply (writes; simulator only): how many attempts reached the
//     table. More than one means the SDK retried the write (Fault
//     "sdk-retry");
//   - KindReply: the return time T, Outcome, and Sent (the send time of
//     reads, which have no KindSend).
//
// Calls are matched by (Proc, Call). Rows are in the trace's form: key,
// owner, counter and checkpoint only (see TraceRowOf).
//
// Outcomes: "ok", "condition-failed", "not-found" and "throttled" are
// taken as they are; "timeout", "transient", "error" and a missing
// KindReply (the process died first) are unknown. A write that reached the
// table more than once and did not end "ok" is unknown too: an earlier
// attempt may have applied. Histories whose recorder cannot see retries
// (cmd/live today) should go through AssumeHiddenRetries.
//
// Left out, because the trace does not carry what they returned:
//
//   - every ListLeases: KindReply carries the scan's read mode (Reason
//     "consistent" or "eventual") and its row count, not its rows;
//   - GetLease replies "ok" without a row (a Checkpoint with an empty
//     Sequence: every stored row has a checkpoint). The simulator and
//     cmd/live record the row a GetLease returned (RowOwner, Counter,
//     Checkpoint on the KindReply).
//
// A write is taken as what its writer sent (KindSend): a table that
// applied it without its condition (KindApply Unconditional, the
// simulator's "unfenced-*" planted bugs) is what the check catches.
//
// Reads that returned nothing (no reply, or an unknown or throttled
// outcome) are left out. The result is sorted by Call time.
func FromTrace(recs []trace.Record) ([]Op, error) {
	var b traceHistory
	for i := range recs {
		b.Observe(&recs[i])
	}
	return b.History()
}

// traceHistory builds the history FromTrace returns one record at a time,
// keeping of each call only what its Op needs (not the records).
type traceHistory struct {
	calls map[callKey]*callRecs
	order []callKey
	err   error
}

type callKey struct {
	proc int32
	call uint64
}

// callRec is what an Op needs of one record of a call.
type callRec struct {
	seq           uint64
	t, sent       time.Duration
	op            engine.Op
	key           string
	outcome       string
	expOwner      string
	expCounter    int64
	unconditional bool
	rowOwner      string
	counter       int64
	checkpoint    engine.Checkpoint
	proc          int32
	call          uint64
}

func recOf(r *trace.Record) *callRec {
	return &callRec{seq: r.Seq, t: r.T, sent: r.Sent, op: r.Op, key: r.Key, outcome: r.Outcome, expOwner: r.ExpOwner,
		expCounter: r.ExpCounter, unconditional: r.Unconditional, rowOwner: r.RowOwner, counter: r.Counter,
		checkpoint: r.Checkpoint, proc: r.Proc, call: r.Call}
}

type callRecs struct {
	op                      engine.Op
	send, firstApply, reply *callRec
	applies                 int
	retried                 bool
}

// Observe feeds one record; records of other kinds than store calls are
// ignored. It keeps no reference to r.
func (b *traceHistory) Observe(r *trace.Record) {
	if b.err != nil || (r.Kind != trace.KindSend && r.Kind != trace.KindApply && r.Kind != trace.KindReply) || !r.Op.IsStore() ||
		r.Op == engine.OpListPending || engine.IsWorkerRow(r.Key) {
		// Not in the history: reads of the eventually consistent pending
		// index, and workers' hello and leaving rows, created and deleted again and
		// again (an SDK retry of a create may apply once more after a
		// delete, which a history of single-effect calls cannot show;
		// they hold no lease).
		return
	}
	if b.calls == nil {
		b.calls = map[callKey]*callRecs{}
	}
	k := callKey{r.Proc, r.Call}
	c := b.calls[k]
	if c == nil {
		c = &callRecs{op: r.Op}
		b.calls[k] = c
		b.order = append(b.order, k)
	}
	if r.Op != c.op {
		b.err = fmt.Errorf("linearizability: record %d: call %d of process %d is a %s, not a %s", r.Seq, r.Call, r.Proc, c.op, r.Op)
		return
	}
	switch r.Kind {
	case trace.KindSend:
		if c.send == nil {
			c.send = recOf(r)
		}
	case trace.KindApply:
		c.applies++
		if c.firstApply == nil {
			c.firstApply = recOf(r)
		}
		if r.Fault == "sdk-retry" {
			c.retried = true
		}
	case trace.KindReply:
		if c.reply != nil {
			b.err = fmt.Errorf("linearizability: record %d: a second reply to call %d of process %d", r.Seq, r.Call, r.Proc)
			return
		}
		c.reply = recOf(r)
	}
}

// History returns the history of the records observed so far, sorted by
// Call time, or the first error in them.
func (b *traceHistory) History() ([]Op, error) {
	if b.err != nil {
		return nil, b.err
	}
	h := make([]Op, 0, len(b.order))
	for _, k := range b.order {
		c := b.calls[k]
		var op Op
		var keep bool
		var err error
		if c.op.IsWrite() {
			op, keep, err = traceWrite(c.send, c.firstApply, c.reply, c.retried || c.applies > 1)
		} else {
			op, keep = traceRead(c.send, c.reply)
		}
		if err != nil {
			return nil, err
		}
		if keep {
			op.Client, op.ID = int(k.proc), k.call
			h = append(h, op)
		}
	}
	slices.SortStableFunc(h, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	return h, nil
}

// traceWrite builds the Op of a write.
func traceWrite(send, apply, reply *callRec, retried bool) (Op, bool, error) {
	src := send
	if src == nil {
		// No KindSend (a history that records only what the table saw):
		// KindApply carries the same call fields.
		src = apply
	}
	if src == nil {
		return Op{}, false, fmt.Errorf("linearizability: record %d: a reply to %s call %d of process %d that was never sent",
			reply.seq, reply.op, reply.call, reply.proc)
	}
	op := Op{Input: Input{Op: src.op, Key: src.key}}
	if send != nil {
		op.Call = int64(send.t)
		// Unconditional on KindApply means the table ignored the
		// condition (a planted bug); only KindSend says what was sent.
		op.Input.Unconditional = send.unconditional
	} else if reply != nil {
		op.Call = int64(reply.sent)
	} else {
		op.Call = int64(apply.sent)
	}
	switch src.op {
	case engine.OpCreateLease, engine.OpUpdateLease:
		op.Input.Row = Row{Key: src.key, Owner: src.rowOwner, Counter: src.counter, Checkpoint: src.checkpoint}
	}
	if src.op != engine.OpCreateLease {
		op.Input.Expect = engine.Expect{Owner: src.expOwner, Counter: src.expCounter}
	}
	if reply == nil {
		op.Return, op.Output.Outcome = Never, OutcomeUnknown
		return op, true, nil
	}
	op.Return = int64(reply.t)
	switch reply.outcome {
	case trace.OutcomeOK:
		op.Output.Outcome = OutcomeOK
	case trace.OutcomeCondition:
		op.Output.Outcome = OutcomeConditionFailed
	case trace.OutcomeThrottled:
		op.Output.Outcome = OutcomeThrottled
	default:
		// timeout, transient, error; not-found (a missing table) cannot
		// say whether an earlier attempt applied either.
		op.Output.Outcome = OutcomeUnknown
	}
	if retried && op.Output.Outcome != OutcomeOK {
		op.Output.Outcome = OutcomeUnknown
	}
	if op.Output.Outcome == OutcomeUnknown {
		op.Return = Never
	}
	return op, true, nil
}

// traceRead builds the Op of a read, if the trace says what it returned.
func traceRead(send, reply *callRec) (Op, bool) {
	if reply == nil {
		return Op{}, false // never returned: observed nothing
	}
	op := Op{Call: int64(reply.sent), Return: int64(reply.t), Input: Input{Op: reply.op, Key: reply.key}}
	if send != nil {
		op.Call = int64(send.t)
	}
	switch reply.op {
	case engine.OpGetLease:
		switch reply.outcome {
		case trace.OutcomeOK:
			if reply.checkpoint.Sequence == "" {
				// The record does not carry the row the read returned
				// (the simulator's replies do not).
				return Op{}, false
			}
			op.Output = Output{Outcome: OutcomeOK,
				Row: Row{Key: reply.key, Owner: reply.rowOwner, Counter: reply.counter, Checkpoint: reply.checkpoint}}
		case trace.OutcomeNotFound:
			op.Output.Outcome = OutcomeNotFound
		default:
			return Op{}, false
		}
		return op, true
	case engine.OpListLeases:
		// The trace carries neither the read mode nor the rows of a scan:
		// nothing to check.
		return Op{}, false
	}
	return Op{}, false
}
