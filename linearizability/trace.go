package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

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
	type callKey struct {
		proc int32
		call uint64
	}
	type callRecs struct {
		op                      engine.Op
		send, firstApply, reply *trace.Record
		applies                 int
		retried                 bool
	}
	calls := map[callKey]*callRecs{}
	var order []callKey
	for i := range recs {
		r := &recs[i]
		if (r.Kind != trace.KindSend && r.Kind != trace.KindApply && r.Kind != trace.KindReply) || !r.Op.IsStore() ||
			r.Op == engine.OpListPending || strings.HasPrefix(r.Key, engine.HelloPrefix) {
			// Not in the history: reads of the eventually consistent pending
			// index, and workers' hello rows, created and deleted again and
			// again (an SDK retry of a create may apply once more after a
			// delete, which a history of single-effect calls cannot show;
			// they hold no lease).
			continue
		}
		k := callKey{r.Proc, r.Call}
		c := calls[k]
		if c == nil {
			c = &callRecs{op: r.Op}
			calls[k] = c
			order = append(order, k)
		}
		if r.Op != c.op {
			return nil, fmt.Errorf("linearizability: record %d: call %d of process %d is a %s, not a %s", r.Seq, r.Call, r.Proc, c.op, r.Op)
		}
		switch r.Kind {
		case trace.KindSend:
			if c.send == nil {
				c.send = r
			}
		case trace.KindApply:
			c.applies++
			if c.firstApply == nil {
				c.firstApply = r
			}
			if r.Fault == "sdk-retry" {
				c.retried = true
			}
		case trace.KindReply:
			if c.reply != nil {
				return nil, fmt.Errorf("linearizability: record %d: a second reply to call %d of process %d", r.Seq, r.Call, r.Proc)
			}
			c.reply = r
		}
	}
	h := make([]Op, 0, len(order))
	for _, k := range order {
		c := calls[k]
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
func traceWrite(send, apply, reply *trace.Record, retried bool) (Op, bool, error) {
	src := send
	if src == nil {
		// No KindSend (a history that records only what the table saw):
		// KindApply carries the same call fields.
		src = apply
	}
	if src == nil {
		return Op{}, false, fmt.Errorf("linearizability: record %d: a reply to %s call %d of process %d that was never sent",
			reply.Seq, reply.Op, reply.Call, reply.Proc)
	}
	op := Op{Input: Input{Op: src.Op, Key: src.Key}}
	if send != nil {
		op.Call = int64(send.T)
		// Unconditional on KindApply means the table ignored the
		// condition (a planted bug); only KindSend says what was sent.
		op.Input.Unconditional = send.Unconditional
	} else if reply != nil {
		op.Call = int64(reply.Sent)
	} else {
		op.Call = int64(apply.Sent)
	}
	switch src.Op {
	case engine.OpCreateLease, engine.OpUpdateLease:
		op.Input.Row = Row{Key: src.Key, Owner: src.RowOwner, Counter: src.Counter, Checkpoint: src.Checkpoint}
	}
	if src.Op != engine.OpCreateLease {
		op.Input.Expect = engine.Expect{Owner: src.ExpOwner, Counter: src.ExpCounter}
	}
	if reply == nil {
		op.Return, op.Output.Outcome = Never, OutcomeUnknown
		return op, true, nil
	}
	op.Return = int64(reply.T)
	switch reply.Outcome {
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
func traceRead(send, reply *trace.Record) (Op, bool) {
	if reply == nil {
		return Op{}, false // never returned: observed nothing
	}
	op := Op{Call: int64(reply.Sent), Return: int64(reply.T), Input: Input{Op: reply.Op, Key: reply.Key}}
	if send != nil {
		op.Call = int64(send.T)
	}
	switch reply.Op {
	case engine.OpGetLease:
		switch reply.Outcome {
		case trace.OutcomeOK:
			if reply.Checkpoint.Sequence == "" {
				// The record does not carry the row the read returned
				// (the simulator's replies do not).
				return Op{}, false
			}
			op.Output = Output{Outcome: OutcomeOK,
				Row: Row{Key: reply.Key, Owner: reply.RowOwner, Counter: reply.Counter, Checkpoint: reply.Checkpoint}}
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
