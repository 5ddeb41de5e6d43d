// Package reference is the whole-history invariant checkers as they were
// before package check became online (commit c16c017), kept unchanged as
// the oracle that the online checkers are tested against: fed the same
// history, both must report the same violations and figures.
//
// Its original documentation follows. Package check holds the invariant checkers. Each reads a plain history
// (trace.Record, in order) and, where it needs one, the final lease table,
// and returns the violations it finds. They know nothing of the simulator,
// so histories recorded from real processes can be checked the same way.
package reference

import (
	"strconv"
	"strings"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// The types and names are check's own, so results compare with ==.
type (
	Violation = check.Violation
	History   = check.History
	Options   = check.Options
	Report    = check.Report
	Figures   = check.Figures
	Tenure    = check.Tenure
)

const (
	S1 = check.S1
	S2 = check.S2
	S3 = check.S3
	S4 = check.S4
	S5 = check.S5
	S6 = check.S6
	L1 = check.L1
)

// All runs every checker.
func All(h History, o Options) Report {
	var rep Report
	rep.Violations = append(rep.Violations, CheckS1(h.Records, o)...)
	rep.Violations = append(rep.Violations, CheckS2(h.Records, o)...)
	rep.Violations = append(rep.Violations, CheckS3(h, o)...)
	s4, lost := CheckS4(h, o)
	rep.Violations = append(rep.Violations, s4...)
	rep.LostToRetention = lost
	rep.Violations = append(rep.Violations, CheckS5(h.Records, o)...)
	rep.Violations = append(rep.Violations, CheckS6(h.Records, o)...)
	rep.Violations = append(rep.Violations, CheckL1(h, o)...)
	return rep
}

func maxOf(o Options) int {
	if o.MaxPerCheck <= 0 {
		return 20
	}
	return o.MaxPerCheck
}

func who(r *trace.Record) string { return r.Owner + "#" + strconv.Itoa(int(r.Proc)) }

// cmpSeq compares two sequence numbers (or "" as before everything).
func cmpSeq(a, b string) int {
	if a == "" || b == "" {
		switch {
		case a == b:
			return 0
		case a == "":
			return -1
		}
		return 1
	}
	return compareDecimal(a, b) // not the engine's comparator
}

// cmpSub compares two user records (sequence number, sub-sequence
// number): by sequence number, then by sub-sequence number.
func cmpSub(a string, asub int64, b string, bsub int64) int {
	if c := cmpSeq(a, b); c != 0 {
		return c
	}
	switch {
	case asub < bsub:
		return -1
	case asub > bsub:
		return 1
	}
	return 0
}

// cmpCP compares two checkpoints as the checkers order them (not with the
// engine's comparator): the start sentinels (or none) first, equal to each
// other, then sequence numbers with their sub-sequence numbers, then
// SHARD_END.
func cmpCP(a, b engine.Checkpoint) int {
	rank := func(c engine.Checkpoint) int {
		switch c.Sequence {
		case "", engine.TrimHorizon, engine.Latest, engine.AtTimestamp:
			return 0
		case engine.ShardEnd:
			return 2
		}
		return 1
	}
	ra, rb := rank(a), rank(b)
	switch {
	case ra != rb:
		if ra < rb {
			return -1
		}
		return 1
	case ra != 1:
		return 0
	}
	return cmpSub(a.Sequence, a.SubSequence, b.Sequence, b.SubSequence)
}

// subName names a user record as messages do: "seq", or "seq/sub" past
// the first of an aggregate.
func subName(seq string, sub int64) string {
	if sub == 0 {
		return seq
	}
	return seq + "/" + strconv.FormatInt(sub, 10)
}

// compareDecimal orders decimal strings numerically: leading zeros
// dropped, shorter first, then byte by byte.
func compareDecimal(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}
