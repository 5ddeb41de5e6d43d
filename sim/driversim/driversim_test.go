package driversim

import (
	"flag"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var (
	flagSeeds  = flag.Int("driversim.seeds", 0, "TestDriverSim: how many seeds to run (default 100, 24 with -short)")
	flagFirst  = flag.Uint64("driversim.first", 1, "TestDriverSim: the first seed")
	flagSeed   = flag.Uint64("driversim.seed", 0, "TestDriverSim: run this seed only, and log its world and figures")
	flagFaults = flag.String("driversim.faults", "", "TestDriverSim: the fault classes (see FaultClasses; default: each seed draws its mix)")
	flagPlant  = flag.String("driversim.plant", "", "TestDriverSim: plant this bug in every consumer (needs -tags shardlease_mutations); the test must then fail")
	flagStats  = flag.Bool("driversim.stats", false, "TestDriverSim: log each seed's world and figures")

	flagWorkers    = flag.Int("driversim.workers", 0, "TestDriverSim: consumers at the start (default: drawn from the seed)")
	flagShards     = flag.Int("driversim.shards", 0, "TestDriverSim: shards at the start (default: drawn from the seed)")
	flagChaos      = flag.Duration("driversim.chaos", 0, "TestDriverSim: the chaos phase's length (default: drawn from the seed)")
	flagQuiet      = flag.Duration("driversim.quiet", 0, "TestDriverSim: the quiet phase's length, which makes the run safety-only (default: derived from the liveness bound)")
	flagAssignment = flag.String("driversim.assignment", "", "TestDriverSim: assigner, scan or mixed (default: drawn from the seed)")
	flagConsumer   = flag.String("driversim.consumer", "", "TestDriverSim: polling or fan-out (default: drawn from the seed)")
)

// flagOptions are the options the flags choose for seed.
func flagOptions(seed uint64) Options {
	return Options{Seed: seed, Workers: *flagWorkers, Shards: *flagShards, Chaos: *flagChaos, Quiet: *flagQuiet, Faults: *flagFaults,
		Assignment: *flagAssignment, Consumer: *flagConsumer, Mutation: *flagPlant}
}

// runSeed runs one seed in a synctest bubble of its own.
func runSeed(t *testing.T, o Options) *Result {
	t.Helper()
	var res *Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = Run(o)
		if err != nil {
			t.Fatal(err)
		}
	})
	return res
}

// report fails t with every violation of res.
func report(t *testing.T, res *Result) {
	t.Helper()
	for _, v := range res.Violations {
		t.Errorf("%s\n  world: %s\n  replay: %s\n    %s", v.String(), res.World, v.Replay, strings.Join(v.Excerpt, "\n    "))
	}
}

// TestDriverSim runs the production driver (engine.Consumer) over many
// seeds in virtual time, under the faults only the driver can get wrong,
// and checks every history with S1-S6 and L1. Across the seeds the faults
// must have reached the driver's own code: the runner's hand-off check
// held batches back, processors held on a lease were released by its
// move, consumers crashed and shut down with work in flight.
func TestDriverSim(t *testing.T) {
	if *flagSeed != 0 {
		o := flagOptions(*flagSeed)
		o.Hash = true
		res := runSeed(t, o)
		logResult(t, res)
		report(t, res)
		return
	}
	n := *flagSeeds
	if n <= 0 {
		n = 100
		if testing.Short() {
			n = 24
		}
	}
	var mu sync.Mutex
	var total Stats
	handoffs, failed := 0, 0
	start := time.Now()
	t.Run("seeds", func(t *testing.T) {
		for seed := *flagFirst; seed < *flagFirst+uint64(n); seed++ {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				o := flagOptions(seed)
				o.Hash = *flagStats
				res := runSeed(t, o)
				report(t, res)
				if *flagStats {
					logResult(t, res)
				}
				mu.Lock()
				defer mu.Unlock()
				total = addStats(total, res.Stats)
				handoffs += res.Figures.Handoffs
				if len(res.Violations) > 0 {
					failed++
				}
			})
		}
	})
	t.Logf("%d seeds in %.1fs of wall time, %d with violations; handoffs %d; faults and driver events: %+v",
		n, time.Since(start).Seconds(), failed, handoffs, total)
	if o := flagOptions(0); o != (Options{}) || n < 24 {
		return // a chosen world or a few seeds need not reach every path
	}
	for _, c := range []struct {
		name string
		got  int
	}{
		{"batches held back by the runner's hand-off check", total.HeldBack},
		{"hand-off pauses", total.HandoffPauses},
		{"processors held until their lease moved", total.HoldsReleasedByMove},
		{"crashes", total.Crashes},
		{"graceful shutdowns", total.Shutdowns},
		{"processor errors and panics caught by the runner", total.ProcessorErrors},
		{"failure policy decisions", total.PolicyDecisions},
		{"handoffs between consumers", handoffs},
	} {
		if c.got == 0 {
			t.Errorf("no %s across %d seeds: the faults do not reach that part of the driver", c.name, n)
		}
	}
}

func logResult(t *testing.T, res *Result) {
	t.Helper()
	t.Logf("world: %s", res.World)
	t.Logf("stats: %+v", res.Stats)
	t.Logf("figures: handoffs=%d redelivered=%d store calls=%d stream calls=%d; hash %016x; run errors: %v", res.Figures.Handoffs, res.Figures.Redelivered,
		res.Figures.StoreCalls, res.Figures.StreamCalls, res.TraceHash, res.RunErrors)
	t.Logf("lin: %d keys, %d calls, %d windows, %d writes of unknown outcome, illegal %v, unknown %v", res.Lin.Keys, res.Lin.Ops, res.Lin.Checks,
		res.Lin.UnknownWrites, res.Lin.Illegal, res.Lin.TimedOut)
}

func addStats(a, b Stats) Stats {
	a.HandoffPauses += b.HandoffPauses
	a.Pauses += b.Pauses
	a.Holds += b.Holds
	a.HoldsReleasedByMove += b.HoldsReleasedByMove
	a.Partitions += b.Partitions
	a.Crashes += b.Crashes
	a.Shutdowns += b.Shutdowns
	a.Restarts += b.Restarts
	a.Splits += b.Splits
	a.Merges += b.Merges
	a.IteratorExpiries += b.IteratorExpiries
	a.ScaleOuts += b.ScaleOuts
	a.Timeouts += b.Timeouts
	a.LostReplies += b.LostReplies
	a.Throttled += b.Throttled
	a.SlowCalls += b.SlowCalls
	a.SlowBatches += b.SlowBatches
	a.FailedBatches += b.FailedBatches
	a.Panics += b.Panics
	a.HeldBack += b.HeldBack
	a.ShutdownTimeouts += b.ShutdownTimeouts
	a.ProcessorErrors += b.ProcessorErrors
	a.Puts += b.Puts
	a.PolicyDecisions += b.PolicyDecisions
	a.SubscriptionsDropped += b.SubscriptionsDropped
	return a
}
