// Package livecheck checks the merged history of a live run: it runs the
// simulator's checkers (sim/check: S2-S6, and S1 as information, since
// real processes have no true time) and the linearizability check of the
// lease-table history (Lin, package linearizability), and measures what a live run with
// injected faults must show: records produced, lost and delivered more
// than once (and why), checkpoint regressions in the write logs, writes
// that landed after their writer lost the lease, deliveries by a paused
// process after it resumed, failover time per kill, takeover time per
// pause, and records re-delivered per handoff. G1 (sim/check.CheckG1)
// checks graceful handoffs: after a release for a shutdown or a
// cooperative handoff, the next owner starts after what the old owner's
// processor checkpointed at shutdown.
//
// Faults are read from KindFault records that a harness writes (see the
// Fault* reasons), naming the target process by Owner and Proc.
package livecheck

import (
	"fmt"
	"sort"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// Reasons of KindFault records. A fault on one process names it (Owner,
// Proc); a fault on every process (throttling) has Proc -1.
const (
	FaultKill  = "sigkill" // the process was killed with SIGKILL
	FaultStop  = "sigstop" // the process was paused
	FaultCont  = "sigcont" // the paused process was resumed
	FaultBegin = "begin"   // "begin <what>": a fault starts (link cut, latency, throttling)
	FaultEnd   = "end"     // "end <what>": it ends
)

// Options are the facts of the run the history does not hold.
type Options struct {
	// Final is the lease table at the end; FinalKnown says it was read.
	Final      []engine.Lease
	FinalKnown bool
	// Malformed are the rows of the final table that are not leases (see
	// Report.Malformed).
	Malformed []engine.MalformedRow
	// Grace exempts records put in the last Grace of the history from the
	// delivery and coverage checks (0: every record must be delivered).
	Grace time.Duration
	// MaxPerCheck caps the violations reported per invariant (0: 20).
	MaxPerCheck int
	// LinSkew widens every lease-table call's window by this much on each
	// side for the linearizability check (Lin): the clock-skew bound
	// between the recording processes (0: none; see DefaultLinSkew).
	LinSkew time.Duration
	// LinTimeout bounds the linearizability check (0: none). Keys not
	// decided in time make Lin unknown, not failed.
	LinTimeout time.Duration
}

// Report is the result of a check.
type Report struct {
	Duration  time.Duration
	Processes int
	Workers   int
	Stops     map[string]int // worker processes by how they ended: exit, crash, vanished
	Writes    history.WriteCounts
	// WritesByClass counts the lease-table writes sent by class (renew,
	// checkpoint, take, ...); WritesPerShardHour divides them by the
	// shard-hours the history shows open (Measure.ShardHours).
	WritesByClass      map[string]int
	WritesPerShardHour map[string]float64

	// Records are user records: a KPL aggregate put counts as its user
	// records (Aggregated of Produced), each followed at (sequence,
	// sub-sequence).
	Produced      int
	Aggregated    int // user records of KPL aggregates, among Produced
	Delivered     int // distinct records received at least once
	Lost          int // never received
	LostExamples  []string
	Uncovered     int // received but not covered by the final checkpoint
	UncoveredEx   []string
	BeforeLatest  int // put before the first LATEST iterator of their shard was taken, never received (not expected)
	NotRequired   int // put within Grace of the end
	Duplicated    int // records received more than once
	Extra         int // receptions beyond the first
	DupCauses     map[string]int
	DupOther      []string
	ChildrenMerge int // merged children whose records were received (both parents checked by S5)
	ChildrenSplit int
	// ChildEarly counts records put into a child shard before any worker
	// held the child's lease; ChildEarlyGot those of them delivered.
	ChildEarly    int
	ChildEarlyGot int

	// Unrecorded counts records received that no recorded producer put
	// (the stream held records from earlier or unrecorded producers), in
	// UnrecordedShards: the check cannot know whether all such records
	// were delivered, and checks only the records it saw put.
	Unrecorded       int
	UnrecordedShards []string

	CheckpointRegressions int // stored checkpoints that went back, from the write logs
	RegressionEx          []string
	LateWrites            int // writes that landed although sent after the writer lost or released the lease
	LateEx                []string

	Kills []Failover
	// Vanished are processes that ended without saying so and without a
	// harness recording a kill (killed by hand, crashed): failover is
	// measured from their last record.
	Vanished []Failover
	Pauses   []Pause
	Handoffs HandoffStats

	Losses        map[string]int // lease losses by cause
	BalanceSteals int
	// HealthyLostToOthers counts leases that a worker under no injected
	// fault lost to another worker's write other than a balance steal
	// (information: a starved worker is unhealthy without a fault).
	HealthyLostToOthers int
	HealthyLostEx       []string
	HealthyExpired      int // leases a worker under no injected fault lost because its renewals did not apply
	// EarlyTakes counts takes of an "expired" lease sent less than a lease
	// duration after the holder's last applied write was sent: a stale
	// view taking a lease its holder could still use (must be zero).
	EarlyTakes  int
	EarlyTakeEx []string

	// Malformed are the rows of the final lease table that could not be
	// read as leases. The engine skips them and never changes them, so a
	// shard whose row is malformed is never consumed: a data problem an
	// operator must fix, and the check fails on it.
	Malformed []engine.MalformedRow

	Invariants map[string]int // violations per invariant (S1 is informational; Lin: keys not linearizable)
	Violations []check.Violation
	Measure    check.Figures
	// Longest are the longest handoff gaps, unplanned and planned (see
	// check.HandoffGap), longest first.
	Longest []HandoffGap
	// Lin is the linearizability check of the lease-table history.
	Lin LinReport

	linHist    []linearizability.Op // the history Lin checked, for VisualizeLin
	linTimeout time.Duration
}

// Failover is one SIGKILL: how long until another process acted on each
// shard the killed one had been acting on.
type Failover struct {
	At      time.Duration
	Who     string
	Shards  int
	Max     time.Duration
	Mean    time.Duration
	Pending int // shards nobody acted on again within the history
}

// Pause is one SIGSTOP/SIGCONT, or one cut of a process's link to the
// table: the takeover time of each shard the process had been acting on,
// and what it did on them once its own view of the lease had expired.
type Pause struct {
	Kind        string // "pause" or "cut"
	At, Resumed time.Duration
	Who         string
	Shards      int
	Max, Mean   time.Duration
	Pending     int
	// Expired counts the shards whose lease passed the process's own
	// act-until time; Zombie counts what it delivered, received or
	// checkpointed on them after that, before taking them again (it must
	// be zero).
	Expired  int
	Zombie   int
	ZombieEx []string
}

// HandoffStats summarises re-deliveries at handoffs (a shard's acting
// process changed).
type HandoffStats struct {
	Count       int
	Redelivered int
	Max         int
	ByCause     map[string]HandoffCause
}

// HandoffCause is the re-delivery figures of handoffs with one cause.
type HandoffCause struct {
	Count, Redelivered, Max int
}

// Failed reports whether the report shows a broken guarantee (S1 is
// informational and never fails a run).
func (r *Report) Failed() bool {
	for inv, n := range r.Invariants {
		if inv != check.S1 && n > 0 {
			return true
		}
	}
	if len(r.Malformed) > 0 || r.Lost > 0 || r.Uncovered > 0 || r.CheckpointRegressions > 0 || r.LateWrites > 0 || r.EarlyTakes > 0 || r.DupCauses["other"] > 0 {
		return true
	}
	for _, p := range r.Pauses {
		if p.Zombie > 0 {
			return true
		}
	}
	return false
}

// Check checks a merged history.
func Check(m history.Merged, o Options) *Report {
	recs := m.Records
	rep := &Report{Duration: m.End, Writes: m.Writes, Stops: map[string]int{}, DupCauses: map[string]int{},
		Losses: map[string]int{}, Invariants: map[string]int{}, Handoffs: HandoffStats{ByCause: map[string]HandoffCause{}},
		Malformed: o.Malformed}
	procs := map[int32]*history.Proc{}
	for i := range m.Procs {
		p := &m.Procs[i]
		procs[p.ID] = p
		rep.Processes++
		if p.Config["role"] == "worker" {
			rep.Workers++
			rep.Stops[p.StopReason]++
		}
	}

	// S4 is given the records without those put before the first LATEST
	// iterator of their shard (outside the at-least-once contract).
	excused, notRequired := latestExcused(recs, o.Grace, m.End)
	rep.NotRequired = notRequired
	s4recs := recs
	if len(excused) > 0 {
		s4recs = make([]trace.Record, 0, len(recs))
		for i := range recs {
			if !excused[recs[i].Seq] {
				s4recs = append(s4recs, recs[i])
			} else {
				rep.BeforeLatest += usersOf(&recs[i])
			}
		}
	}
	s4recs, rep.Unrecorded, rep.UnrecordedShards = unrecorded(s4recs)
	co := check.Options{End: m.End, Heal: 1, Bound: max(o.Grace, 1), MaxPerCheck: o.MaxPerCheck}
	h := check.History{Records: recs, Final: o.Final, FinalKnown: o.FinalKnown}
	var vs []check.Violation
	vs = append(vs, check.CheckS1(recs, co)...)
	vs = append(vs, check.CheckS2(recs, co)...)
	vs = append(vs, check.CheckS3(h, co)...)
	s4, _ := check.CheckS4(check.History{Records: s4recs, Final: o.Final, FinalKnown: o.FinalKnown}, co)
	vs = append(vs, s4...)
	vs = append(vs, check.CheckS5(recs, co)...)
	vs = append(vs, check.CheckS6(recs, co)...)
	vs = append(vs, check.CheckG1(recs, co)...)
	for _, inv := range []string{check.S1, check.S2, check.S3, check.S4, check.S5, check.S6, check.G1} {
		rep.Invariants[inv] = 0
	}
	for i := range vs {
		rep.Invariants[vs[i].Invariant]++
		vs[i].Excerpt = check.Excerpt(recs, vs[i], 2*time.Second, 24)
	}
	rep.Violations = vs
	rep.Measure = check.Measure(recs, m.End)
	tableWrites(recs, rep)
	rep.Longest = longestGaps(check.Tenures(recs), procs, 3)
	checkLin(recs, o, rep)

	d := newDeliveries(recs, excused)
	d.figures(rep, o, m.End, shardEnds(recs))
	d.childFigures(recs, rep)
	writeLogFigures(recs, rep)
	faultFigures(recs, procs, rep)
	handoffFigures(recs, d, procs, rep)
	lossFigures(recs, procs, rep)
	return rep
}

// latestExcused returns the puts (by record Seq) that were sent before the
// first LATEST iterator (or subscription) of their shard was answered and that nobody
// received: a LATEST start does not promise them. So are those of a shard
// that nobody read, resharded before the application's first read, whose
// children started at LATEST (or are such shards themselves): the engine
// gives a shard already closed when it first lists it at LATEST no lease.
// It also counts the puts within grace of the end.
func latestExcused(recs []trace.Record, grace, end time.Duration) (map[uint64]bool, int) {
	firstLatest := map[string]time.Duration{}
	received := map[string][][2]userRec{}
	firstRead := time.Duration(-1)
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Kind == trace.KindReply && (r.Op == engine.OpGetIterator || r.Op == engine.OpSubscribe) && r.Outcome == trace.OutcomeOK:
			if firstRead < 0 {
				firstRead = r.T
			}
			if _, ok := firstLatest[r.Key]; !ok {
				if r.Reason == string(engine.IterLatest) {
					firstLatest[r.Key] = r.T
				} else {
					firstLatest[r.Key] = -1 // the first reader did not start at LATEST
				}
			}
		case r.Kind == trace.KindReceived && r.Count > 0:
			received[r.Key] = append(received[r.Key], [2]userRec{firstOf(r), lastOf(r)})
		}
	}
	// shards closed before the first read, nobody read, whose children
	// (by the same rule, recursively) started at LATEST
	children := map[string][]string{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindShardCreated {
			continue
		}
		for _, p := range [2]string{r.Parent, r.Parent2} {
			if p != "" && (firstRead < 0 || r.T < firstRead) {
				children[p] = append(children[p], r.Key)
			}
		}
	}
	skipped := map[string]bool{}
	var skippedShard func(key string, depth int) bool
	skippedShard = func(key string, depth int) bool {
		if _, read := firstLatest[key]; read || depth > len(children) {
			return false
		}
		for _, c := range children[key] {
			if t, ok := firstLatest[c]; ok && t >= 0 || skippedShard(c, depth+1) {
				return true
			}
		}
		return false
	}
	for p := range children {
		skipped[p] = skippedShard(p, 0)
	}
	out := map[uint64]bool{}
	notRequired := 0
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindPut {
			continue
		}
		if grace > 0 && r.T > end-grace {
			notRequired += usersOf(r)
		}
		t, ok := firstLatest[r.Key]
		if skipped[r.Key] {
			ok, t = true, end+1 // every put of it came before its children's start
		}
		if !ok || t < 0 || r.Sent >= t {
			continue
		}
		// (a batch that holds any user record of the put: a LATEST
		// iterator starts at a Kinesis record, aggregates whole)
		got := false
		lo, hi := userRec{r.First, 0}, userRec{r.First, int64(usersOf(r) - 1)}
		for _, b := range received[r.Key] {
			if cmpUser(b[0], hi) <= 0 && cmpUser(lo, b[1]) <= 0 {
				got = true
				break
			}
		}
		if !got {
			out[r.Seq] = true
		}
	}
	return out, notRequired
}

// ---- deliveries ----

type put struct {
	seq        userRec
	aggregated bool // a user record of a KPL aggregate
	t          time.Duration
	recs       uint64
	got        []reception
}

type reception struct {
	proc int32
	t    time.Duration
	run  int // the processing run (Initialized) of proc on the key
}

type deliveries struct {
	puts map[string][]*put // by key, in sequence order
	// runs of (proc,key): start checkpoint of each Initialized, and the
	// times of failed batches
	runStart map[runKey]engine.Checkpoint
	failedAt map[runKey][]time.Duration
}

type runKey struct {
	proc int32
	key  string
	run  int
}

func newDeliveries(recs []trace.Record, excused map[uint64]bool) *deliveries {
	d := &deliveries{puts: map[string][]*put{}, runStart: map[runKey]engine.Checkpoint{}, failedAt: map[runKey][]time.Duration{}}
	for i := range recs {
		r := &recs[i]
		if r.Kind == trace.KindPut && !excused[r.Seq] {
			for sub := range usersOf(r) {
				d.puts[r.Key] = append(d.puts[r.Key], &put{seq: userRec{r.First, int64(sub)}, aggregated: r.Count > 1, t: r.T, recs: r.Seq})
			}
		}
	}
	for _, ps := range d.puts {
		sort.SliceStable(ps, func(i, j int) bool { return cmpUser(ps[i].seq, ps[j].seq) < 0 })
	}
	run := map[[2]string]int{}
	rk := func(r *trace.Record) [2]string { return [2]string{fmt.Sprint(r.Proc), r.Key} }
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindInitialized:
			run[rk(r)]++
			d.runStart[runKey{r.Proc, r.Key, run[rk(r)]}] = r.Checkpoint
		case trace.KindDone:
			if r.Reason == "failed" {
				k := runKey{r.Proc, r.Key, run[rk(r)]}
				d.failedAt[k] = append(d.failedAt[k], r.T)
			}
		case trace.KindReceived:
			ps := d.puts[r.Key]
			if r.Count == 0 || ps == nil {
				continue
			}
			first, last := firstOf(r), lastOf(r)
			lo := sort.Search(len(ps), func(j int) bool { return cmpUser(ps[j].seq, first) >= 0 })
			for j := lo; j < len(ps) && cmpUser(ps[j].seq, last) <= 0; j++ {
				ps[j].got = append(ps[j].got, reception{proc: r.Proc, t: r.T, run: run[rk(r)]})
			}
		}
	}
	return d
}

func (d *deliveries) keys() []string {
	keys := make([]string, 0, len(d.puts))
	for k := range d.puts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (d *deliveries) figures(rep *Report, o Options, end time.Duration, ended map[string]bool) {
	final := map[string]engine.Lease{}
	for _, l := range o.Final {
		final[l.Key] = l
	}
	for _, key := range d.keys() {
		ps := d.puts[key]
		lastGot := -1
		for i, p := range ps {
			rep.Produced++
			if p.aggregated {
				rep.Aggregated++
			}
			required := o.Grace <= 0 || p.t <= end-o.Grace
			if len(p.got) == 0 {
				if required {
					rep.Lost++
					if len(rep.LostExamples) < 10 {
						rep.LostExamples = append(rep.LostExamples, fmt.Sprintf("%s/%s put at %v", key, p.seq, p.t.Round(time.Millisecond)))
					}
				}
				continue
			}
			rep.Delivered++
			lastGot = i
			if len(p.got) > 1 {
				rep.Duplicated++
				for k := 1; k < len(p.got); k++ {
					rep.Extra++
					cause, detail := d.dupCause(key, p, k)
					rep.DupCauses[cause]++
					if cause == "other" && len(rep.DupOther) < 10 {
						rep.DupOther = append(rep.DupOther, detail)
					}
				}
			}
		}
		if !o.FinalKnown || lastGot < 0 {
			continue
		}
		l, ok := final[key]
		covered := 0
		switch {
		case !ok:
			// a finished shard's row is deleted once its children started
			if ended[key] {
				covered = lastGot + 1
			}
		case l.Checkpoint.IsShardEnd():
			covered = lastGot + 1
		case l.Checkpoint.IsStart():
		default:
			covered = sort.Search(len(ps), func(j int) bool { return cmpUser(ps[j].seq, atCheckpoint(l.Checkpoint)) > 0 })
		}
		for j := covered; j <= lastGot; j++ {
			if len(ps[j].got) > 0 && (o.Grace <= 0 || ps[j].t <= end-o.Grace) {
				rep.Uncovered++
				if len(rep.UncoveredEx) < 10 {
					rep.UncoveredEx = append(rep.UncoveredEx, fmt.Sprintf("%s/%s (final checkpoint %s)", key, ps[j].seq, l.Checkpoint))
				}
			}
		}
	}
}

// shardEnds returns the keys whose row stored SHARD_END at some point.
func shardEnds(recs []trace.Record) map[string]bool {
	out := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		if r.Kind == trace.KindApply && r.Checkpoint.IsShardEnd() {
			out[r.Key] = true
		}
	}
	return out
}

// dupCause classifies the k-th reception (k >= 1) of put p.
func (d *deliveries) dupCause(key string, p *put, k int) (string, string) {
	g, prev := p.got[k], p.got[k-1]
	start := d.runStart[runKey{g.proc, key, g.run}]
	where := fmt.Sprintf("%s/%s received by process %d at %v", key, p.seq, g.proc, g.t.Round(time.Millisecond))
	if !start.IsSentinel() && start.Sequence != "" && cmpUser(p.seq, atCheckpoint(start)) <= 0 {
		return "other", where + " although its processing started after checkpoint " + start.String()
	}
	if prev.proc == g.proc && prev.run == g.run {
		for _, t := range d.failedAt[runKey{g.proc, key, g.run}] {
			if t >= prev.t && t <= g.t {
				return "failed-batch-retry", where
			}
		}
		return "other", where + " twice in one processing run without a failed batch"
	}
	return "after-checkpoint", where
}

// childFigures counts the records put into child shards before anyone held
// their lease, and how many of them were delivered: a child starts at its
// first record, whatever the initial position.
func (d *deliveries) childFigures(recs []trace.Record, rep *Report) {
	child := map[string]bool{}
	firstHeld := map[string]time.Duration{}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindShardCreated:
			if r.Parent != "" || r.Parent2 != "" {
				child[r.Key] = true
			}
		case trace.LeaseAcquired:
			if _, ok := firstHeld[r.Key]; !ok {
				firstHeld[r.Key] = r.T
			}
		}
	}
	for key := range child {
		t, held := firstHeld[key]
		for _, p := range d.puts[key] {
			if !held || p.t < t {
				rep.ChildEarly++
				if len(p.got) > 0 {
					rep.ChildEarlyGot++
				}
			}
		}
	}
}
