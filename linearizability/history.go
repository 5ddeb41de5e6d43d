package linearizability

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Never is the Return time of an operation whose caller never learnt its
// outcome (it timed out, its reply was lost, its process died). Check
// replaces it (and the Return of every operation of unknown outcome) by a
// time after every other operation of the key.
const Never int64 = math.MaxInt64

// Op is one lease-table call as its caller saw it: when it was sent, when
// its outcome came back, what it asked and what it got. Times are
// nanoseconds on one clock shared by every client (the simulator's true
// time, or synchronised wall clocks; see Widen).
type Op struct {
	// Client is the caller (a process); it only labels the visualization.
	Client int
	// ID is the call's id, for reports; it is not used by the check.
	ID uint64
	// Call is when the request left the caller; Return when the outcome
	// reached it (Never if it never did).
	Call, Return int64
	Input        Input
	Output       Output
}

// Input is what a call asked.
type Input struct {
	// Op is one of the five store calls: engine.OpListLeases,
	// OpGetLease, OpCreateLease, OpUpdateLease, OpDeleteLease.
	Op engine.Op
	// Key is the lease key of GetLease and DeleteLease. For CreateLease
	// and UpdateLease it may be left empty: Row.Key is the key.
	Key string
	// Expect is the condition of UpdateLease and DeleteLease.
	Expect engine.Expect
	// Unconditional marks an UpdateLease or DeleteLease sent without its
	// owner/counter condition (only "the row exists"). The engine never
	// sends one; it is here for histories of other clients.
	Unconditional bool
	// Row is the row CreateLease and UpdateLease write.
	Row Row
	// Consistent is ListLeases' read mode. Only consistent scans are
	// checked; eventually consistent ones are skipped (see the package
	// documentation).
	Consistent bool
}

// Output is what a call got back.
type Output struct {
	Outcome Outcome
	// Row is the row GetLease returned (Outcome OK).
	Row Row
	// Rows are the rows ListLeases returned (Outcome OK).
	Rows []Row
	// Malformed are the keys of rows ListLeases found but could not
	// decode: the row exists, its contents are unknown.
	Malformed []string
}

// Outcome is how a call ended, as far as its caller knows.
type Outcome uint8

// The outcomes.
const (
	// OutcomeOK: the call applied (a write) or returned Output.Row(s)
	// (a read).
	OutcomeOK Outcome = iota + 1
	// OutcomeConditionFailed: a write whose condition did not hold; it
	// did not apply.
	OutcomeConditionFailed
	// OutcomeNotFound: GetLease found no row.
	OutcomeNotFound
	// OutcomeThrottled: the call was rejected before it applied. Check
	// leaves it out: it had no effect and observed nothing.
	OutcomeThrottled
	// OutcomeUnknown: the caller never learnt the outcome (timeout, lost
	// reply, 5xx, crash). A write of unknown outcome may or may not have
	// applied, at any time after it was sent; a read of unknown outcome is
	// left out.
	OutcomeUnknown
)

var outcomeNames = [...]string{"", "ok", "condition-failed", "not-found", "throttled", "unknown"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o != 0 {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Row is a comparable form of one lease row version (engine.Lease, with the
// string sets joined by commas). Two reads saw the same version if their
// Rows are ==.
type Row struct {
	Key             string
	Owner           string
	Counter         int64
	Checkpoint      engine.Checkpoint
	OwnerSwitches   int64
	Parents         string
	Children        string
	StartingHashKey string
	EndingHashKey   string
	HandoffFrom     string
	Writer          string
}

// RowOf returns the comparable form of l.
func RowOf(l engine.Lease) Row {
	return Row{Key: l.Key, Owner: l.Owner, Counter: l.Counter, Checkpoint: l.Checkpoint,
		OwnerSwitches: l.OwnerSwitches, Parents: strings.Join(l.Parents, ","), Children: strings.Join(l.Children, ","),
		StartingHashKey: l.StartingHashKey, EndingHashKey: l.EndingHashKey, HandoffFrom: l.HandoffFrom, Writer: l.Writer}
}

// TraceRowOf returns the part of l that a sim/trace Record carries (key,
// owner, counter, checkpoint): the form FromTrace gives its rows. Use it for
// Config.Initial when checking a history read from a trace.
func TraceRowOf(l engine.Lease) Row {
	return Row{Key: l.Key, Owner: l.Owner, Counter: l.Counter, Checkpoint: l.Checkpoint}
}

func (r Row) String() string {
	owner := r.Owner
	if owner == "" {
		owner = "-"
	}
	s := fmt.Sprintf("owner=%s counter=%d cp=%s", owner, r.Counter, r.Checkpoint)
	if r.OwnerSwitches != 0 {
		s += fmt.Sprintf(" switches=%d", r.OwnerSwitches)
	}
	if r.Parents != "" {
		s += " parents=" + r.Parents
	}
	if r.Children != "" {
		s += " children=" + r.Children
	}
	return s
}

// key returns the lease key a single-key call is about.
func (in *Input) key() string {
	if in.Key != "" {
		return in.Key
	}
	return in.Row.Key
}

// FromCall returns the Op of an engine call c that client sent at call and
// whose result r came back at ret (Never if none did: pass a zero r).
// Errors are classified as the engine does: nil is OK, ErrConditionFailed,
// ErrNotFound (GetLease) and ErrThrottled are what they say, anything else
// is unknown. It assumes r is the outcome of one attempt; see
// AssumeHiddenRetries. ok is false for calls that are not store calls.
func FromCall(client int, call, ret int64, c engine.Call, r engine.Result) (op Op, ok bool) {
	if !c.Op.IsStore() {
		return Op{}, false
	}
	op = Op{Client: client, ID: c.ID, Call: call, Return: ret,
		Input: Input{Op: c.Op, Key: c.Key, Expect: c.Expect, Consistent: c.Consistent}}
	switch c.Op {
	case engine.OpCreateLease, engine.OpUpdateLease:
		op.Input.Row = RowOf(c.Lease)
		op.Input.Key = c.Lease.Key
	}
	if ret == Never {
		op.Output.Outcome = OutcomeUnknown
		return op, true
	}
	switch err := r.Err; {
	case err == nil:
		op.Output.Outcome = OutcomeOK
		switch c.Op {
		case engine.OpGetLease:
			op.Output.Row = RowOf(r.Lease)
		case engine.OpListLeases:
			op.Output.Rows = make([]Row, len(r.Listing.Leases))
			for i, l := range r.Listing.Leases {
				op.Output.Rows[i] = RowOf(l)
			}
			for _, m := range r.Listing.Malformed {
				op.Output.Malformed = append(op.Output.Malformed, m.Key)
			}
		}
	case errors.Is(err, engine.ErrThrottled):
		op.Output.Outcome = OutcomeThrottled
	case errors.Is(err, engine.ErrConditionFailed) && c.Op.IsWrite():
		op.Output.Outcome = OutcomeConditionFailed
	case errors.Is(err, engine.ErrNotFound) && c.Op == engine.OpGetLease:
		op.Output.Outcome = OutcomeNotFound
	default:
		op.Output.Outcome = OutcomeUnknown
	}
	return op, true
}

// Widen returns a copy of h with every operation's window widened by skew
// on both sides: for histories recorded by several processes whose clocks
// agree only within skew. (A history whose times are off by more than
// the windows allow may be reported as not linearizable when it is.)
func Widen(h []Op, skew time.Duration) []Op {
	out := make([]Op, len(h))
	for i, op := range h {
		op.Call -= int64(skew)
		if op.Return != Never {
			op.Return += int64(skew)
		}
		out[i] = op
	}
	return out
}

// AssumeHiddenRetries returns a copy of h in which every write that did not
// end OK has an unknown outcome. Use it for histories recorded above a
// client that retries on its own without telling (the AWS SDK does: a
// write whose first attempt applied and whose reply was lost is retried,
// and the retry ends in a condition failure or a throttle). A write that
// ended OK stays OK: its last attempt applied.
func AssumeHiddenRetries(h []Op) []Op {
	out := make([]Op, len(h))
	for i, op := range h {
		if op.Input.Op.IsWrite() && op.Output.Outcome != OutcomeOK {
			op.Output.Outcome = OutcomeUnknown
		}
		out[i] = op
	}
	return out
}

// validate reports an operation Check cannot interpret.
func (op *Op) validate() error {
	in, out := &op.Input, &op.Output
	switch in.Op {
	case engine.OpListLeases:
	case engine.OpGetLease, engine.OpDeleteLease:
		if in.Key == "" {
			return fmt.Errorf("%s without a key", in.Op)
		}
	case engine.OpCreateLease, engine.OpUpdateLease:
		if in.Row.Key == "" && in.Key == "" {
			return fmt.Errorf("%s without a key", in.Op)
		}
		if in.Key != "" && in.Row.Key != "" && in.Key != in.Row.Key {
			return fmt.Errorf("%s of key %q writes a row of key %q", in.Op, in.Key, in.Row.Key)
		}
	default:
		return fmt.Errorf("%s is not a lease-table call", in.Op)
	}
	switch out.Outcome {
	case OutcomeOK, OutcomeThrottled, OutcomeUnknown:
	case OutcomeConditionFailed:
		if !in.Op.IsWrite() {
			return fmt.Errorf("%s cannot end in %s", in.Op, out.Outcome)
		}
	case OutcomeNotFound:
		if in.Op != engine.OpGetLease {
			return fmt.Errorf("%s cannot end in %s (a write on a missing row fails its condition)", in.Op, out.Outcome)
		}
	default:
		return fmt.Errorf("%s without an outcome", in.Op)
	}
	if out.Outcome == OutcomeOK && in.Op == engine.OpGetLease && out.Row.Key != in.Key {
		return fmt.Errorf("GetLease(%s) returned a row of key %q", in.Key, out.Row.Key)
	}
	for _, r := range out.Rows {
		if r.Key == "" {
			return fmt.Errorf("ListLeases returned a row without a key")
		}
	}
	if out.Outcome != OutcomeUnknown {
		if op.Return == Never {
			return fmt.Errorf("%s ended %s but never returned", in.Op, out.Outcome)
		}
		if op.Return < op.Call {
			return fmt.Errorf("%s returned at %d before it was called at %d", in.Op, op.Return, op.Call)
		}
	}
	return nil
}
