package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/internal/ddbcost"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// Options configure one run. The zero value of a field means "draw it from
// the seed" (the swarm), so Options{Seed: n} is a complete run.
type Options struct {
	Seed uint64
	// Workers and Shards are the initial cluster and stream sizes.
	Workers, Shards int
	// Retention pins how long the stream keeps records (0: a day, or, with
	// the fault class retention, drawn from 30 s to 5 minutes). Records
	// past it are freed: with a retention shorter than the run, the
	// stream's memory stops growing.
	Retention time.Duration
	// Chaos is the length of the chaos phase; Quiet of the healing phase
	// that follows (0: derived from the liveness bound).
	Chaos, Quiet time.Duration
	// Faults is "swarm" (or ""): each seed draws its own mix of fault
	// classes; "none": no faults; or a comma-separated list of classes
	// (see FaultClasses).
	Faults string
	// Engine, if set, adjusts the drawn engine configuration of every
	// process (Owner, Streams, Seed and Trace are set by the simulator).
	Engine func(*engine.Config)
	// Store is the lease table: "dynamodb", "etcd" (see etcd.go), or ""
	// (a swarm draws etcd for a quarter of its worlds; other runs use the
	// DynamoDB table).
	Store string
	// Consumer is how the workers read: "polling" (GetRecords), "fan-out"
	// (enhanced fan-out: SubscribeToShard), or "" (a swarm draws fan-out
	// for 3 worlds in 10; other runs poll).
	Consumer string
	// Assignment is how leases reach the workers: engine.AssignmentAssigner,
	// engine.AssignmentScan, AssignmentMixed (each worker slot draws), or
	// empty: the assigner, or drawn by a swarm.
	Assignment string
	// Renewal is how the assigner-mode workers renew their leases:
	// engine.RenewalPerLease, engine.RenewalSession, RenewalMixed (each
	// worker slot draws), engine.RenewalAuto (the engine's default), or
	// empty: per lease, or drawn by a swarm (see renewal.go).
	Renewal string
	// SubscriptionLifetime pins how long a fan-out subscription lasts (0:
	// drawn, 15 s to 5 minutes).
	SubscriptionLifetime time.Duration
	// Boundary is the boundary seeking (see boundary.go): "on", "off", or
	// "" (a swarm draws it for half its worlds; other runs go without).
	Boundary string
	// Aim is the faults aimed at the engine's operations (see aim.go):
	// "on", "off", or "" (a swarm draws them for AimShare of its worlds;
	// other runs go without).
	Aim string
	// Targeted is the fault aimed at one kind of row or call alone (see
	// targeted.go): "on", "off", or "" (a swarm draws one for TargetShare
	// of its worlds; other runs go without).
	Targeted string
	// KPL is the world's KPL-aggregated records (see kpl.go): "on", "off",
	// or "" (a swarm draws them for 4 worlds in 10; other runs go without).
	KPL string
	// Prices are the DynamoDB on-demand prices Figures.Cost is priced at
	// (zero: ddbcost.DefaultPrices, us-east-1's).
	Prices ddbcost.Prices
	// CheckpointEvery sets the processor's checkpoint cadence, as an
	// application that checkpoints every N records or T seconds does (see
	// processor.go); zero leaves the world's drawn cadence (a checkpoint
	// at a drawn share of batches, and every World.CheckpointPace).
	CheckpointEvery CheckpointCadence
	// Options is the draw of the engine options that EngineParams does
	// not hold (see config.go): "on", "off" (every one at its default,
	// reading from TRIM_HORIZON), or "" (drawn by a swarm; other runs keep
	// them off).
	Options string
	// Combo is the combination of rare things drawn on purpose (see
	// combos.go): a name from Combos, "off", or "" (a swarm draws one for
	// a share of its worlds; other runs go without).
	Combo string
	// Drifts, if set, pins the clock rate of the first len(Drifts) worker
	// slots, each as a fraction of the run's drift bound in [-1, 1]: -1 is
	// the slowest clock the assumptions allow, +1 the fastest. Other slots
	// draw theirs.
	Drifts []float64
	// Actions are scripted actions (a named scenario), run in addition to
	// the drawn fault schedule.
	Actions []Action
	// Schedule, if not nil, replaces the timed faults the seed draws for
	// its fault classes (Result.Drawn); an empty, non-nil Schedule runs
	// none. The boundary, aimed, targeted, combination and etcd draws stay
	// as the seed draws them, and Actions are added as ever. The fault
	// source draws the replaced schedule all the same, so a Schedule equal
	// to the drawn one replays the seed's run exactly. A world file
	// (WorldSpec, simrun -world) carries one.
	Schedule []Action
	// Observe, if set, is called with every trace record as it is
	// recorded (the explorer's coverage map, Coverage). It gets a copy
	// (a pointer would make every record escape to the heap) and cannot
	// change the run.
	Observe func(r trace.Record)
	// Scenario names the scripted actions for the replay command.
	Scenario string
	// Mutation plants a bug by tampering with what the workers send or
	// receive (see Mutations). Empty: none.
	Mutation string
	// Trace, if set, receives the trace as JSON Lines.
	Trace io.Writer
	// KeepTrace returns the records in Result.Trace. Without it the run
	// keeps no records: the checkers run as it goes.
	KeepTrace bool
	// NoExcerpts skips the re-run that a run breaking an invariant makes
	// to fill in its violations' excerpts (Violation.Excerpt), for sweeps
	// that need only verdicts (the soak).
	NoExcerpts bool
	// MaxEvents stops a run that processes more events (0: no limit).
	MaxEvents uint64
	// AtEnd, if set, is called once when the run's events are done,
	// before its final checks, with the world still in memory (simrun
	// -memstats reads the live heap there). It cannot change the run.
	AtEnd func()
	// LinBudget bounds the search of each window of the linearizability
	// check (Lin), which runs as the run goes (0:
	// linearizability.DefaultBudget; negative: no check). A key whose
	// window needs more is unknown (Result.Lin.Unknown): not a
	// violation, and not a pass.
	LinBudget int

	// pinAim and pinTarget, set by tests, replace the drawn aimed and
	// targeted faults of the world.
	pinAim    *AimWorld
	pinTarget *TargetWorld
	// moments, set by the explorer, keeps a sample of the operations'
	// windows in Result.Moments (explore_moments.go).
	moments bool

	// excerptsOf, set on the re-run that fills in excerpts, are the
	// violations to show: with it the run keeps only the records their
	// excerpts may show (check.InExcerpt).
	excerptsOf []check.Violation
}

// Lin is the name of the invariant "the lease table's history is
// linearizable" (package linearizability).
const Lin = "Lin"

// LinResult is the outcome of a run's linearizability check
// (linearizability.Online: each key's calls in windows cut where none is
// in flight). Like the rest of a Result, it is a function of the options.
type LinResult struct {
	// Checked: the check ran (it does unless Options.LinBudget < 0);
	// Skipped: it was disabled.
	Checked, Skipped bool
	// Ok: every key's history is linearizable. Unknown: the check of some
	// key ran out of budget (TimedOut keys); that is not a violation.
	Ok, Unknown bool
	// Illegal are the keys whose histories are not linearizable (a Lin
	// violation), sorted.
	Illegal  []string
	TimedOut int
	// Ops is the number of calls checked, Keys the number of keys,
	// UnknownWrites the writes of unknown outcome among the calls, Left
	// the calls the check left out (throttled ones). Scans are not in the
	// history at all: the trace does not carry the rows they returned.
	Ops, Keys, UnknownWrites, Left int
}

func (l LinResult) String() string {
	switch {
	case l.Skipped:
		return "not checked (disabled)"
	case !l.Checked:
		return "not checked"
	case len(l.Illegal) > 0:
		return fmt.Sprintf("NOT linearizable on %d of %d keys (%s); %d calls checked, %d writes of unknown outcome, %d left out",
			len(l.Illegal), l.Keys, keyList(l.Illegal), l.Ops, l.UnknownWrites, l.Left)
	case l.Unknown:
		return fmt.Sprintf("unknown: the check of %d of %d keys ran out of budget (not a violation); %d calls checked, %d writes of unknown outcome, %d left out",
			l.TimedOut, l.Keys, l.Ops, l.UnknownWrites, l.Left)
	}
	return fmt.Sprintf("linearizable: %d keys, %d calls checked, %d writes of unknown outcome, %d left out", l.Keys, l.Ops, l.UnknownWrites, l.Left)
}

// FaultClasses are the fault classes a swarm draws from. Those in
// OutsideClasses break the engine's stated assumptions: a run with them may
// break S1 (only).
var FaultClasses = []string{
	"clock-steps", "latency", "loss", "dup", "partition", "clog",
	"crash", "pause", "shutdown", "scale", "rolling",
	"table-throttle", "table-errors", "stale-reads",
	"split", "merge", "stream-throttle", "expired-iterators", "retention", "bursts", "idle-shards",
	"slow-processor", "failed-batches",
}

// OutsideClasses are the fault classes outside the assumptions.
var OutsideClasses = []string{"drift-beyond", "long-pause", "dup-owner"}

// Mutations are the planted bugs the simulator can apply without changing
// the engine.
var Mutations = map[string]string{
	"unfenced-checkpoint":  "checkpoint writes reach the table without their owner/counter condition",
	"unfenced-take":        "takes reach the table without their counter condition",
	"unfenced-assign":      "the assigner's writes (assignments, handoff requests) reach the table without their owner/counter condition",
	"orphan-children":      "ListShards and GetRecords hide every shard's parents",
	"ignore-second-parent": "ListShards and GetRecords hide the second parent of merges",
	"skip-on-resume":       "AT_ and AFTER_SEQUENCE_NUMBER iterators start one record late (after the record that follows the position)",
}

// EngineMutationPrefix marks a Mutation planted inside the engine rather
// than by tampering with its calls. Those exist only in binaries built with
// the shardlease_mutations tag (package internal/planted); without it,
// Mutations lists none and Run rejects them.
const EngineMutationPrefix = "engine:"

// MutationTag is the build tag that builds the engine's planted bugs in.
const MutationTag = planted.Tag

func init() {
	for name, desc := range planted.Bugs() {
		Mutations[EngineMutationPrefix+name] = "in the engine: " + desc
	}
}

// checkMutation reports a Mutation that this binary cannot plant.
func checkMutation(m string) error {
	if m == "" {
		return nil
	}
	if _, ok := Mutations[m]; ok {
		return nil
	}
	if name, ok := strings.CutPrefix(m, EngineMutationPrefix); ok {
		return fmt.Errorf("sim: mutation %q: %w", m, planted.Set(&engine.Config{}, name))
	}
	return fmt.Errorf("sim: unknown mutation %q", m)
}

// Roles an action may target (Action.Role), resolved when it happens:
// the worker that holds the assigner row, one that holds a lease (drawn
// among the held leases), or one that observes a lease another holds
// (drawn among the live workers other than the holder of a drawn held
// lease that hold the fewest leases: in scan mode the likeliest taker; in
// assigned mode the assigner or a deputy watches every lease).
const (
	RoleAssigner = "assigner"
	RoleHolder   = "holder"
	RoleObserver = "observer"
	// RoleMember: the live worker other than the assigner's holder that
	// holds the most leases (the first in table order of those tied): the
	// member an assigner balancing for a new one moves leases from.
	RoleMember = "member"
)

// ActionKind names a scripted or drawn action.
type ActionKind string

// The actions.
const (
	ActCrash          ActionKind = "crash"      // Worker (or Shard's owner); restart after Dur (0: at healing); NewOwner
	ActRestart        ActionKind = "restart"    // Worker (if down); NewOwner
	ActPause          ActionKind = "pause"      // Worker (or Shard's owner) for Dur; MidAct holds the effects of the step in progress
	ActShutdown       ActionKind = "shutdown"   // Worker (or Shard's owner), graceful; restart after Dur (0: never)
	ActScaleOut       ActionKind = "scale-out"  // a new worker
	ActScaleIn        ActionKind = "scale-in"   // Worker shuts down for good
	ActPartition      ActionKind = "partition"  // Workers from Target ("table", "stream", "both") in Dir ("both", "request", "reply") for Dur
	ActClog           ActionKind = "clog"       // Workers' links to Target get Extra latency for Dur
	ActClockStep      ActionKind = "clock-step" // Worker's wall clock jumps by Extra (may be negative); back again after Dur (0: never)
	ActSplit          ActionKind = "split"      // Shard ("" any open shard)
	ActMerge          ActionKind = "merge"      // Shard and its neighbour ("" any adjacent pair)
	ActTableThrottle  ActionKind = "table-throttle"
	ActStreamThrottle ActionKind = "stream-throttle" // Value of the calls throttled for Dur
	ActBurst          ActionKind = "burst"           // put rate times Value for Dur
	// ActSDKRetry: for Dur, a write of kind Target (a trace.Write* reason
	// such as "take"; "" for every write) that applied has its reply lost
	// and is retried by the SDK with chance Value: the retry fails its
	// condition, and the caller must resolve the ambiguity.
	ActSDKRetry ActionKind = "sdk-retry"
	ActDupOwner ActionKind = "dup-owner" // a second live process with Worker's owner id (outside the assumptions)
)

// Action is one timed action of a schedule. A crash, pause or shutdown
// with Shard set targets the worker whose live process owns that shard's
// lease in the table at that moment (Worker is ignored); when no live
// process owns it, the action does nothing. A crash, pause, shutdown or
// clock step with Role set targets a worker by what it does at that
// moment (see the Role* constants; Worker is ignored).
type Action struct {
	At       time.Duration
	Kind     ActionKind
	Worker   int
	Workers  []int
	Shard    string
	Role     string
	Target   string
	Dir      string
	Dur      time.Duration
	Extra    time.Duration
	Value    float64
	NewOwner bool
	MidAct   bool
}

func (a Action) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%8.3fs %s", a.At.Seconds(), a.Kind)
	switch a.Kind {
	case ActCrash, ActPause, ActShutdown, ActClockStep, ActCutAfterRenew, ActCrashAfterRenew:
		switch {
		case a.Role != "":
			b.WriteString(" the " + a.Role)
		case a.Shard != "":
			b.WriteString(" owner-of")
		default:
			fmt.Fprintf(&b, " w%d", a.Worker)
		}
	case ActRestart, ActScaleIn, ActDupOwner:
		fmt.Fprintf(&b, " w%d", a.Worker)
	}
	if len(a.Workers) > 0 {
		fmt.Fprintf(&b, " workers=%v", a.Workers)
	}
	if a.Shard != "" {
		b.WriteString(" " + a.Shard)
	}
	if a.Target != "" {
		b.WriteString(" target=" + a.Target)
	}
	if a.Dir != "" {
		b.WriteString(" dir=" + a.Dir)
	}
	if a.Dur != 0 {
		fmt.Fprintf(&b, " for %v", a.Dur)
	}
	if a.Extra != 0 {
		fmt.Fprintf(&b, " by %v", a.Extra)
	}
	if a.Value != 0 {
		b.WriteString(" x" + strconv.FormatFloat(a.Value, 'g', 3, 64))
	}
	if a.NewOwner {
		b.WriteString(" new-owner")
	}
	if a.MidAct {
		b.WriteString(" mid-act")
	}
	return b.String()
}

// Figures are the measurements every run reports. Handoffs are changes
// of acting process on a shard (see check.Figures): failovers follow an
// unplanned end of the old owner's tenure (its lease lost or expired, its
// process crashed, killed, paused or cut off), planned moves a release
// for a graceful shutdown or a cooperative handoff. The failover and gap
// times run from the old owner's last act to the new owner's first.
type Figures struct {
	// LeaseDuration is the world's lease duration (the engine's, after
	// defaults): the unit of the failover targets.
	LeaseDuration time.Duration
	// Failovers counts the unplanned handoffs that left a gap;
	// FailoverP50, FailoverP99 and FailoverMax are their gaps' percentiles.
	Failovers   int
	FailoverP50 time.Duration
	FailoverP99 time.Duration
	FailoverMax time.Duration
	// PlannedMoves counts the planned handoffs; HandoffGapP50/P99/Max are
	// the percentiles of their gaps; RedeliveriesPerPlannedMove the
	// records the new owners received again after them (0 when the old
	// owners' processors checkpointed what they had received).
	PlannedMoves int
	// CheckpointedMoves counts the planned moves whose processor had
	// checkpointed every record it received (G1: they re-deliver none).
	CheckpointedMoves          int
	HandoffGapP50              time.Duration
	HandoffGapP99              time.Duration
	HandoffGapMax              time.Duration
	RedeliveriesPerPlannedMove float64
	// Handoffs counts every change of acting process;
	// RedeliveriesPerHandoff the records re-delivered per handoff.
	Handoffs               int
	RedeliveriesPerHandoff float64
	TableOpsPerShardHour   float64
	TableRowsPerShardHour  float64 // lease-table rows read (see check.Figures.RowsRead)
	StreamOpsPerShardHour  float64
	Puts                   int
	LostToRetention        int
	// Cost is what the lease table's calls would cost on DynamoDB
	// on-demand (cost.go); not Measured when the leases live in etcd, or
	// no shard was open.
	Cost TableCost
	// Bounded counts the failovers, planned moves and assigner takeovers
	// held to their derived bounds (T1, T2, T3: those whose path the trace
	// shows undisturbed).
	Bounded [3]int
}

// Result is the outcome of one run.
type Result struct {
	World    World
	Schedule []Action
	// Drawn is the part of Schedule drawn for the world's fault classes
	// (or Options.Schedule, which replaced it), in the order drawn: what
	// the explorer mutates.
	Drawn []Action
	// Inside is true if the run stayed inside the engine's assumptions;
	// Outside lists why not.
	Inside  bool
	Outside []string
	// TraceHash is the FNV-64a hash of the canonical encoding of every
	// record.
	TraceHash      uint64
	Events         uint64
	Records        int
	VirtualSeconds float64
	// Violations break the run. Tolerated are S1 violations (and S3
	// violations of its "new owner starts at or after the stored
	// checkpoint" clause, which single ownership implies) of a run outside
	// the assumptions.
	Violations []check.Violation
	Tolerated  []check.Violation
	Figures    Figures
	// Lin is the outcome of the linearizability check (an Illegal key
	// is also in Violations, as invariant Lin).
	Lin LinResult
	// Ops are the run's operations (see ops.go): per kind, the windows
	// between their steps and those a fault struck.
	Ops []OpCount
	// Moments is a sample of the operations' windows in the chaos phase,
	// kept only for the explorer's runs (explore_moments.go).
	Moments []OpMoment
	Trace   []trace.Record
	Final   []engine.Lease
	Replay  string
}

// OK reports whether the run broke no invariant.
func (r *Result) OK() bool { return len(r.Violations) == 0 }

// Tier returns "inside" or "outside" the assumptions.
func (r *Result) Tier() string {
	if r.Inside {
		return "inside"
	}
	return "outside"
}

// Summary returns the human summary of the run: the drawn world, the fault
// schedule, the tier, the figures and the violations.
func (r *Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %s\n", r.World.Seed, r.World)
	fmt.Fprintf(&b, "tier: %s", r.Tier())
	if !r.Inside {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.Outside, "; "))
	}
	fmt.Fprintf(&b, "\ntrace hash: %016x, %d records, %d events, %.0f virtual seconds\n", r.TraceHash, r.Records, r.Events, r.VirtualSeconds)
	f := r.Figures
	fmt.Fprintf(&b, "figures: lease %v; failovers %d (p50 %v, p99 %v, max %v), planned moves %d (gap p50 %v, p99 %v, max %v; re-deliveries/move %.2f), handoffs %d, re-deliveries/handoff %.2f, table ops/shard-hour %.0f, stream ops/shard-hour %.0f, puts %d, lost to retention %d\n",
		f.LeaseDuration, f.Failovers, f.FailoverP50, f.FailoverP99, f.FailoverMax, f.PlannedMoves, f.HandoffGapP50, f.HandoffGapP99, f.HandoffGapMax, f.RedeliveriesPerPlannedMove,
		f.Handoffs, f.RedeliveriesPerHandoff, f.TableOpsPerShardHour, f.StreamOpsPerShardHour, f.Puts, f.LostToRetention)
	if f.Cost.Measured {
		fmt.Fprintf(&b, "table cost (DynamoDB on-demand): %s\n", f.Cost)
	}
	fmt.Fprintf(&b, "lin: %s\n", r.Lin)
	fmt.Fprintf(&b, "operations (windows struck/faulted/all): %s\n", OpCountsString(r.Ops))
	fmt.Fprintf(&b, "schedule (%d actions):\n", len(r.Schedule))
	for _, a := range r.Schedule {
		b.WriteString("  " + a.String() + "\n")
	}
	if len(r.Violations) == 0 {
		b.WriteString("no violations\n")
	}
	for _, v := range r.Violations {
		b.WriteString(FormatViolation(v))
	}
	for _, v := range r.Tolerated {
		b.WriteString("tolerated (outside the assumptions): " + v.String() + "\n")
	}
	if r.Replay != "" {
		b.WriteString("replay: " + r.Replay + "\n")
	}
	return b.String()
}

// FormatViolation renders a violation with its excerpt and replay line.
func FormatViolation(v check.Violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION %s shard=%s workers=%v window=[%v, %v] seed=%d\n  %s\n", v.Invariant, v.Key, v.Workers, v.From, v.To, v.Seed, v.Detail)
	for _, l := range v.Excerpt {
		b.WriteString("    " + l + "\n")
	}
	if v.Replay != "" {
		b.WriteString("  replay: " + v.Replay + "\n")
	}
	return b.String()
}

// ReplayCommand returns the command line that replays a run of o.
func ReplayCommand(o Options) string {
	s := "go run ./cmd/simrun -seed " + strconv.FormatUint(o.Seed, 10)
	if o.Workers != 0 {
		s += " -workers " + strconv.Itoa(o.Workers)
	}
	if o.Shards != 0 {
		s += " -shards " + strconv.Itoa(o.Shards)
	}
	if o.Chaos != 0 {
		s += " -chaos " + o.Chaos.String()
	}
	if o.Retention != 0 {
		s += " -retention " + o.Retention.String()
	}
	if o.Quiet != 0 {
		s += " -quiet " + o.Quiet.String()
	}
	if o.Faults != "" && o.Faults != "swarm" {
		s += " -faults " + o.Faults
	}
	if o.Renewal != "" {
		s += " -renewal " + o.Renewal
	}
	if o.Assignment != "" {
		s += " -assignment " + o.Assignment
	}
	if o.Consumer != "" {
		s += " -consumer " + o.Consumer
	}
	if o.Store != "" {
		s += " -store " + o.Store
	}
	if o.SubscriptionLifetime != 0 {
		s += " -subscription-lifetime " + o.SubscriptionLifetime.String()
	}
	if o.Boundary != "" {
		s += " -boundary " + o.Boundary
	}
	if o.Aim != "" {
		s += " -aim " + o.Aim
	}
	if o.Targeted != "" {
		s += " -targeted " + o.Targeted
	}
	if o.KPL != "" {
		s += " -kpl " + o.KPL
	}
	if o.Options != "" {
		s += " -options " + o.Options
	}
	if o.Combo != "" {
		s += " -combo " + o.Combo
	}
	if !o.CheckpointEvery.IsZero() {
		s += " -checkpoint-every " + o.CheckpointEvery.String()
	}
	if o.Scenario != "" {
		s += " -scenario " + o.Scenario
	}
	if o.Mutation != "" {
		s += " -mutation " + o.Mutation
		if strings.HasPrefix(o.Mutation, EngineMutationPrefix) {
			s = strings.Replace(s, "go run ", "go run -tags "+MutationTag+" ", 1)
		}
	}
	return s
}
