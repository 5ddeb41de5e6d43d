// Package check holds the invariant checkers. They read a plain history
// (trace.Record, in order) and, where they need one, the final lease
// table, and report the violations they find. They know nothing of the
// simulator, so histories recorded from real processes can be checked the
// same way.
//
// The checkers are online: an Online is fed one record at a time as a
// run goes (the simulator does so) and reports at the end. With
// Options.Forget it drops what no later record can change, so its memory
// is proportional to the world (workers, shards, open leases, records not
// yet covered by a checkpoint), not to the length of the history. The
// batch functions (All, CheckS1, ..., Measure, Tenures) feed a whole
// history to the same checkers.
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

// History is what the batch checkers read.
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
	// Forget lets an Online drop, as the history goes, what no later
	// record can change: a record once it has been received and an applied
	// checkpoint covers it, or once retention trimmed it (counted as lost
	// if nobody received it); a tenure once no later act can overlap it;
	// the state of a process once it stopped. The records must come in
	// true-time order. The checks stay exact except where a record that
	// was received and covered is read again (a process that resumes
	// below the stored checkpoint, which S3 reports inside the
	// assumptions): S4's batch-span and skip checks then compare only
	// what was not forgotten, and the re-deliveries per handoff count the
	// records above what was forgotten.
	Forget bool
	// Timing, if set, is the world's timing: the latency invariants T1-T3
	// and the balance invariant B1 are checked against it (see Timing),
	// and G2 allows the handoff deadline it implies.
	Timing *Timing
}

// Report is the result of all checkers.
type Report struct {
	Violations []Violation
	// LostToRetention counts records that retention removed before any
	// processor received them (S4 counts them instead of failing).
	LostToRetention int
}

// All runs every checker over h.
func All(h History, o Options) Report {
	// W3 needs each write's index record before the watches' reports of
	// it, which a history merged from several processes' clocks does not
	// promise: it runs online, in the simulator (see W3).
	c := newOnline(o, checkAll&^checkW3)
	c.feed(h.Records)
	rep, _ := c.Finish(h.Final, h.FinalKnown)
	return rep
}

// CheckS1 reports tenures of different processes on one key that overlap
// in true time.
func CheckS1(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkS1)
	c.feed(recs)
	return c.s1.finish()
}

// CheckS2 replays the applied table writes in apply order and reports every
// write that landed although its writer did not hold the row: a holder's
// write (renew, checkpoint, release, delete) over a row another owner held
// or over a version it had not seen, a take over a version it had not seen,
// a create over an existing row.
func CheckS2(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkS2)
	c.feed(recs)
	return c.s2.out
}

// CheckS3 reports a stored checkpoint that decreases (also across a delete
// and re-create of the row), an acknowledged checkpoint that the table does
// not hold when it is acknowledged or loses later, a new owner that starts
// before the stored checkpoint, and a final table behind the writes that
// landed.
func CheckS3(h History, o Options) []Violation {
	c := newOnline(o, checkS3)
	c.feed(h.Records)
	return c.s3.finish(h.Final, h.FinalKnown)
}

// CheckS4 reports records that were never delivered although retention
// kept them, batches that skip records, a processor that resumes past a
// record that nobody checkpointed, and a final table whose checkpoints do
// not cover what was delivered. It returns the number of records lost to
// retention too (trimmed before any processor received them).
//
// The end-of-run checks apply to records put at or before o.DeliverBy()
// (End-Bound when Heal is set; none otherwise).
func CheckS4(h History, o Options) ([]Violation, int) {
	c := newOnline(o, checkS4)
	c.feed(h.Records)
	return c.s4.finish(h.Final, h.FinalKnown), c.puts.lost
}

// CheckS5 reports a record of a child shard that reached a processor
// before every parent was checkpointed at SHARD_END (or had left the
// stream).
func CheckS5(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkS5)
	c.feed(recs)
	return c.s5.out
}

// CheckS6 reports records that reach one processor out of sequence order:
// a batch not in order, or a batch that starts at or before the end of the
// previous one, unless the previous one failed (then it may start again at
// the failed batch's first record).
func CheckS6(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkS6)
	c.feed(recs)
	return c.s6.out
}

// CheckG1 checks graceful handoffs: after a planned move (a release for a
// shutdown or a cooperative handoff, see Planned), the next process to
// act on the key starts at or after the highest checkpoint the old
// owner's processor had asked for, and the worker had not refused, when
// the release was sent. A release that races ahead of the processor's
// final checkpoint costs only re-deliveries, which at-least-once allows;
// KCL's contract is that the checkpoint lands first.
func CheckG1(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkG1)
	c.feed(recs)
	return only(c.g1.out, G1)
}

// CheckG2 checks final checkpoints: at a planned release (see Planned),
// no checkpoint the processor asked for and the worker accepted is still
// unwritten, none was refused for the handoff's sake (before the
// handoff's deadline of half a lease duration, with o.Timing), and (with
// o.Timing, whose histories record the processor's notices) an
// initialized processor was asked to shut down and answered first.
func CheckG2(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkG1)
	c.feed(recs)
	return only(c.g1.out, G2)
}

// CheckTiming checks the latency invariants T1, T2 and T3 against
// o.Timing (none without it): every failover, planned move and takeover of
// the assigner row whose path the history shows undisturbed ends within
// the bound derived from the timing and the round trips on its path.
func CheckTiming(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkTiming)
	c.feed(recs)
	if c.tc == nil {
		return nil
	}
	c.tc.flush()
	return c.tc.out
}

// CheckB1 checks that balancing does not churn (o.Timing; none without
// it): in a steady fleet no lease moves twice within engine.MoveQuiet and
// no member both receives and gives leases for balance.
func CheckB1(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkB1)
	c.feed(recs)
	if c.b1 == nil {
		return nil
	}
	return c.b1.out
}

// CheckL2 reports leases given up for a failed condition although the
// write had applied and nothing was written after it.
func CheckL2(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkL2)
	c.feed(recs)
	return c.l2.out
}

// CheckW2 reports a holder write of a lease sent while the process's
// previous write of it was in flight or of unknown outcome and not yet
// resolved.
func CheckW2(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkW2)
	c.feed(recs)
	return c.w2.out
}

// only returns the violations of vs of invariant inv.
func only(vs []Violation, inv string) []Violation {
	var out []Violation
	for _, v := range vs {
		if v.Invariant == inv {
			out = append(out, v)
		}
	}
	return out
}

// CheckW1 reports lease decisions (a lease-table write sent, an
// assignment, a handoff begun, acting started or stopped) that a process
// took in a step in which it read the wall clock (trace.WallRead) for a
// purpose other than NonLeasePurposes.
func CheckW1(recs []trace.Record, o Options) []Violation {
	c := newOnline(o, checkW1)
	c.feed(recs)
	return c.w1.out
}

// CheckL1 checks liveness after healing: at the end every open shard has a
// live process acting on it, records put between Heal+Bound and End-Bound
// reach a processor within Bound, and (with o.Balance) live workers hold
// their fair share of unfinished leases within ±BalanceSlack.
func CheckL1(h History, o Options) []Violation {
	c := newOnline(o, checkL1)
	c.feed(h.Records)
	return c.l1.finish(h.Final, h.FinalKnown)
}

// Measure computes the figures of a history that ended at end.
func Measure(recs []trace.Record, end time.Duration) Figures {
	c := newOnline(Options{End: end}, checkMeasure)
	c.feed(recs)
	return c.ms.finish()
}

// Tenures returns every tenure in recs, ordered by key then start.
func Tenures(recs []trace.Record) []Tenure {
	c := newOnline(Options{}, checkTenures)
	c.feed(recs)
	return c.ten.sorted()
}

// DeliverBy is the put time up to which every record must be delivered
// and checkpointed by the end.
func (o Options) DeliverBy() time.Duration {
	if o.Heal <= 0 || o.Bound <= 0 {
		return 0
	}
	return o.End - o.Bound
}

func (o Options) max() int {
	if o.MaxPerCheck <= 0 {
		return 20
	}
	return o.MaxPerCheck
}

func who(r *trace.Record) string { return r.Owner + "#" + strconv.Itoa(int(r.Proc)) }

// ExcerptFilter tells which records may be shown in a violation's
// excerpt (Excerpt with the same pad): those of its key or its workers
// within the window, widened by pad, and those it names. A history that
// keeps only such records gives the same excerpt as the whole history. It
// is a concrete type, not a func, so that a record passed to it stays on
// its caller's stack.
type ExcerptFilter struct {
	from, to time.Duration
	key      string
	ws       map[string]bool
	seqs     map[uint64]bool
}

// InExcerpt returns the filter of v's excerpt with pad.
func InExcerpt(v Violation, pad time.Duration) *ExcerptFilter {
	f := &ExcerptFilter{from: v.From - pad, to: v.To + pad, key: v.Key, ws: map[string]bool{}, seqs: map[uint64]bool{}}
	for _, w := range v.Workers {
		f.ws[w] = true
	}
	for _, s := range v.Seqs {
		f.seqs[s] = true
	}
	return f
}

// Keeps reports whether r may be shown in the excerpt.
func (f *ExcerptFilter) Keeps(r *trace.Record) bool {
	if r.T < f.from || r.T > f.to {
		return false
	}
	noise := r.Kind == trace.KindPut || r.Kind == trace.KindTrim || (r.Kind == trace.KindReply && r.Op == engine.OpGetRecords)
	return f.seqs[r.Seq] || (f.key != "" && r.Key == f.key && !noise) || (r.Kind == trace.KindFault && (r.Key == "" || r.Key == f.key)) || (r.Kind == trace.KindProcStop && f.ws[who(r)])
}

// Excerpt returns the records of recs around v: those of its key or its
// workers within the window, widened by pad, at most n lines.
func Excerpt(recs []trace.Record, v Violation, pad time.Duration, n int) []string {
	var out []string
	in := InExcerpt(v, pad)
	seqs := map[uint64]bool{}
	for _, s := range v.Seqs {
		seqs[s] = true
	}
	i := sort.Search(len(recs), func(i int) bool { return recs[i].T >= v.From-pad })
	for ; i < len(recs) && recs[i].T <= v.To+pad; i++ {
		if r := &recs[i]; in.Keeps(r) {
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

func itoa(i int) string { return strconv.Itoa(i) }
