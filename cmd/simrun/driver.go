package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/reports"
	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/driversim"
)

// Driver worlds: seeds that run the production driver (engine.Consumer)
// in virtual time (sim/driversim) instead of the simulator's core.
//
// driversim.Run needs a testing/synctest bubble, which only a test binary
// can open (synctest.Test takes its *testing.T), and simrun is not one. So
// simrun builds sim/driversim's test binary from the checkout it runs in
// (go test -c, with the planted bugs' build tag if simrun has it; the go
// build cache makes it quick after the first time), or takes one from
// -driver-binary, and runs each driver seed in one of its worker
// processes (driversim.StartWorker: one per goroutine of the sweep, one
// seed at a time each), which sends back a JSON report.
//
// A driver world is not bit-identical run to run (goroutines woken at one
// virtual instant run in an order the seed does not fix; see sim/driversim):
// its verdicts are what must hold. So a failing driver seed is run again
// (-driver-reruns times) and its report says how often it failed again.

const (
	// defaultSoakDriverShare is the percentage of a swarm soak's seeds
	// that run as driver worlds unless -driver-share says otherwise.
	defaultSoakDriverShare = 20
	// defaultDriverReruns is how many times a failing driver seed runs
	// again.
	defaultDriverReruns = 4
)

// driverSlot places seed in 0..99: a seed runs as a driver world when its
// slot is below the share (a hash of the seed, so that the share does not
// follow any other pattern of the seeds).
func driverSlot(seed uint64) int {
	x := seed + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % 100)
}

// isDriver reports whether seed runs as a driver world.
func (c *config) isDriver(seed uint64) bool {
	return c.driver || c.driverShare > 0 && driverSlot(seed) < c.driverShare
}

// usesDriver reports whether any seed of the range may run as a driver
// world.
func (c *config) usesDriver() bool { return c.driver || c.driverShare > 0 }

// driverOptions are the options of the driver world of seed.
func (c *config) driverOptions(seed uint64) driversim.Options {
	o := c.driverBase
	o.Seed = seed
	return o
}

// buildDriver prepares the test binary of sim/driversim: -driver-binary,
// else one beside simrun's own executable named as Build names it
// (driversim.test, or driversim-mutations.test for a simrun with the
// planted bugs: an image that ships simrun without the go command ships
// it beside), else a build of it into a temporary folder (removed by the
// returned func).
func (c *config) buildDriver(stderr io.Writer) (cleanup func(), err error) {
	if c.driverBin != "" {
		return func() {}, nil
	}
	if exe, err := os.Executable(); err == nil {
		if bin := filepath.Join(filepath.Dir(exe), driversim.BinaryName(planted.Enabled())); isFile(bin) {
			c.driverBin = bin
			return func() {}, nil
		}
	}
	dir, err := os.MkdirTemp("", "simrun-driver-")
	if err != nil {
		return nil, err
	}
	start := time.Now()
	bin, err := driversim.Build(context.Background(), driverRoot(), dir, planted.Enabled())
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("-driver: %w (or pass a test binary of ./%s with -driver-binary)", err, driversim.PackageDir)
	}
	if d := time.Since(start); d > 5*time.Second {
		fmt.Fprintf(stderr, "simrun: built the driver simulation's test binary in %s\n", d.Round(100*time.Millisecond))
	}
	c.driverBin = bin
	return func() { os.RemoveAll(dir) }, nil
}

// driverRoot is the checkout to build the driver simulation from: the one
// the working directory is in, else the one this simrun was built from
// (its source path, recorded by the compiler; go run and go test keep it).
func driverRoot() string {
	root := repoRoot()
	if _, err := os.Stat(filepath.Join(root, driversim.PackageDir)); err == nil {
		return root
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		src := filepath.Dir(filepath.Dir(filepath.Dir(file))) // cmd/simrun/driver.go
		if _, err := os.Stat(filepath.Join(src, driversim.PackageDir)); err == nil {
			return src
		}
	}
	return root
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// driverConn is one goroutine's worker process, started when first
// needed and started again after it died.
type driverConn struct {
	bin string
	w   *driversim.Worker
}

// run runs req on the worker.
func (d *driverConn) run(req driversim.Request) (*driversim.Report, error) {
	if d.w == nil {
		w, err := driversim.StartWorker(d.bin)
		if err != nil {
			return nil, err
		}
		d.w = w
	}
	rep, err := d.w.Run(req)
	if err != nil {
		d.w.Kill()
		d.w = nil
	}
	return rep, err
}

// close ends the worker, if any.
func (d *driverConn) close() {
	if d.w != nil {
		_ = d.w.Close()
		d.w = nil
	}
}

// runDriverSeed runs the driver world of seed on d (with its history
// written to tracePath if set) and returns its outcome, with the report
// itself.
func (c *config) runDriverSeed(d *driverConn, seed uint64, tracePath string) (outcome, *driversim.Report) {
	o := c.driverOptions(seed)
	replay := driverReplay(o)
	rep, err := d.run(driversim.Request{Options: o, Reruns: c.driverReruns, TracePath: tracePath})
	if err == nil && rep.Error != "" {
		err = fmt.Errorf("%s", rep.Error)
	}
	if err != nil {
		return outcome{seed: reports.Seed{Schema: reports.SeedSchema, Scenario: c.scenario.Name, Seed: seed, Mutation: c.base.Mutation, Error: err.Error(), Replay: replay,
			Faults: []string{}, Violations: []reports.Violation{}, Runner: reports.RunnerDriver}, err: err}, nil
	}
	for i := range rep.Violations {
		rep.Violations[i].Replay = replay
	}
	return outcome{seed: driverSeed(c.scenario.Name, c.base.Mutation, rep, replay)}, rep
}

// driverSeed is the reports.Seed of a driver world's report. Driver
// worlds are inside the engine's assumptions (one true clock, no drift,
// owner ids unique): their tier is "inside".
func driverSeed(scenario, mutation string, rep *driversim.Report, replay string) reports.Seed {
	s := reports.Seed{Schema: reports.SeedSchema, Scenario: scenario, Seed: rep.Seed, Mutation: mutation, OK: rep.OK(), Tier: "inside",
		TraceHash: fmt.Sprintf("%016x", rep.TraceHash), Records: rep.Records, VirtualSeconds: rep.VirtualSeconds,
		WallSeconds: math.Round(rep.WallSeconds*1e4) / 1e4, Workers: rep.Workers, Shards: rep.Shards, Faults: rep.Faults,
		Violations: reports.Violations(rep.Violations), Replay: replay, Runner: reports.RunnerDriver, Reproduced: rep.Reproduced()}
	s.SetFigures(sim.NewFigures(rep.Figures, rep.LeaseDuration, rep.Puts, rep.LostToRetention))
	s.Lin, s.LinIllegal, s.LinTimedOut = "ok", rep.Lin.Illegal, len(rep.Lin.TimedOut)
	switch {
	case len(rep.Lin.Illegal) > 0:
		s.Lin = "illegal"
	case len(rep.Lin.TimedOut) > 0:
		s.Lin = "unknown"
	}
	return s
}

// driverReplay is the simrun command that runs o's driver world again.
func driverReplay(o driversim.Options) string {
	s := "go run ./cmd/simrun -driver -seed " + strconv.FormatUint(o.Seed, 10)
	if o.Workers != 0 {
		s += " -workers " + strconv.Itoa(o.Workers)
	}
	if o.Shards != 0 {
		s += " -shards " + strconv.Itoa(o.Shards)
	}
	if o.Chaos != 0 {
		s += " -chaos " + o.Chaos.String()
	}
	if o.Quiet != 0 {
		s += " -quiet " + o.Quiet.String()
	}
	for _, f := range []struct{ flag, v string }{{"faults", o.Faults}, {"assignment", o.Assignment}, {"consumer", o.Consumer}} {
		if f.v != "" && f.v != "swarm" {
			s += " -" + f.flag + " " + f.v
		}
	}
	if o.Mutation != "" {
		s = strings.Replace(s, "go run ", "go run -tags "+sim.MutationTag+" ", 1) + " -mutation " + sim.EngineMutationPrefix + o.Mutation
	}
	return s
}

// checkDriverFaults validates a -faults value for driver worlds.
func checkDriverFaults(f string) (string, error) {
	f = strings.TrimSpace(f)
	switch f {
	case "", "swarm", "none", "all":
		return f, nil
	}
	known := map[string]bool{}
	for _, c := range driversim.FaultClasses {
		known[c] = true
	}
	for _, c := range strings.Split(f, ",") {
		if !known[strings.TrimSpace(c)] {
			return "", usagef("-faults: unknown fault class %q of driver worlds; use swarm, none, all or a comma-separated list of: %s",
				strings.TrimSpace(c), strings.Join(driversim.FaultClasses, ","))
		}
	}
	return f, nil
}
