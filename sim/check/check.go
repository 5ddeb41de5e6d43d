// Package check holds the invariant checkers. Each reads a plain history
// (trace.Record, in order) and, where it needs one, the final lease table,
// and returns the violations it finds. They know nothing of the simulator,
// so histories recorded from real processes can be checked the same way.
package check

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Invariant names.
const (
	S1 = "S1" // single owner
	S2 = "S2" // fenced writes
	S3 = "S3" // no lost checkpoint
	S4 = "S4" // at-least-once
	S5 = "S5" // parents first
	S6 = "S6" // per-shard order
	L1 = "L1" // liveness after healing
)

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Key       string        // the lease key (shard)
	Workers   []string      // the workers involved, "owner#proc"
	From, To  time.Duration // the true-time window
	Detail    string
	Seqs      []uint64 // the records that show it

	// Filled in by the runner.
	Excerpt []string
	Seed    uint64
	Replay  string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s %v [%v, %v]: %s", v.Invariant, v.Key, v.Workers, v.From, v.To, v.Detail)
}

// History is what the checkers read.
type History struct {
	Records []trace.Record
	// Final is the lease table at the end of the run; FinalKnown says it
	// was captured (a nil Final with FinalKnown is an empty table).
	Final      []engine.Lease
	FinalKnown bool
}

// Options are the run's facts that some checkers need.
type Options struct {
	// End is the true time at which the run ended.
	End time.Duration
	// Heal is the true time at which all faults stopped (0: never; then
	// L1 is not checked).
	Heal time.Duration
	// Bound is the liveness bound derived from the configuration: after
	// Heal+Bound every open shard is owned and each record is delivered
	// within Bound of its put.
	Bound time.Duration
	// Balance asks L1 to check that live workers hold within ±BalanceSlack
	// of their fair share of unfinished leases at End.
	Balance      bool
	BalanceSlack int
	// MaxPerCheck caps the violations one checker reports (0: 20).
	MaxPerCheck int
}

// Report is the result of all checkers.
type Report struct {
	Violations []Violation
	// LostToRetention counts records that retention removed before any
	// processor received them (S4 counts them instead of failing).
	LostToRetention int
}

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

func (o Options) max() int {
	if o.MaxPerCheck <= 0 {
		return 20
	}
	return o.MaxPerCheck
}

func who(r *trace.Record) string { return r.Owner + "#" + strconv.Itoa(int(r.Proc)) }

// Excerpt returns the records of recs around v: those of its key or its
// workers within the window, widened by pad, at most n lines.
func Excerpt(recs []trace.Record, v Violation, pad time.Duration, n int) []string {
	var out []string
	from, to := v.From-pad, v.To+pad
	ws := map[string]bool{}
	for _, w := range v.Workers {
		ws[w] = true
	}
	seqs := map[uint64]bool{}
	for _, s := range v.Seqs {
		seqs[s] = true
	}
	i := sort.Search(len(recs), func(i int) bool { return recs[i].T >= from })
	for ; i < len(recs) && recs[i].T <= to; i++ {
		r := &recs[i]
		noise := r.Kind == trace.KindPut || r.Kind == trace.KindTrim || (r.Kind == trace.KindReply && r.Op == engine.OpGetRecords)
		if seqs[r.Seq] || (v.Key != "" && r.Key == v.Key && !noise) || (r.Kind == trace.KindFault && (r.Key == "" || r.Key == v.Key)) || (r.Kind == trace.KindProcStop && ws[who(r)]) {
			mark := "  "
			if seqs[r.Seq] {
				mark = "> "
			}
			out = append(out, mark+r.String())
		}
	}
	if len(out) > n {
		// keep the marked lines and those nearest them
		keep := make([]string, 0, n)
		for _, l := range out {
			if l[0] == '>' {
				keep = append(keep, l)
			}
		}
		if len(keep) < n {
			keep = keep[:0]
			half := n / 2
			first := 0
			for j, l := range out {
				if l[0] == '>' {
					first = j
					break
				}
			}
			lo := first - half
			if lo < 0 {
				lo = 0
			}
			hi := lo + n
			if hi > len(out) {
				hi = len(out)
			}
			keep = append(keep, out[lo:hi]...)
		}
		out = keep
	}
	return out
}

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
	return engine.CompareSequences(a, b)
}
