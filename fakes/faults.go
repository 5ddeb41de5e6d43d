package fakes

import (
	"time"

	"github.com/shardlease/shardlease/engine"
)

// numOps bounds the engine.Op values the fakes track (engine.Op is small;
// the fan-out ops start at 16).
const numOps = 24

// Hook decides, before a call of a fake executes, whether it fails: a
// non-nil error fails the call without applying it. key names what the call
// is about: for LeaseTable the lease key ("" for ListLeases); for Kinesis
// "stream" (ListShards), "stream/shard" (GetShardIterator, GetRecords and
// the subscription calls) or "stream/consumer" (the consumer calls).
type Hook func(op engine.Op, key string) error

// Faults injects failures into the calls of a fake. LeaseTable and Kinesis
// embed one, so its methods are called on the fake itself:
//
//	table.Throttle(now.Add(time.Second))                      // every op
//	stream.Throttle(now.Add(time.Second), engine.OpGetRecords) // one op
//	table.FailNext(engine.OpUpdateLease, errTimeout)
//	table.FailNextApplied(engine.OpUpdateLease, engine.ErrConditionFailed)
//
// Before a call executes, the fake checks, in order: the throttling window
// of its op, the next queued one-shot failure of its op, and the hook. The
// first that fails the call decides its error, and the call does not apply.
// A failure queued by FailNextApplied instead lets the call execute and
// then replaces its result by the error (a lost reply, or an SDK retry of a
// write that had already applied).
//
// Operations of a fake that are not engine calls (Kinesis.PutRecord, the
// administrative methods) are never faulted. The zero value injects
// nothing. Passing an engine.Op the fakes do not know (numOps or above)
// panics.
type Faults struct {
	throttled [numOps]time.Time
	queued    [numOps][]queuedFault
	hook      Hook
}

// queuedFault is one failure queued by FailNext or FailNextApplied.
type queuedFault struct {
	err     error
	applied bool // fail after the call has executed
}

// Throttle makes every call of the given ops (of every op when none is
// given) fail with an error wrapping engine.ErrThrottled while the fake's
// clock reads before until. It replaces earlier windows of those ops;
// Throttle(time.Time{}) ends all throttling.
func (f *Faults) Throttle(until time.Time, ops ...engine.Op) {
	if len(ops) == 0 {
		for i := range f.throttled {
			f.throttled[i] = until
		}
		return
	}
	for _, op := range ops {
		f.throttled[opIndex(op)] = until
	}
}

// FailNext makes the next call of op fail, before it applies, with an error
// wrapping err (which may be an engine sentinel such as
// engine.ErrExpiredIterator, or any other error for an unknown outcome).
// Failures queue: n calls of FailNext fail the next n calls of op.
func (f *Faults) FailNext(op engine.Op, err error) {
	i := opIndex(op)
	f.queued[i] = append(f.queued[i], queuedFault{err: err})
}

// FailNextApplied makes the next call of op execute (and, for a write,
// apply if its condition holds) and then report an error wrapping err
// instead of its result. It shares the queue of FailNext.
func (f *Faults) FailNextApplied(op engine.Op, err error) {
	i := opIndex(op)
	f.queued[i] = append(f.queued[i], queuedFault{err: err, applied: true})
}

// SetHook installs h, consulted before every engine call after throttling
// and queued failures; nil removes it.
func (f *Faults) SetHook(h Hook) { f.hook = h }

// ClearFaults removes every throttling window, queued failure and the hook.
func (f *Faults) ClearFaults() { *f = Faults{} }

// opIndex returns the array index of op, panicking on an op out of range
// (a programming error in the caller).
func opIndex(op engine.Op) int {
	if int(op) >= numOps {
		panic("fakes: engine.Op " + op.String() + " out of range")
	}
	return int(op)
}

// before returns the error that fails a call of op before it executes, or
// nil. subject and sub name the call's key for the hook (joined with "/"
// only when a hook is set, to keep the common path free of allocations).
func (f *Faults) before(op engine.Op, subject, sub string, now time.Time) error {
	i := opIndex(op)
	if now.Before(f.throttled[i]) {
		return &callError{op: op, subject: subject, sub: sub, msg: "injected throttling", err: engine.ErrThrottled}
	}
	if q := f.queued[i]; len(q) > 0 && !q[0].applied {
		return &callError{op: op, subject: subject, sub: sub, msg: "injected fault", err: f.pop(i)}
	}
	if f.hook != nil {
		key := subject
		if sub != "" {
			key += "/" + sub
		}
		if err := f.hook(op, key); err != nil {
			return &callError{op: op, subject: subject, sub: sub, msg: "hook", err: err}
		}
	}
	return nil
}

// after returns the error queued by FailNextApplied that replaces the
// result of a call of op that has executed, or nil.
func (f *Faults) after(op engine.Op, subject, sub string) error {
	i := opIndex(op)
	if q := f.queued[i]; len(q) > 0 && q[0].applied {
		return &callError{op: op, subject: subject, sub: sub, msg: "injected fault after apply", err: f.pop(i)}
	}
	return nil
}

// pop removes the head of queue i and returns its error.
func (f *Faults) pop(i int) error {
	q := f.queued[i]
	err := q[0].err
	copy(q, q[1:])
	q[len(q)-1] = queuedFault{}
	f.queued[i] = q[:len(q)-1]
	return err
}

// callError is the error of a failed call of a fake. It formats its message
// only when asked, so failing calls stay cheap.
type callError struct {
	op      engine.Op
	subject string // lease key or stream
	sub     string // shard, if any
	msg     string
	err     error // sentinel or cause; may be nil
}

func (e *callError) Error() string {
	head := ""
	if e.op != 0 {
		head = e.op.String()
	}
	if e.subject != "" {
		if head != "" {
			head += " "
		}
		head += e.subject
		if e.sub != "" {
			head += "/" + e.sub
		}
	}
	s := "fakes: " + head
	if e.msg != "" {
		if head != "" {
			s += ": "
		}
		s += e.msg
	}
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}

func (e *callError) Unwrap() error { return e.err }
