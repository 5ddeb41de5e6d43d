package scenarios

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim"
)

// drawn is one case of the property: everything rapid drew. Its Options
// are a pure function of it, so a case replays bit for bit.
type drawn struct {
	Seed            uint64
	Workers, Shards int
	Chaos           time.Duration
	Quiet           time.Duration // 0: derived by the simulator from the liveness bound
	Knobs           knobs
	Classes         []string // rate-only fault classes (no timed actions of their own)
	Actions         []sim.Action
	Mutation        string
	Assignment      string // sim.Options.Assignment
	Features        features
}

// features are the swarm's world draws the property pins on or leaves
// off (sim.Options of the same names): the lease table in etcd, enhanced
// fan-out, KPL aggregates, boundary seeking, faults aimed inside the
// engine's operations, a targeted fault, the engine options beyond the
// knobs, a combination of rare things. Each is a draw of the simulator
// from the case's seed once pinned on; off ("") is as the property ran
// before them.
type features struct {
	Store, Consumer, KPL, Boundary, Aim, Targeted, Options, Combo string
}

func (f features) String() string {
	var on []string
	for _, x := range []struct{ name, v string }{{"store", f.Store}, {"consumer", f.Consumer}, {"kpl", f.KPL}, {"boundary", f.Boundary},
		{"aim", f.Aim}, {"targeted", f.Targeted}, {"options", f.Options}, {"combo", f.Combo}} {
		if x.v != "" {
			on = append(on, x.name+" "+x.v)
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ", ")
}

// drawFeatures draws which of the swarm's world draws a case turns on,
// each with about the share the swarm gives it; every draw shrinks to off.
func drawFeatures(t *rapid.T) features {
	var f features
	if chance(t, "store etcd", 25) {
		f.Store = "etcd"
	}
	if chance(t, "consumer fan-out", 30) {
		f.Consumer = "fan-out"
	}
	if chance(t, "kpl", 40) {
		f.KPL = "on"
	}
	if chance(t, "boundary", 50) {
		f.Boundary = "on"
	}
	if chance(t, "combo", 30) {
		names := make([]string, len(sim.Combos))
		for i, c := range sim.Combos {
			names[i] = c.Name
		}
		f.Combo = rapid.SampledFrom(names).Draw(t, "combination")
	} else {
		// a combination may calm its world: aimed and targeted faults
		// only without one
		if chance(t, "aim", 35) {
			f.Aim = "on"
		}
		if chance(t, "targeted", 25) {
			f.Targeted = "on"
		}
	}
	if chance(t, "options", 35) {
		f.Options = "on"
	}
	return f
}

// knobs are the engine settings the property draws; the rest (take and
// sync intervals, read limits) are drawn by the simulator from the seed.
type knobs struct {
	LeaseDuration, RenewInterval, SafetyMargin time.Duration
	MaxClockDrift                              float64
	MaxLeasesToStealAtOnce                     int
	MaxLeasesForWorker                         int
	ConsistentTakeScans                        bool
}

func (k knobs) apply(c *engine.Config) {
	c.LeaseDuration = k.LeaseDuration
	c.RenewInterval = k.RenewInterval
	c.SafetyMargin = k.SafetyMargin
	c.MaxClockDrift = k.MaxClockDrift
	c.MaxLeasesToStealAtOnce = k.MaxLeasesToStealAtOnce
	c.MaxLeasesForWorker = k.MaxLeasesForWorker
	c.ConsistentTakeScans = k.ConsistentTakeScans
}

func (k knobs) String() string {
	return fmt.Sprintf("lease %v, renew %v, margin %v, max drift %.4f, steal %d, max leases %d, consistent scans %v",
		k.LeaseDuration, k.RenewInterval, k.SafetyMargin, k.MaxClockDrift, k.MaxLeasesToStealAtOnce, k.MaxLeasesForWorker, k.ConsistentTakeScans)
}

// Options returns the simulator options of the case.
func (d drawn) Options() sim.Options {
	faults := "none"
	if len(d.Classes) > 0 {
		faults = strings.Join(d.Classes, ",")
	}
	k := d.Knobs
	o := sim.Options{
		Seed: d.Seed, Workers: d.Workers, Shards: d.Shards, Chaos: d.Chaos, Quiet: d.Quiet,
		Faults: faults, Engine: k.apply, Actions: d.Actions, Mutation: d.Mutation, Assignment: d.Assignment,
		Store: d.Features.Store, Consumer: d.Features.Consumer, KPL: d.Features.KPL, Boundary: d.Features.Boundary,
		Aim: d.Features.Aim, Targeted: d.Features.Targeted, Options: d.Features.Options, Combo: d.Features.Combo,
	}
	if d.Quiet != 0 {
		// The fast planted-bug runs: none of their bugs is one of the
		// table's history, so skip the Lin check and keep a run to
		// milliseconds, which lets shrinking run to its end.
		o.LinBudget = -1
	}
	return o
}

// String renders the case for a person: the world, then the schedule one
// action per line.
func (d drawn) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sim seed %d; %d workers, %d shards, chaos %v; faults %s; engine: %s; assignment %s; swarm draws: %s", d.Seed, d.Workers, d.Shards, d.Chaos, d.Options().Faults, d.Knobs, d.Assignment, d.Features)
	if d.Quiet != 0 {
		fmt.Fprintf(&b, "; healing phase %v (liveness not checked)", d.Quiet)
	}
	if d.Mutation != "" {
		fmt.Fprintf(&b, "; mutation %s", d.Mutation)
	}
	fmt.Fprintf(&b, "\nschedule (%d actions):\n", len(d.Actions))
	for _, a := range d.Actions {
		b.WriteString("  " + a.String() + "\n")
	}
	return b.String()
}

// rateClasses are the fault classes that only set per-call rates or the
// world (no timed actions of their own): the property draws each in or out;
// every timed fault comes from the drawn schedule instead.
var rateClasses = []string{
	"latency", "loss", "dup", "table-errors", "stale-reads", "expired-iterators",
	"retention", "idle-shards", "slow-processor", "failed-batches",
}

// actionKinds weights the kinds of drawn actions by repetition; rapid
// shrinks a kind towards the first entry.
var actionKinds = []sim.ActionKind{
	sim.ActCrash, sim.ActCrash, sim.ActPause, sim.ActPause, sim.ActPartition, sim.ActPartition,
	sim.ActRestart, sim.ActShutdown, sim.ActScaleOut, sim.ActScaleIn, sim.ActClog,
	sim.ActClockStep, sim.ActSplit, sim.ActSplit, sim.ActMerge, sim.ActMerge,
	sim.ActTableThrottle, sim.ActStreamThrottle, sim.ActBurst,
}

// size bounds the drawn cases. outside adds the faults that break the
// engine's assumptions: a second live process with a worker's owner id,
// clock drift beyond the bound, mid-act pauses longer than the margin's
// slack; the simulator tolerates S1 in such runs. quiet, if set, replaces
// the derived healing phase with a short one, too short for the liveness
// bound: such runs check the safety invariants only (L1 is ignored).
type size struct {
	maxWorkers, maxShards, maxActions int
	minChaos, maxChaos                int // seconds
	outside                           bool
	quiet                             time.Duration
	assignment                        string // "": drawn
	// features: draw which of the swarm's world draws are on (features)
	features bool
}

var (
	insideSize  = size{maxWorkers: 6, maxShards: 12, maxActions: 10, minChaos: 20, maxChaos: 90, features: true}
	outsideSize = size{maxWorkers: 6, maxShards: 12, maxActions: 10, minChaos: 20, maxChaos: 90, outside: true, features: true}
)

// midActSlack is the longest mid-act pause inside the assumptions, as the
// simulator computes it: the part of the safety margin that the clocks'
// drift (at most MaxClockDrift/2·0.98 each) does not use, halved.
func midActSlack(k knobs) time.Duration {
	drift := k.MaxClockDrift / 2 * 0.98
	used := engine.MinSafetyMargin(k.LeaseDuration, 2*drift)
	return (k.SafetyMargin - used) / 2
}

// chance draws a rare yes: a roll in [0,99] that shrinks to 0, "no".
func chance(t *rapid.T, label string, percent int) bool {
	return rapid.IntRange(0, 99).Draw(t, label) >= 100-percent
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// drawCase draws one case: the cluster, the engine knobs, the rate classes
// and the schedule, every draw labeled.
func drawCase(t *rapid.T, sz size, mutation string) drawn {
	d := drawn{Mutation: mutation, Quiet: sz.quiet}
	d.Seed = rapid.Uint64Range(1, math.MaxUint32).Draw(t, "sim-seed")
	d.Workers = rapid.IntRange(1, sz.maxWorkers).Draw(t, "workers")
	d.Shards = rapid.IntRange(1, sz.maxShards).Draw(t, "shards")
	d.Chaos = time.Duration(rapid.IntRange(sz.minChaos, sz.maxChaos).Draw(t, "chaos-seconds")) * time.Second

	k := &d.Knobs
	k.LeaseDuration = ms(rapid.IntRange(30, 200).Draw(t, "lease-duration-100ms") * 100)
	k.RenewInterval = (k.LeaseDuration / time.Duration(rapid.IntRange(3, 6).Draw(t, "renew-divisor"))).Truncate(10 * time.Millisecond)
	k.MaxClockDrift = float64(rapid.IntRange(10, 500).Draw(t, "max-clock-drift-per-10000")) / 1e4
	lo := engine.MinSafetyMargin(k.LeaseDuration, k.MaxClockDrift)
	hi := (k.LeaseDuration - k.RenewInterval) / 2
	k.SafetyMargin = lo
	if hi > lo {
		k.SafetyMargin = (lo + (hi-lo)*time.Duration(rapid.IntRange(0, 1000).Draw(t, "margin-permille-above-min"))/1000).Round(time.Millisecond)
		if k.SafetyMargin < lo {
			k.SafetyMargin = lo
		}
	}
	k.MaxLeasesToStealAtOnce = rapid.SampledFrom([]int{1, 2, 5, -1}).Draw(t, "steal-limit")
	if chance(t, "cap-leases", 15) {
		// room for every shard a run can open (splits included) on the
		// initial workers: scale-in never goes below them with a cap
		k.MaxLeasesForWorker = (2*d.Shards+4+d.Workers-1)/d.Workers + 1 + rapid.IntRange(0, 3).Draw(t, "cap-extra")
	}
	k.ConsistentTakeScans = chance(t, "consistent-take-scans", 30)

	for _, c := range rateClasses {
		if chance(t, "class "+c, 25) {
			d.Classes = append(d.Classes, c)
		}
	}
	kinds := actionKinds
	if sz.outside {
		if chance(t, "class drift-beyond", 30) {
			d.Classes = append(d.Classes, "drift-beyond")
		}
		kinds = append(append([]sim.ActionKind(nil), kinds...), sim.ActDupOwner, sim.ActDupOwner)
	}
	slack := midActSlack(d.Knobs)

	chaosMs := int(d.Chaos / time.Millisecond)
	leaseMs := int(k.LeaseDuration / time.Millisecond)
	worker := rapid.IntRange(0, d.Workers-1)
	group := rapid.SliceOfNDistinct(worker, 1, d.Workers, rapid.ID[int])
	target := rapid.SampledFrom([]string{"both", "table", "stream"})
	action := rapid.Custom(func(t *rapid.T) sim.Action {
		a := sim.Action{
			At:   ms(rapid.IntRange(1000, chaosMs-1000).Draw(t, "at-ms")),
			Kind: rapid.SampledFrom(kinds).Draw(t, "kind"),
		}
		switch a.Kind {
		case sim.ActCrash:
			a.Worker = worker.Draw(t, "worker")
			a.Dur = ms(rapid.IntRange(0, 3*leaseMs).Draw(t, "down-ms (0: until healing)"))
			a.NewOwner = rapid.Bool().Draw(t, "new-owner")
		case sim.ActRestart:
			a.Worker = worker.Draw(t, "worker")
			a.NewOwner = rapid.Bool().Draw(t, "new-owner")
		case sim.ActPause:
			a.Worker = worker.Draw(t, "worker")
			// a mid-act pause holds the effects of the step in progress;
			// longer than the margin's slack, it is outside the assumptions
			switch {
			case sz.outside && chance(t, "mid-act", 50):
				a.MidAct = true
				a.Dur = ms(rapid.IntRange(1, 2*leaseMs).Draw(t, "pause-ms"))
			case !sz.outside && slack > 2*time.Millisecond && chance(t, "mid-act", 30):
				a.MidAct = true
				a.Dur = ms(rapid.IntRange(1, int(slack/time.Millisecond)-1).Draw(t, "pause-ms"))
			default:
				a.Dur = ms(rapid.IntRange(10, 3*leaseMs).Draw(t, "pause-ms"))
			}
		case sim.ActShutdown:
			a.Worker = worker.Draw(t, "worker")
			a.Dur = ms(rapid.IntRange(0, 2*leaseMs).Draw(t, "restart-after-ms (0: never)"))
		case sim.ActScaleIn:
			a.Worker = worker.Draw(t, "worker")
		case sim.ActPartition:
			a.Workers = group.Draw(t, "workers")
			a.Target = target.Draw(t, "target")
			a.Dir = rapid.SampledFrom([]string{"both", "request", "reply"}).Draw(t, "dir")
			a.Dur = ms(rapid.IntRange(1000, 3*leaseMs).Draw(t, "dur-ms"))
		case sim.ActClog:
			a.Workers = group.Draw(t, "workers")
			a.Target = target.Draw(t, "target")
			a.Extra = ms(rapid.IntRange(200, 3000).Draw(t, "extra-latency-ms"))
			a.Dur = ms(rapid.IntRange(1000, 3*leaseMs).Draw(t, "dur-ms"))
		case sim.ActClockStep:
			a.Worker = worker.Draw(t, "worker")
			a.Extra = time.Duration(rapid.IntRange(-300, 300).Draw(t, "step-seconds")) * time.Second
		case sim.ActTableThrottle, sim.ActStreamThrottle:
			a.Dur = ms(rapid.IntRange(1000, 2*leaseMs).Draw(t, "dur-ms"))
			a.Value = float64(rapid.IntRange(30, 100).Draw(t, "throttled-percent")) / 100
		case sim.ActBurst:
			a.Dur = ms(rapid.IntRange(2000, 30000).Draw(t, "dur-ms"))
			a.Value = float64(rapid.IntRange(3, 20).Draw(t, "rate-factor"))
		case sim.ActDupOwner:
			a.Worker = worker.Draw(t, "worker")
		}
		return a
	})
	d.Actions = rapid.SliceOfN(action, 0, sz.maxActions).Draw(t, "schedule")
	// the simulator runs them in time order (stable); list them so
	sort.SliceStable(d.Actions, func(i, j int) bool { return d.Actions[i].At < d.Actions[j].At })
	// Drawn last, so that the fail files saved before it replay as they
	// did (their bits end earlier: the first value, scan, the mode of
	// every run then).
	d.Assignment = sz.assignment
	if d.Assignment == "" {
		d.Assignment = rapid.SampledFrom([]string{engine.AssignmentScan, engine.AssignmentAssigner, sim.AssignmentMixed}).Draw(t, "assignment")
	}
	if sz.features {
		d.Features = drawFeatures(t) // after the rest, for the same reason
	}
	return d
}
