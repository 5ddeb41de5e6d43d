package driversim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/sim/check"
)

// Options choose a run. The zero value of each field means "drawn from
// the seed".
type Options struct {
	// Seed determines the world, the fault schedule and every random
	// choice of the run (see the package doc for what it cannot fix).
	Seed uint64
	// Workers is the number of consumers running at the start (drawn: 2
	// to 4).
	Workers int
	// Shards is the number of shards of the stream at the start (drawn: 1
	// to 6).
	Shards int
	// Chaos is how long faults are injected (drawn: 20 s to 60 s of
	// virtual time); a quiet phase long enough for the liveness checks
	// follows.
	Chaos time.Duration
	// Quiet, if set, replaces the quiet phase derived from the liveness
	// bound with one of this length: such a run checks the safety
	// invariants only (no L1, no end-of-run S4: a short quiet phase need
	// not see everything delivered), and takes a fraction of the time.
	Quiet time.Duration
	// Faults selects the fault classes: "" or "swarm" draws a mix from the
	// seed, "none" injects nothing, "all" everything, or a comma-separated
	// list of FaultClasses.
	Faults string
	// Assignment is how leases reach the consumers: engine.AssignmentAssigner,
	// engine.AssignmentScan, AssignmentMixed, or "" (drawn: the assigner in
	// six worlds in ten, scan in a quarter, mixed in the rest).
	Assignment string
	// Consumer is how the consumers read: ConsumerPolling, ConsumerFanOut,
	// or "" (drawn: fan-out in three worlds in ten, and wherever sub-drop
	// is drawn).
	Consumer string
	// Mutation plants a bug in every consumer of the run (a name of
	// internal/planted, e.g. "driver-handoff-unchecked"); it needs a binary
	// built with the shardlease_mutations tag.
	Mutation string
	// KeepRecords keeps the whole history in the Result (Records). The
	// checkers always read it; without KeepRecords the Result drops it.
	KeepRecords bool
	// Hash computes Result.TraceHash.
	Hash bool
}

// Values of Options.Assignment and Options.Consumer besides the engine's.
const (
	// AssignmentMixed gives each consumer incarnation scan or the
	// assigner, drawn: a rolling deploy from one to the other.
	AssignmentMixed = "mixed"
	// ConsumerPolling and ConsumerFanOut read the shards with GetRecords
	// or with enhanced fan-out.
	ConsumerPolling = "polling"
	ConsumerFanOut  = "fan-out"
)

// FaultClasses are the fault classes a run can draw.
var FaultClasses = []string{
	// a stop-the-world pause of a consumer that begins inside the Step
	// that decides a delivery: the runner's hand-off happens only after it
	"handoff-pause",
	// a stop-the-world pause of a consumer at a drawn moment
	"pause",
	// a processor that blocks in ProcessRecords until its lease has moved
	// to another consumer (or for a drawn time), often while its holder is
	// cut off from the table
	"hold",
	// a consumer cut off from the table, the stream or both: its calls
	// fail at once or hang until their deadline
	"partition",
	// a consumer killed (its context cancelled and every call it makes
	// from then on failed) and restarted, under its owner id or a new one
	"crash",
	// a graceful shutdown (Run's context cancelled) while batches and
	// checkpoints are in flight, and a restart
	"shutdown",
	// store and stream calls that never return until their deadline; half
	// of the writes among them applied first
	"timeouts",
	// writes that apply and then return an error
	"lost-replies",
	// throttled store and stream calls
	"throttle",
	// call latencies with a tail past the call timeout
	"latency",
	// processors that take their time over batches
	"slow-processor",
	// processors that return errors
	"failing-processor",
	// processors that panic
	"panicking-processor",
	// shard splits and merges
	"reshard",
	// every shard iterator expires
	"expired-iterators",
	// fan-out subscriptions dropped mid-stream (asks for a fan-out world)
	"sub-drop",
	// a consumer added during the chaos phase
	"scale-out",
}

// World is what a seed draws: the configuration of a run.
type World struct {
	Seed           uint64
	Workers        int
	Shards         int
	Chaos, Quiet   time.Duration
	Faults         []string
	Engine         engine.Config // the engine settings every consumer shares (no Owner, Streams, Seed)
	CallTimeout    time.Duration
	PutRate        float64 // records per second per shard
	CheckpointPace time.Duration
	Rates          Rates
	StaleLag       time.Duration // how stale an eventually consistent scan may be
	// Assignment is how leases reach the consumers: engine.AssignmentAssigner
	// (the default: one elected assigner hands them out through the
	// table's pending index), engine.AssignmentScan (every consumer scans
	// and takes), or "mixed" (each consumer draws one: a rolling deploy
	// from one to the other)
	Assignment string
	IndexLag   time.Duration // how far the pending index lags the rows
	FanOut     FanOutWorld
	// FailurePolicy, if > 0, gives every consumer a failure policy that
	// is asked after this many failed deliveries in a row of a batch, and
	// skips it, hands it off, retries it or panics, as the batch's hash
	// says
	FailurePolicy int
	Bound         time.Duration // the liveness bound after healing
	// Balance: L1 checks that the live consumers hold their fair share of
	// the unfinished leases at the end, within one (balancing steals and
	// no consumer's leases are capped)
	Balance bool
	// SafetyOnly: the quiet phase is Options.Quiet, too short for the
	// liveness checks, which the run skips
	SafetyOnly bool
}

// FanOutWorld is the enhanced fan-out of a world.
type FanOutWorld struct {
	// On: the consumers read with enhanced fan-out (3 worlds in 10).
	On bool
	// Activation is how long a new stream consumer stays CREATING;
	// Lifetime how long a subscription lasts (5 minutes on Kinesis, drawn
	// shorter so that runs renew subscriptions).
	Activation, Lifetime time.Duration
	// Drop is the chance that a NextEvent finds its subscription dropped
	// mid-stream (the sub-drop class).
	Drop float64
}

// Rates are the per-call and per-batch fault probabilities of the chaos
// phase.
type Rates struct {
	Timeout, LostReply, Throttle, SlowCall float64 // per store or stream call
	ProcSlow, ProcFail, ProcPanic          float64 // per batch
}

func (w World) has(class string) bool { return slices.Contains(w.Faults, class) }

// End is the virtual time at which the run ends.
func (w World) End() time.Duration { return w.Chaos + w.Quiet }

// String describes the world on one line.
func (w World) String() string {
	e := w.Engine
	return fmt.Sprintf("seed=%d workers=%d shards=%d chaos=%v quiet=%v lease=%v renew=%v margin=%v take=%v sync=%v idle=%v limit=%d steal=%d calltimeout=%v puts/s=%.2f policy=%d assignment=%s indexlag=%v stalelag=%v fanout=%v balance=%v safety-only=%v faults=%s",
		w.Seed, w.Workers, w.Shards, w.Chaos, w.Quiet, e.LeaseDuration, e.RenewInterval, e.SafetyMargin, e.TakeInterval,
		e.ShardSyncInterval, e.IdleTimeBetweenReads, e.GetRecordsLimit, e.MaxLeasesToStealAtOnce, w.CallTimeout, w.PutRate,
		w.FailurePolicy, w.Assignment, w.IndexLag, w.StaleLag, w.FanOut, w.Balance, w.SafetyOnly, strings.Join(w.Faults, ","))
}

// drawWorld draws the configuration of a run from its seed and options.
func drawWorld(o Options) (World, error) {
	r := newRNG(o.Seed, streamWorld)
	w := World{Seed: o.Seed, Workers: o.Workers, Shards: o.Shards, Chaos: o.Chaos}
	if w.Workers <= 0 {
		w.Workers = r.intIn(2, 4)
	}
	if w.Shards <= 0 {
		w.Shards = r.intIn(1, 6)
	}
	if w.Chaos <= 0 {
		w.Chaos = r.between(20*time.Second, 60*time.Second).Round(time.Second)
	}
	e := &w.Engine
	e.LeaseDuration = r.logUniform(1500*time.Millisecond, 6*time.Second).Round(100 * time.Millisecond)
	e.RenewInterval = (e.LeaseDuration / time.Duration(r.intIn(3, 5))).Truncate(10 * time.Millisecond)
	if r.chance(0.5) {
		e.TakeInterval = time.Duration(float64(e.LeaseDuration) * r.rangeF(0.5, 1.2)).Round(100 * time.Millisecond)
	}
	e.ShardSyncInterval = r.between(3*time.Second, 10*time.Second).Round(time.Second)
	e.IdleTimeBetweenReads = r.between(50*time.Millisecond, 500*time.Millisecond).Round(10 * time.Millisecond)
	e.GetRecordsLimit = []int{10, 100, 1000}[r.IntN(3)]
	switch r.IntN(4) {
	case 0:
		e.MaxLeasesToStealAtOnce = -1
	case 1:
		e.MaxLeasesToStealAtOnce = 2
	}
	e.ConsistentTakeScans = r.chance(0.3)
	full, err := engine.Config{Owner: "probe", Streams: []engine.StreamConfig{{Name: streamName}}, LeaseDuration: e.LeaseDuration,
		RenewInterval: e.RenewInterval, TakeInterval: e.TakeInterval, ShardSyncInterval: e.ShardSyncInterval,
		IdleTimeBetweenReads: e.IdleTimeBetweenReads, GetRecordsLimit: e.GetRecordsLimit,
		MaxLeasesToStealAtOnce: e.MaxLeasesToStealAtOnce}.Validate()
	if err != nil {
		return w, fmt.Errorf("driversim: drawn engine configuration: %w", err)
	}
	e.SafetyMargin, e.TakeInterval = full.SafetyMargin, full.TakeInterval
	w.CallTimeout = full.RenewInterval

	switch f := strings.TrimSpace(o.Faults); f {
	case "", "swarm":
		for _, c := range FaultClasses {
			p := 0.5
			switch c {
			case "handoff-pause":
				p = 0.9
			case "shutdown":
				// the driver's stop sequence (final checkpoints, the
				// shutdown deadline, processors that outlive Run) is its
				// most intricate code: most worlds shut consumers down
				p = 0.8
			}
			if r.chance(p) {
				w.Faults = append(w.Faults, c)
			}
		}
	case "none":
	case "all":
		w.Faults = slices.Clone(FaultClasses)
	default:
		for _, c := range strings.Split(f, ",") {
			c = strings.TrimSpace(c)
			if !slices.Contains(FaultClasses, c) {
				return w, fmt.Errorf("driversim: unknown fault class %q (classes: %s)", c, strings.Join(FaultClasses, ", "))
			}
			w.Faults = append(w.Faults, c)
		}
	}

	if r.chance(0.5) {
		w.StaleLag = r.between(100*time.Millisecond, 2*time.Second)
	}
	switch x := r.Float64(); {
	case x < 0.6:
		w.Assignment = engine.AssignmentAssigner
	case x < 0.85:
		w.Assignment = engine.AssignmentScan
	default:
		w.Assignment = AssignmentMixed
	}
	switch o.Assignment {
	case "":
	case engine.AssignmentAssigner, engine.AssignmentScan, AssignmentMixed:
		w.Assignment = o.Assignment
	default:
		return w, fmt.Errorf("driversim: unknown assignment %q (want %s, %s or %s)", o.Assignment, engine.AssignmentAssigner, engine.AssignmentScan, AssignmentMixed)
	}
	if r.chance(0.5) {
		w.IndexLag = r.between(10*time.Millisecond, time.Second)
	}
	w.PutRate = r.rangeF(1, 4)
	w.CheckpointPace = r.between(500*time.Millisecond, 8*time.Second).Round(10 * time.Millisecond)
	rt := &w.Rates
	if w.has("timeouts") {
		rt.Timeout = r.rangeF(0.005, 0.05)
	}
	if w.has("lost-replies") {
		rt.LostReply = r.rangeF(0.01, 0.1)
	}
	if w.has("throttle") {
		rt.Throttle = r.rangeF(0.01, 0.1)
	}
	if w.has("latency") {
		rt.SlowCall = r.rangeF(0.01, 0.1)
	}
	if w.has("slow-processor") {
		rt.ProcSlow = r.rangeF(0.02, 0.2)
	}
	if w.has("failing-processor") {
		rt.ProcFail = r.rangeF(0.01, 0.1)
		if r.chance(0.5) {
			w.FailurePolicy = r.intIn(1, 2)
		}
	}
	if w.has("panicking-processor") {
		rt.ProcPanic = r.rangeF(0.01, 0.05)
	}

	fr := newRNG(o.Seed, streamWorld^0xfa2)
	on := fr.chance(0.3) || w.has("sub-drop")
	switch o.Consumer {
	case "":
	case ConsumerPolling:
		if w.has("sub-drop") {
			if f := strings.TrimSpace(o.Faults); f != "" && f != "swarm" && f != "all" {
				return w, fmt.Errorf("driversim: fault class sub-drop needs a fan-out world, not consumer %s", o.Consumer)
			}
			// drawn by the swarm (or all): a polling world has no subscription to drop
			w.Faults = slices.DeleteFunc(w.Faults, func(c string) bool { return c == "sub-drop" })
		}
		on = false
	case ConsumerFanOut:
		on = true
	default:
		return w, fmt.Errorf("driversim: unknown consumer %q (want %s or %s)", o.Consumer, ConsumerPolling, ConsumerFanOut)
	}
	if on {
		f := &w.FanOut
		f.On = true
		f.Activation = fr.between(0, 3*time.Second).Round(10 * time.Millisecond)
		f.Lifetime = fr.logUniform(10*time.Second, 5*time.Minute).Round(time.Second)
		if w.has("sub-drop") {
			f.Drop = fr.rangeF(0.002, 0.05)
		}
	}

	// the liveness bound, from the configuration (as the simulator's),
	// with what fan-out adds: the consumer's activation, and a hand-off's
	// wait for the previous holder's subscription (ResourceInUse for up to
	// 5 s, retried every second or two)
	b := 2*full.LeaseDuration + 2*full.TakeInterval + 2*full.ShardSyncInterval + 2*full.RenewInterval +
		8*w.CallTimeout + 4*full.IdleTimeBetweenReads + w.CheckpointPace + 10*time.Second
	if w.FanOut.On {
		b += w.FanOut.Activation + 2*fakes.DefaultInUseWindow + 4*time.Second
	}
	w.Bound = b.Round(time.Second)
	w.Quiet = 2*w.Bound + 2*(full.TakeInterval+full.LeaseDuration) + 5*time.Second
	// L1 checks balance where a balancing round may steal and nothing
	// caps a worker's leases (as the simulator's worlds): the quiet phase
	// then leaves a steal round per lease a worker may have to give up
	w.Balance = full.MaxLeasesToStealAtOnce > 0 && full.MaxLeasesForWorker == 0
	if w.Balance {
		per := (w.Shards*3+w.Workers-1)/w.Workers + 3
		w.Quiet += time.Duration(per) * (full.TakeInterval + full.LeaseDuration)
	}
	w.Quiet = w.Quiet.Round(time.Second)
	if o.Quiet > 0 {
		w.Quiet, w.SafetyOnly = o.Quiet, true
	}
	return w, nil
}

// checkOptions are the checkers' options for a run of w that ended at
// end: the faults stop at the end of the chaos phase (Heal), the liveness
// bound is the world's (and no liveness is checked in a safety-only run).
func (w World) checkOptions(end time.Duration) check.Options {
	o := check.Options{End: end, Heal: w.Chaos, Bound: w.Bound, Balance: w.Balance, BalanceSlack: 1}
	if w.SafetyOnly {
		o.Heal = 0 // no liveness checks
	}
	return o
}

// engineConfig returns the configuration of one consumer.
func (w World) engineConfig(owner string, seed uint64) engine.Config {
	c := w.Engine
	c.Owner = owner
	c.Streams = []engine.StreamConfig{{Name: streamName, InitialPosition: engine.TrimHorizon}}
	c.Seed = seed
	if c.Renewal == "" {
		// the driver's worlds renew per lease (the engine's default,
		// RenewalAuto, renews by session: the simulator's own worlds draw
		// it)
		c.Renewal = engine.RenewalPerLease
	}
	return c
}

const streamName = "driversim-stream"
