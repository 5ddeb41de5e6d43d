package scenarios

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/driversim"
)

// The driver property: rapid draws worlds of the driver simulation
// (sim/driversim: real engine.Consumers in virtual time) and each run
// must break no invariant: every checker the simulator runs, and Lin.

var (
	flagDriverChecks = flag.Int("scenarios.driver.checks", 12,
		"TestPropertyDriver: the driver worlds rapid draws (0: -rapid.checks of them); a driver world costs a few tenths of a CPU second")
	flagDriverReruns = flag.Int("scenarios.driver.reruns", 4, "TestPropertyDriver: re-runs of the minimized failing case, to say how often it reproduces")
)

// drawnDriver is one case of the driver property: a world of the driver
// simulation. The world is a function of it; the run is not bit for bit
// (goroutines woken at one virtual instant run in an order the seed does
// not fix), its verdict is what must hold.
type drawnDriver struct {
	Seed            uint64
	Workers, Shards int
	Chaos, Quiet    time.Duration // Quiet 0: derived from the liveness bound
	Classes         []string      // fault classes; none: no fault
	Assignment      string
	Consumer        string
	Mutation        string // a planted bug of internal/planted (no engine: prefix)
}

// Options returns the driver simulation's options of the case.
func (d drawnDriver) Options() driversim.Options {
	f := "none"
	if len(d.Classes) > 0 {
		f = strings.Join(d.Classes, ",")
	}
	return driversim.Options{Seed: d.Seed, Workers: d.Workers, Shards: d.Shards, Chaos: d.Chaos, Quiet: d.Quiet, Faults: f,
		Assignment: d.Assignment, Consumer: d.Consumer, Mutation: d.Mutation}
}

// Simrun is the simrun command that runs the case's world.
func (d drawnDriver) Simrun() string {
	o := d.Options()
	s := "go run ./cmd/simrun -driver -seed " + strconv.FormatUint(o.Seed, 10) + " -workers " + strconv.Itoa(o.Workers) +
		" -shards " + strconv.Itoa(o.Shards) + " -chaos " + o.Chaos.String()
	if o.Quiet > 0 {
		s += " -quiet " + o.Quiet.String()
	}
	s += " -faults " + o.Faults + " -assignment " + o.Assignment + " -consumer " + o.Consumer
	if o.Mutation != "" {
		s = strings.Replace(s, "go run ", "go run -tags shardlease_mutations ", 1) + " -mutation engine:" + o.Mutation
	}
	return s
}

func (d drawnDriver) String() string {
	q := "derived"
	if d.Quiet > 0 {
		q = d.Quiet.String() + " (safety only)"
	}
	s := fmt.Sprintf("driver world: seed %d; %d consumers, %d shards, chaos %v, quiet %s; assignment %s, consumer %s; faults %s",
		d.Seed, d.Workers, d.Shards, d.Chaos, q, d.Assignment, d.Consumer, d.Options().Faults)
	if d.Mutation != "" {
		s += "; planted bug " + d.Mutation
	}
	return s
}

// driverSize bounds the drawn driver worlds (the driver simulation's own
// world space: 1-4 consumers at the start, 1-6 shards, 20-60 s of chaos).
type driverSize struct {
	maxWorkers, maxShards int
	minChaos, maxChaos    int // seconds
	quiet                 time.Duration
}

var (
	driverInside  = driverSize{maxWorkers: 4, maxShards: 6, minChaos: 20, maxChaos: 60}
	driverPlanted = driverSize{maxWorkers: 4, maxShards: 6, minChaos: 20, maxChaos: 60, quiet: 20 * time.Second}
)

// drawDriverCase draws a driver world: its size, how leases reach the
// consumers and how they read, and each fault class in or out (out is
// what shrinking goes towards).
func drawDriverCase(t *rapid.T, sz driverSize, mutation string) drawnDriver {
	d := drawnDriver{Mutation: mutation, Quiet: sz.quiet}
	d.Seed = rapid.Uint64Range(1, math.MaxUint32).Draw(t, "driver-seed")
	d.Workers = rapid.IntRange(1, sz.maxWorkers).Draw(t, "consumers")
	d.Shards = rapid.IntRange(1, sz.maxShards).Draw(t, "shards")
	d.Chaos = time.Duration(rapid.IntRange(sz.minChaos, sz.maxChaos).Draw(t, "chaos-seconds")) * time.Second
	d.Assignment = rapid.SampledFrom([]string{engine.AssignmentAssigner, engine.AssignmentScan, driversim.AssignmentMixed}).Draw(t, "assignment")
	d.Consumer = rapid.SampledFrom([]string{driversim.ConsumerPolling, driversim.ConsumerFanOut}).Draw(t, "consumer")
	for _, c := range driversim.FaultClasses {
		if c == "sub-drop" && d.Consumer != driversim.ConsumerFanOut {
			continue // a polling world has no subscription to drop
		}
		// one bit each (rapid's integers lean towards small values: a
		// roll in [0,99] came out above 49 in a quarter of the draws),
		// two for the classes the driver's own mix favours (in three
		// worlds in four); false, out, is what shrinking goes towards
		in := rapid.Bool().Draw(t, "class "+c)
		if c == "handoff-pause" || c == "shutdown" {
			in = rapid.Bool().Draw(t, "class "+c+" (again)") || in
		}
		if in {
			d.Classes = append(d.Classes, c)
		}
	}
	return d
}

// runDriverCase runs the case in a bubble of its own under t.
func runDriverCase(t *testing.T, d drawnDriver) (*driversim.Result, error) {
	var res *driversim.Result
	var err error
	synctest.Test(t, func(*testing.T) { res, err = driversim.Run(d.Options()) })
	return res, err
}

// driverFailure is a failing case and what it broke.
type driverFailure struct {
	d   drawnDriver
	res *driversim.Result
}

// driverProperty is the property over drawn driver worlds; last, if set,
// receives each failing case (the last one is the minimized case). n > 0
// runs only the first n cases rapid draws (rapid has no per-property
// number of checks): later ones pass at once, until a case fails (then
// shrinking runs every case it asks for).
func driverProperty(t *testing.T, sz driverSize, mutation string, n int, last *driverFailure) func(*rapid.T) {
	var mu sync.Mutex
	ran, failed := 0, false
	return func(rt *rapid.T) {
		mu.Lock()
		skip := n > 0 && ran >= n && !failed
		ran++
		mu.Unlock()
		if skip {
			return
		}
		d := drawDriverCase(rt, sz, mutation)
		res, err := runDriverCase(t, d)
		if err != nil {
			rt.Fatalf("driversim.Run: %v\n%s", err, d)
		}
		if len(res.Violations) == 0 {
			return
		}
		mu.Lock()
		failed = true
		mu.Unlock()
		if last != nil {
			*last = driverFailure{d: d, res: res}
		}
		rt.Fatal(driverReport(t.Name(), d, res))
	}
}

// driverReport is the failure message: the broken invariants, the
// commands that run the case again, the world, and each violation with
// its excerpt.
func driverReport(name string, d drawnDriver, res *driversim.Result) string {
	var inv []string
	for _, v := range res.Violations {
		inv = append(inv, v.Invariant+" "+v.Key)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invariants broken: %s\n", strings.Join(inv, ", "))
	fmt.Fprintf(&b, "replay this case: go test ./scenarios -run '^%s$' -rapid.failfile=<the fail file rapid names below> -v\n", name)
	fmt.Fprintf(&b, "or its world:     %s\n", d.Simrun())
	fmt.Fprintf(&b, "or:               %s\n", driversim.Replay(d.Options()))
	b.WriteString("(a driver world is not bit-identical run to run: a replay may need a few runs; simrun re-runs a failing seed and says how often it fails again)\n")
	fmt.Fprintf(&b, "%s\n%s", d, res.Summary())
	return b.String()
}

// holdTB is the rapid.TB of a property whose failure the test wants to
// follow up: it passes everything on to t but FailNow, which it records,
// so that the test goes on after rapid.Check.
type holdTB struct {
	*testing.T
	mu      sync.Mutex
	stopped bool
}

func (h *holdTB) FailNow() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.T.Fail()
}
func (h *holdTB) Fatal(args ...any)                 { h.T.Error(args...); h.FailNow() }
func (h *holdTB) Fatalf(format string, args ...any) { h.T.Errorf(format, args...); h.FailNow() }

// TestPropertyDriver: rapid draws worlds of the driver simulation (the
// production engine.Consumer, in virtual time: consumers, shards, chaos
// length, assignment, polling or fan-out, and each of the driver's fault
// classes in or out) and no run may break an invariant. It runs
// -scenarios.driver.checks cases (12 by default, 4 with -short: a driver
// world costs a few tenths of a CPU second; make sweep runs 500). A
// failing case is shrunk, saved under testdata/rapid/TestPropertyDriver/
// and run again -scenarios.driver.reruns times to say how often it
// reproduces.
func TestPropertyDriver(t *testing.T) {
	t.Parallel()
	n := *flagDriverChecks
	if testing.Short() && n > 4 {
		n = 4
	}
	var last driverFailure
	tb := &holdTB{T: t}
	rapid.Check(tb, driverProperty(t, driverInside, "", n, &last))
	if !t.Failed() || last.res == nil {
		return
	}
	failed := 0
	for i := 0; i < *flagDriverReruns; i++ {
		res, err := runDriverCase(t, last.d)
		if err == nil && len(res.Violations) > 0 {
			failed++
		}
	}
	t.Errorf("the minimized case failed again in %d of %d re-runs:\n%s\n  %s", failed, *flagDriverReruns, last.d, last.d.Simrun())
}
