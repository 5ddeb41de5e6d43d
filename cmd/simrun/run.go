package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/reports"
	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/driversim"
)

// Exit statuses.
const (
	exitPass        = 0
	exitViolation   = 1
	exitUsage       = 2
	exitInterrupted = 130 // SIGINT or SIGTERM: a partial sweep
)

// interrupts tell a sweep to stop: stop closes at the first SIGINT or
// SIGTERM (no new seed starts, the seeds in flight finish), abandon at the
// second (the seeds in flight are given up). Nil channels never close.
type interrupts struct {
	stop, abandon <-chan struct{}
}

// outcome is one seed's run.
type outcome struct {
	seed reports.Seed
	res  *sim.Result // kept only for the one-seed run (with its trace)
	drv  *driversim.Report
	err  error
}

// run is the command, without signals; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runWith(args, stdout, stderr, interrupts{})
}

// runWith is the command; intr interrupts a sweep. It returns the exit
// status.
func runWith(args []string, stdout, stderr io.Writer, intr interrupts) int {
	c, err := parseArgs(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPass
		}
		fmt.Fprintf(stderr, "simrun: %v\n(see simrun -h)\n", err)
		return exitUsage
	}
	if c.list {
		listing(stdout)
		return exitPass
	}
	if c.mergeDirs != nil {
		return runMerge(c.mergeDirs, stdout, stderr)
	}
	if c.bench != "" {
		return runBench(c.bench, c.benchBin, c.benchCases, c.benchRuns, stdout, stderr)
	}
	if c.heapProf != "" {
		// written when the run's events are done: a path that cannot be
		// written is refused now, not after the run
		f, err := os.Create(c.heapProf)
		if err != nil {
			fmt.Fprintf(stderr, "simrun: -heapprofile: %v\n", err)
			return exitUsage
		}
		f.Close()
	}
	if c.cpuProf != "" || c.memProf != "" {
		stop, err := startProfiles(c.cpuProf, c.memProf)
		if err != nil {
			fmt.Fprintf(stderr, "simrun: %v\n", err)
			return exitUsage
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(stderr, "simrun: %v\n", err)
			}
		}()
	}
	if c.usesDriver() {
		cleanup, err := c.buildDriver(stderr)
		if err != nil {
			fmt.Fprintf(stderr, "simrun: %v\n", err)
			return exitUsage
		}
		defer cleanup()
	}
	if c.soak {
		return runSoak(c, stdout, stderr, intr)
	}
	if c.explore != nil && c.explore.world != "" {
		return runWorld(c, stdout, stderr)
	}
	if c.explore != nil {
		return runExplore(c, stdout, stderr, intr)
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()

	single := c.first == c.last
	var traceFile *os.File
	if c.trace != "" && c.isDriver(c.first) {
		// the driver world's worker writes it
		if err := os.MkdirAll(filepath.Dir(c.trace), 0o755); err != nil {
			fmt.Fprintf(stderr, "simrun: -trace: %v\n", err)
			return exitUsage
		}
		if abs, err := filepath.Abs(c.trace); err == nil {
			c.trace = abs
		}
	} else if c.trace != "" {
		if err := os.MkdirAll(filepath.Dir(c.trace), 0o755); err != nil {
			fmt.Fprintf(stderr, "simrun: -trace: %v\n", err)
			return exitUsage
		}
		traceFile, err = os.Create(c.trace)
		if err != nil {
			fmt.Fprintf(stderr, "simrun: -trace: %v\n", err)
			return exitUsage
		}
	}

	n := int(c.last - c.first + 1)
	results := make([]outcome, n)
	done := make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	term := isTerminal(stderr)
	prog := newProgress(stderr, n, !c.json && n > 1 && term, n > 1 && !term)
	start := time.Now()

	// a bounded pool: each worker takes the next seed; each seed runs on
	// one goroutine, a pure function of its options
	next := make(chan int)
	var wg sync.WaitGroup
	var started atomic.Int64
	for w := 0; w < c.parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			drv := &driverConn{bin: c.driverBin}
			defer drv.close()
			for i := range next {
				select {
				case <-intr.stop:
					continue // interrupted: start nothing new
				default:
				}
				started.Add(1)
				if seed := c.first + uint64(i); c.isDriver(seed) {
					tp := ""
					if single {
						tp = c.trace
					}
					results[i], results[i].drv = c.runDriverSeed(drv, seed, tp)
					prog.done(!results[i].seed.OK)
					close(done[i])
					continue
				}
				o := c.base
				o.Seed = c.first + uint64(i)
				if single {
					// the report's timeline draws the trace; without a
					// report the checkers need none (a failing run is
					// re-run with its trace for its excerpts)
					o.KeepTrace = c.out != ""
					if traceFile != nil {
						o.Trace = traceFile
					}
				}
				switch {
				case c.heapProf != "" && single:
					o.AtEnd = func() {
						if err := writeProfile("heap", c.heapProf, "-heapprofile"); err != nil {
							fmt.Fprintf(stderr, "simrun: %v\n", err)
						}
						if c.memStats {
							printLiveHeap(stderr, o.Seed)
						}
					}
				case c.memStats:
					o.AtEnd = func() { printLiveHeap(stderr, o.Seed) }
				}
				t0 := time.Now()
				res, err := sim.Run(o)
				wall := time.Since(t0)
				if err == nil {
					c.fixReplay(o, res)
				}
				if err != nil {
					results[i] = outcome{seed: reports.Seed{Schema: reports.SeedSchema, Scenario: c.scenario.Name, Seed: o.Seed, Mutation: o.Mutation, Error: err.Error(), Faults: []string{}, Violations: []reports.Violation{}, Runner: reports.RunnerSim}, err: err}
				} else {
					results[i] = outcome{seed: reports.NewSeed(c.scenario.Name, o, res, wall)}
					if single {
						results[i].res = res
					}
				}
				prog.done(!results[i].seed.OK)
				close(done[i])
			}
		}()
	}
	go func() {
		defer close(next)
		for i := 0; i < n; i++ {
			select {
			case next <- i:
			case <-intr.stop:
				return
			}
		}
	}()

	// print in seed order as results arrive; after an interrupt, the seeds
	// that finish (or finished out of order) are taken as they are
	var seeds []reports.Seed
	status := exitPass
	interrupted, abandonedAny := false, false
	for i := 0; i < n; i++ {
		if !interrupted {
			select {
			case <-done[i]:
			case <-intr.stop:
				interrupted = true
				abandonedAny = stopSweep(&wg, intr, prog, stderr)
			}
		}
		if interrupted {
			select {
			case <-done[i]:
			default:
				continue // not run, or abandoned
			}
		}
		r := results[i]
		seeds = append(seeds, r.seed)
		switch {
		case r.err != nil:
			fmt.Fprintf(stderr, "simrun: seed %d: %v\n", r.seed.Seed, r.err)
			status = exitUsage
		case !r.seed.OK && status == exitPass:
			status = exitViolation
		}
		if c.json {
			b, err := json.Marshal(r.seed)
			if err != nil {
				fmt.Fprintf(stderr, "simrun: %v\n", err)
				return exitUsage
			}
			out.Write(b)
			out.WriteByte('\n')
			out.Flush()
			continue
		}
		var b strings.Builder
		printSeed(&b, r, single, c.verbose)
		if b.Len() > 0 {
			prog.print(func() {
				out.WriteString(b.String())
				out.Flush()
			})
		}
	}
	if !abandonedAny {
		wg.Wait()
	}
	wall := time.Since(start)
	prog.finish()
	if traceFile != nil {
		if err := traceFile.Close(); err != nil {
			fmt.Fprintf(stderr, "simrun: -trace: %v\n", err)
			return exitUsage
		}
	}

	sw := reports.NewSweep(c.scenario.Name, c.scenario.Story, c.command, seeds, wall, c.parallel)
	sw.Options = c.options
	if interrupted {
		// no seed starts after the interrupt: started is final
		st := int(started.Load())
		sw.Interrupted = fmt.Sprintf("interrupted: %d of %d seeds finished (%d abandoned, %d not started); this summary covers the finished seeds only",
			len(seeds), n, st-len(seeds), n-st)
		status = exitInterrupted
	}

	// the timeline: the one-seed run's own result, or a re-run of the
	// first violating seed (or the first seed) of a sweep with its trace
	var drawn *sim.Result
	if c.out != "" {
		if single {
			drawn = results[0].res
		} else if anyRan(seeds) && !interrupted && !c.isDriver(sw.TimelineSeed) { // no re-run after Ctrl-C, none of a driver world
			ts := sw.TimelineSeed
			o := c.base
			o.Seed = ts
			o.KeepTrace = true
			res, err := sim.Run(o)
			if err == nil {
				c.fixReplay(o, res)
				drawn = res
				sw.TimelineHash = fmt.Sprintf("%016x", res.TraceHash)
				for _, s := range seeds {
					if s.Seed == ts && s.TraceHash != sw.TimelineHash {
						sw.TimelineNote = "the re-run's trace hash differs from the sweep's run: determinism broken (D1)"
						fmt.Fprintf(stderr, "simrun: seed %d re-run for the report: trace hash %s, sweep had %s: NOT DETERMINISTIC\n", ts, sw.TimelineHash, s.TraceHash)
						status = exitViolation
					}
				}
			}
		}
		if drawn != nil {
			sw.TimelineSeed = drawn.World.Seed
			sw.TimelineHash = fmt.Sprintf("%016x", drawn.TraceHash)
		}
		if err := reports.Write(c.out, sw, drawn); err != nil {
			fmt.Fprintf(stderr, "simrun: writing the report: %v\n", err)
			return exitUsage
		}
	}
	if c.json {
		if c.out != "" {
			fmt.Fprintf(stderr, "report: %s\n", filepath.Join(c.out, reports.HTMLFile))
		}
		if interrupted {
			fmt.Fprintf(stderr, "simrun: %s\n", sw.Interrupted)
		}
		return status
	}
	if interrupted {
		fmt.Fprintf(out, "INTERRUPTED: %s\n", strings.TrimPrefix(sw.Interrupted, "interrupted: "))
	}
	printTotals(out, c, sw, single)
	return status
}

// stopSweep handles the first interrupt of a sweep: it says so (with the
// progress bar erased), then waits for the seeds in flight to finish, or
// for the second interrupt. It reports whether seeds were abandoned.
func stopSweep(wg *sync.WaitGroup, intr interrupts, prog *progress, stderr io.Writer) (abandoned bool) {
	prog.print(func() {
		fmt.Fprintf(stderr, "simrun: interrupted: finishing the seeds in flight (interrupt again to abandon them), then writing the partial summary\n")
	})
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
		return false
	case <-intr.abandon:
		prog.print(func() { fmt.Fprintf(stderr, "simrun: interrupted again: abandoning the seeds in flight\n") })
		return true
	}
}

func anyRan(seeds []reports.Seed) bool {
	for _, s := range seeds {
		if s.Error == "" {
			return true
		}
	}
	return false
}

// printSeed prints what a human needs of one seed: one line for a passing
// seed of a sweep (only with -v), the violations of a failing one.
func printSeed(w io.Writer, r outcome, single, verbose bool) {
	s := r.seed
	if r.err != nil {
		return // reported on stderr
	}
	if single && r.drv != nil {
		if verbose {
			fmt.Fprint(w, r.drv.Summary)
			return
		}
		fmt.Fprintf(w, "seed %d (a driver world): %s\n", s.Seed, r.drv.World)
		fmt.Fprintf(w, "trace hash %s, %d records, %.0f virtual seconds\n", s.TraceHash, s.Records, s.VirtualSeconds)
		for _, v := range r.drv.Violations {
			fmt.Fprint(w, sim.FormatViolation(v))
		}
		return
	}
	if single && r.res != nil {
		if verbose {
			fmt.Fprint(w, r.res.Summary())
			return
		}
		res := r.res
		fmt.Fprintf(w, "seed %d: %s", s.Seed, worldHeader(res.World))
		fmt.Fprintf(w, "tier %s", s.Tier)
		if len(s.Outside) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(s.Outside, "; "))
		}
		fmt.Fprintf(w, ", %d scheduled actions, trace hash %s, %d events, %.0f virtual seconds\n", s.Actions, s.TraceHash, s.Events, s.VirtualSeconds)
		for _, v := range res.Violations {
			fmt.Fprint(w, sim.FormatViolation(v))
		}
		for _, v := range res.Tolerated {
			fmt.Fprintf(w, "tolerated (outside the assumptions): %s\n", v.String())
		}
		return
	}
	if verbose {
		res := "ok"
		if !s.OK {
			res = fmt.Sprintf("FAIL (%s)", plural(len(s.Violations), "violation"))
		}
		fmt.Fprintf(w, "seed %d: %s, %s, %d workers, %d shards, faults [%s], hash %s, %d events, %.0f vs in %.2fs\n",
			s.Seed, res, s.Tier, s.Workers, s.Shards, strings.Join(s.Faults, ","), s.TraceHash, s.Events, s.VirtualSeconds, s.WallSeconds)
	}
	if !s.OK {
		const show = 3
		for i, v := range s.Violations {
			if i == show && !verbose {
				fmt.Fprintf(w, "  ... and %d more (see the report, or replay with -v)\n", len(s.Violations)-show)
				break
			}
			fmt.Fprintf(w, "seed %d: VIOLATION %s shard=%s workers=%v window=[%.3fs, %.3fs]\n  %s\n", s.Seed, v.Invariant, v.Shard, v.Workers, v.FromS, v.ToS, v.Detail)
		}
		if s.Reproduced != "" {
			fmt.Fprintf(w, "  a driver world: failed again in %s\n", s.Reproduced)
		}
		fmt.Fprintf(w, "  replay: %s\n", s.Replay)
	}
}

// printTotals prints the closing summary.
func printTotals(w io.Writer, c *config, sw *reports.Sweep, single bool) {
	t := sw.Totals
	if single {
		s := sw.Seeds[0]
		switch {
		case s.Error != "":
		case s.OK:
			fmt.Fprintf(w, "PASS: no invariant broken")
			if len(s.Tolerated) > 0 {
				fmt.Fprintf(w, " (%s tolerated outside the assumptions)", plural(len(s.Tolerated), "S1 violation"))
			}
			fmt.Fprintln(w)
		default:
			fmt.Fprintf(w, "FAIL: %s%s; replay: %s\n", plural(len(s.Violations), "violation"), reproduced(s), s.Replay)
		}
	} else {
		verdict := "PASS"
		if t.Failed > 0 || t.Errors > 0 {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s: scenario %s, seeds %d-%d: %d run, %d passed, %d failed", verdict, sw.Scenario, c.first, c.last, t.Seeds, t.Passed, t.Failed)
		if t.Errors > 0 {
			fmt.Fprintf(w, ", %d could not run", t.Errors)
		}
		fmt.Fprintf(w, "; violations %d", t.Violations)
		if len(t.ByInvariant) > 0 {
			var parts []string
			for _, k := range sortedKeys(t.ByInvariant) {
				parts = append(parts, fmt.Sprintf("%s %d", k, t.ByInvariant[k]))
			}
			fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
		}
		if t.Tolerated > 0 {
			fmt.Fprintf(w, ", %d S1 tolerated outside the assumptions", t.Tolerated)
		}
		fmt.Fprintf(w, "; tiers: %d inside, %d outside", t.Tiers["inside"], t.Tiers["outside"])
		if n := t.Runners[reports.RunnerDriver]; n > 0 {
			fmt.Fprintf(w, "; %d driver worlds", n)
		}
		fmt.Fprintln(w)
	}
	if t.Errors == t.Seeds {
		return
	}
	fmt.Fprintf(w, "figures: failovers %d (p50 %s, p99 %s, max %s), planned moves %d (gap p50 %s, p99 %s, max %s; re-deliveries/move %.2f), handoffs %d, re-deliveries/handoff %.2f, table ops/shard-hour %.0f (rows read %.0f), stream ops/shard-hour %.0f\n",
		t.Failovers, fmtMs(t.FailoverP50Ms), fmtMs(t.FailoverP99Ms), fmtMs(t.FailoverMaxMs), t.PlannedMoves, fmtMs(t.HandoffGapP50Ms), fmtMs(t.HandoffGapP99Ms), fmtMs(t.HandoffGapMaxMs), t.RedeliveriesPerPlannedMove,
		t.Handoffs, t.RedeliveriesPerHandoff, t.TableOpsPerShardHour, t.TableRowsPerShardHour, t.StreamOpsPerShardHour)
	if t.TableCost != nil {
		fmt.Fprintf(w, "table cost (DynamoDB on-demand, mean of the seeds): %s\n", t.TableCost)
	}
	par := ""
	if t.Parallel > 1 {
		par = fmt.Sprintf(", %d seeds at a time", t.Parallel)
	}
	fmt.Fprintf(w, "speed: %.0f virtual s in %s wall%s: %.0f virtual s per wall s (%.0f per core)",
		t.VirtualSeconds, durationString(time.Duration(t.WallSeconds*float64(time.Second))), par, t.VirtualPerWallSecond, t.VirtualPerCoreSecond)
	if t.Events > 0 { // the simulator's events (driver worlds have none)
		fmt.Fprintf(w, ", %.0f events/s", t.EventsPerWallSecond)
	}
	fmt.Fprintln(w)
	if sw.TimelineNote != "" {
		fmt.Fprintf(w, "WARNING: %s\n", sw.TimelineNote)
	}
	switch {
	case c.out != "" && sw.Interrupted != "" && !single:
		fmt.Fprintf(w, "report: %s (partial, without a timeline; summary.json beside it)\n", rel(filepath.Join(c.out, reports.HTMLFile)))
	case c.out != "" && c.isDriver(sw.TimelineSeed):
		fmt.Fprintf(w, "report: %s (seed %d is a driver world: no timeline; summary.json beside it)\n", rel(filepath.Join(c.out, reports.HTMLFile)), sw.TimelineSeed)
	case c.out != "":
		fmt.Fprintf(w, "report: %s (timeline of seed %d; summary.json beside it)\n", rel(filepath.Join(c.out, reports.HTMLFile)), sw.TimelineSeed)
	}
}

func fmtMs(ms float64) string {
	return durationString(time.Duration(ms * float64(time.Millisecond)))
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// reproduced says how often a failing driver seed failed again, or
// nothing.
func reproduced(s reports.Seed) string {
	if s.Reproduced == "" {
		return ""
	}
	return " (a driver world: failed again in " + s.Reproduced + ")"
}

// rel shortens p relative to the working directory when it lies inside it.
func rel(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// fixReplay completes the replay command of a run of o (sim.ReplayCommand
// leaves out settings at their zero value or "swarm", which -scenario
// would otherwise replace by the scenario's own) in res and its
// violations.
func (c *config) fixReplay(o sim.Options, res *sim.Result) {
	r := replayCommand(o, c.scenario.Options)
	res.Replay = r
	for i := range res.Violations {
		res.Violations[i].Replay = r
	}
	for i := range res.Tolerated {
		res.Tolerated[i].Replay = r
	}
}

// replayCommand is sim.ReplayCommand(o) plus the flags that restore a
// setting the scenario sc sets but o left at its zero value.
func replayCommand(o sim.Options, sc sim.Options) string {
	r := sim.ReplayCommand(o)
	if o.Workers == 0 && sc.Workers != 0 {
		r += " -workers 0"
	}
	if o.Shards == 0 && sc.Shards != 0 {
		r += " -shards 0"
	}
	if o.Chaos == 0 && sc.Chaos != 0 {
		r += " -chaos 0s"
	}
	if o.Quiet == 0 && sc.Quiet != 0 {
		r += " -quiet 0s"
	}
	swarm := func(f string) bool { return f == "" || f == "swarm" }
	if swarm(o.Faults) && !swarm(sc.Faults) {
		r += " -faults swarm"
	}
	if o.Mutation == "" && sc.Mutation != "" {
		r += " -mutation \"\""
	}
	if o.Consumer == "" && sc.Consumer != "" {
		r += " -consumer \"\""
	}
	if o.SubscriptionLifetime == 0 && sc.SubscriptionLifetime != 0 {
		r += " -subscription-lifetime 0s"
	}
	return r
}
