package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
)

// benchCase is one measured run of simrun: its flags and what it shows.
type benchCase struct {
	Name string
	What string
	Args []string
	// Swarm: the case is a sweep of seeds, measured in seeds per second.
	Swarm bool
}

// world returns the flags of one seed of W workers x S shards for a
// virtual length (two thirds chaos without faults, one third healing).
func world(workers, shards int, length time.Duration) []string {
	return []string{"-seed", "1", "-workers", fmt.Sprint(workers), "-shards", fmt.Sprint(shards),
		"-duration", (length * 2 / 3).String(), "-quiet", (length / 3).String(), "-faults", "none"}
}

// benchCases are the figures `make bench` measures (simrun -bench).
func benchCases() []benchCase {
	h, m := time.Hour, 10*time.Minute
	cs := []benchCase{
		{Name: "10x100-1h", What: "10 workers x 100 shards, one virtual hour, no faults", Args: world(10, 100, h)},
		{Name: "10x100-10m", What: "the same, 10 virtual minutes (memory flat in run length)", Args: world(10, 100, m)},
		{Name: "100x2000-1h", What: "100 workers x 2,000 shards, one virtual hour, no faults", Args: world(100, 2000, h)},
		{Name: "100x2000-10m", What: "the same, 10 virtual minutes (memory flat in run length)", Args: world(100, 2000, m)},
		{Name: "100x2000-3m", What: "the same, 3 virtual minutes (what a baseline that cannot hold an hour runs)", Args: world(100, 2000, 3*time.Minute)},
	}
	// The stream keeps a day of records, so an hour's world holds six
	// times the records of 10 minutes' (a few bytes each); with a
	// retention of 5 minutes it holds as many, and what is left to grow
	// is the simulator's own.
	for _, w := range [][2]int{{10, 100}, {100, 2000}} {
		for _, l := range []struct {
			d    time.Duration
			name string
		}{{h, "1h"}, {m, "10m"}} {
			cs = append(cs, benchCase{Name: fmt.Sprintf("%dx%d-%s-ret5m", w[0], w[1], l.name),
				What: "the same world with 5 minutes of retention (memory flat in run length, retained records aside)",
				Args: append(world(w[0], w[1], l.d), "-retention", "5m")})
		}
	}
	for _, ws := range [][2]int{{1, 100}, {10, 10}, {100, 100}, {10, 1000}} {
		cs = append(cs, benchCase{Name: fmt.Sprintf("%dx%d-10m", ws[0], ws[1]), What: fmt.Sprintf("%d workers x %d shards, 10 virtual minutes (CPU per event)", ws[0], ws[1]),
			Args: world(ws[0], ws[1], m)})
	}
	cs = append(cs, benchCase{Name: "1000x10000-10m", What: "1,000 workers x 10,000 shards, 10 virtual minutes, no faults (a world ten times the largest above)",
		Args: world(1000, 10000, m)})
	cs = append(cs, benchCase{Name: "swarm-200", What: "the default swarm (make sim's scenario), seeds 1-200, on every core", Swarm: true,
		Args: []string{"-seeds", "1-200", "-parallel", fmt.Sprint(runtime.NumCPU())}})
	return cs
}

// benchResult is one case's measurement. CPU is user+sys of the simrun
// process that ran it (its GC workers included); PeakRSS its maximum
// resident set.
type benchResult struct {
	Name    string `json:"name"`
	What    string `json:"what"`
	Command string `json:"command"`

	VirtualSeconds float64 `json:"virtual_seconds"`
	Events         uint64  `json:"events"`
	Seeds          int     `json:"seeds,omitempty"`
	TraceHash      string  `json:"trace_hash,omitempty"`

	// The run with the least CPU of Runs runs (CPUSamples: each run's).
	Runs        int       `json:"runs"`
	CPUSamples  []float64 `json:"cpu_seconds_samples,omitempty"`
	UserSeconds float64   `json:"user_seconds"`
	SysSeconds  float64   `json:"sys_seconds"`
	CPUSeconds  float64   `json:"cpu_seconds"`
	WallSeconds float64   `json:"wall_seconds"`
	PeakRSSMB   float64   `json:"peak_rss_mb"`
	// LiveHeapMB is the heap in use after a GC when the run's events
	// were done (simrun -memstats): what the run holds, garbage aside.
	LiveHeapMB float64 `json:"live_heap_mb,omitempty"`

	VirtualPerCPUSecond float64 `json:"virtual_seconds_per_cpu_second"`
	MicrosPerEvent      float64 `json:"cpu_us_per_event"`
	SeedsPerSecond      float64 `json:"seeds_per_wall_second,omitempty"`
	SeedsPerCPUSecond   float64 `json:"seeds_per_cpu_second,omitempty"`
}

// benchTarget is one of the figures' targets and whether it was met.
type benchTarget struct {
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Met    bool    `json:"met"`
	// Issue names the issue that set the target
	Issue int `json:"issue"`
}

type benchReport struct {
	Commit  string        `json:"commit,omitempty"`
	Go      string        `json:"go"`
	CPUs    int           `json:"cpus"`
	Binary  string        `json:"binary"`
	Cases   []benchResult `json:"cases"`
	Targets []benchTarget `json:"targets"`
}

// runBench measures the cases named in only (all if empty) with binary
// bin (this simrun if empty), each runs times (once if a run takes more
// than a minute of CPU), keeping the run with the least CPU; writes the
// report as JSON to path, and prints a table. It returns the exit status.
func runBench(path, bin string, only []string, runs int, stdout, stderr io.Writer) int {
	memstats := bin == "" // another simrun (a baseline) may not have -memstats
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "simrun: -bench: %v\n", err)
			return exitUsage
		}
		bin = exe
	}
	rep := benchReport{Go: runtime.Version(), CPUs: runtime.NumCPU(), Binary: bin}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rep.Commit = s.Value
			}
		}
	}
	if rep.Commit == "" { // go run stamps no VCS information
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			rep.Commit = strings.TrimSpace(string(out))
		}
	}
	want := map[string]bool{}
	for _, n := range only {
		want[strings.TrimSpace(n)] = true
	}
	var names []string
	for _, bc := range benchCases() {
		names = append(names, bc.Name)
	}
	for n := range want {
		if !slices.Contains(names, n) {
			fmt.Fprintf(stderr, "simrun: -bench-cases: no case %q (the cases: %s)\n", n, strings.Join(names, ", "))
			return exitUsage
		}
	}
	for _, bc := range benchCases() {
		if len(want) > 0 && !want[bc.Name] {
			continue
		}
		var best benchResult
		var samples []float64
		for i := 0; i < max(runs, 1); i++ {
			fmt.Fprintf(stderr, "bench: %s (run %d) ...\n", bc.Name, i+1)
			r, err := measure(bin, bc, memstats)
			if err != nil {
				fmt.Fprintf(stderr, "simrun: -bench %s: %v\n", bc.Name, err)
				return exitUsage
			}
			samples = append(samples, r.CPUSeconds)
			if i == 0 || r.CPUSeconds < best.CPUSeconds {
				best = r
			}
			if r.CPUSeconds > 60 {
				break
			}
		}
		best.Runs, best.CPUSamples = len(samples), samples
		rep.Cases = append(rep.Cases, best)
	}
	rep.Targets = targets(rep.Cases) // those of the cases measured
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "simrun: %v\n", err)
		return exitUsage
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintf(stderr, "simrun: -bench: %v\n", err)
		return exitUsage
	}
	printBench(stdout, &rep)
	fmt.Fprintf(stdout, "written: %s\n", path)
	missed := 0
	for _, t := range rep.Targets {
		if !t.Met {
			missed++
			fmt.Fprintf(stderr, "bench: TARGET MISSED (issue %d): %s: measured %v\n", t.Issue, t.Target, t.Value)
		}
	}
	if missed > 0 {
		fmt.Fprintf(stderr, "bench: %d of %d targets missed (figures written to %s)\n", missed, len(rep.Targets), path)
		return exitViolation
	}
	fmt.Fprintf(stderr, "bench: all %d targets met\n", len(rep.Targets))
	return exitPass
}

// measure runs one case in a child process and reads its rusage.
func measure(bin string, bc benchCase, memstats bool) (benchResult, error) {
	args := append(append([]string(nil), bc.Args...), "-json", "-report=false")
	if !bc.Swarm {
		args = append(args, "-parallel", "1")
	}
	r := benchResult{Name: bc.Name, What: bc.What, Command: "go run ./cmd/simrun " + strings.Join(args, " ")}
	if memstats && !bc.Swarm {
		args = append(args, "-memstats") // one GC at the end of the run
	}
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r.WallSeconds = time.Since(start).Seconds()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitViolation {
			return r, fmt.Errorf("%v: %s", err, errb.String())
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.UserSeconds = time.Duration(ru.Utime.Nano()).Seconds()
		r.SysSeconds = time.Duration(ru.Stime.Nano()).Seconds()
		r.PeakRSSMB = float64(ru.Maxrss) / 1024 // Linux: KiB
	}
	r.CPUSeconds = r.UserSeconds + r.SysSeconds
	for _, line := range strings.Split(errb.String(), "\n") {
		var m struct {
			M *struct {
				Live int64 `json:"live_heap_bytes"`
			} `json:"memstats"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.M != nil {
			r.LiveHeapMB = round(float64(m.M.Live)/(1<<20), 2)
		}
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var s struct {
			Virtual   float64 `json:"virtual_seconds"`
			Events    uint64  `json:"events"`
			TraceHash string  `json:"trace_hash"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return r, fmt.Errorf("a line of output: %v", err)
		}
		r.Seeds++
		r.VirtualSeconds += s.Virtual
		r.Events += s.Events
		r.TraceHash = s.TraceHash
	}
	if r.CPUSeconds > 0 {
		r.VirtualPerCPUSecond = round(r.VirtualSeconds/r.CPUSeconds, 1)
	}
	if r.Events > 0 {
		r.MicrosPerEvent = round(r.CPUSeconds*1e6/float64(r.Events), 3)
	}
	if bc.Swarm {
		r.SeedsPerSecond = round(float64(r.Seeds)/r.WallSeconds, 2)
		r.SeedsPerCPUSecond = round(float64(r.Seeds)/r.CPUSeconds, 2)
		r.TraceHash = ""
	} else {
		r.Seeds = 0
	}
	r.CPUSeconds, r.UserSeconds, r.SysSeconds = round(r.CPUSeconds, 2), round(r.UserSeconds, 2), round(r.SysSeconds, 2)
	r.WallSeconds, r.PeakRSSMB = round(r.WallSeconds, 2), round(r.PeakRSSMB, 1)
	return r, nil
}

func round(x float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(x*p+0.5)) / p
}

// benchGoal is one target: a figure of one case (or the ratio of two
// cases' figures), its limit, and the issue that set it.
type benchGoal struct {
	issue  int
	what   string
	cases  [2]string // the case, and for a ratio the case it is divided by
	figure func(r *benchResult) float64
	// at most: the figure must not exceed limit (else: at least limit);
	// within: |figure - 1| <= limit (a ratio)
	limit       float64
	atMost      bool
	within      bool
	skipWithout func(r *benchResult) bool // the figure was not measured (a baseline without -memstats)
}

func virtualPerCPU(r *benchResult) float64 { return r.VirtualPerCPUSecond }
func peakRSS(r *benchResult) float64       { return r.PeakRSSMB }
func liveHeap(r *benchResult) float64      { return r.LiveHeapMB }
func seedsPerCPU(r *benchResult) float64   { return r.SeedsPerCPUSecond }
func noLiveHeap(r *benchResult) bool       { return r.LiveHeapMB == 0 }

// benchGoals are the targets of issues 9 and 18.
var benchGoals = []benchGoal{
	{issue: 18, what: "default swarm: seeds per CPU second >= 25", cases: [2]string{"swarm-200"}, figure: seedsPerCPU, limit: 25},
	{issue: 18, what: "10x100, one virtual hour: virtual seconds per CPU second >= 4000", cases: [2]string{"10x100-1h"}, figure: virtualPerCPU, limit: 4000},
	{issue: 9, what: "10x100, one virtual hour: peak RSS <= 200 MB", cases: [2]string{"10x100-1h"}, figure: peakRSS, limit: 200, atMost: true},
	{issue: 18, what: "100x2000, one virtual hour: virtual seconds per CPU second >= 100", cases: [2]string{"100x2000-1h"}, figure: virtualPerCPU, limit: 100},
	{issue: 9, what: "100x2000, one virtual hour: peak RSS <= 1024 MB", cases: [2]string{"100x2000-1h"}, figure: peakRSS, limit: 1024, atMost: true},
	{issue: 9, what: "10x100: peak RSS of one hour / of 10 minutes within 1 ± 0.2", cases: [2]string{"10x100-1h", "10x100-10m"}, figure: peakRSS, limit: 0.2, within: true},
	{issue: 9, what: "10x100: live heap of one hour / of 10 minutes within 1 ± 0.2", cases: [2]string{"10x100-1h", "10x100-10m"}, figure: liveHeap, limit: 0.2, within: true, skipWithout: noLiveHeap},
	{issue: 18, what: "100x2000 (a day of retention): peak RSS of one hour / of 10 minutes within 1 ± 0.1", cases: [2]string{"100x2000-1h", "100x2000-10m"}, figure: peakRSS, limit: 0.1, within: true},
	{issue: 18, what: "100x2000 (a day of retention): live heap of one hour / of 10 minutes within 1 ± 0.1", cases: [2]string{"100x2000-1h", "100x2000-10m"}, figure: liveHeap, limit: 0.1, within: true, skipWithout: noLiveHeap},
	{issue: 9, what: "10x100 with 5 minutes of retention: peak RSS of one hour / of 10 minutes within 1 ± 0.2", cases: [2]string{"10x100-1h-ret5m", "10x100-10m-ret5m"}, figure: peakRSS, limit: 0.2, within: true},
	{issue: 9, what: "10x100 with 5 minutes of retention: live heap of one hour / of 10 minutes within 1 ± 0.2", cases: [2]string{"10x100-1h-ret5m", "10x100-10m-ret5m"}, figure: liveHeap, limit: 0.2, within: true, skipWithout: noLiveHeap},
	{issue: 9, what: "100x2000 with 5 minutes of retention: peak RSS of one hour / of 10 minutes within 1 ± 0.2", cases: [2]string{"100x2000-1h-ret5m", "100x2000-10m-ret5m"}, figure: peakRSS, limit: 0.2, within: true},
	{issue: 9, what: "100x2000 with 5 minutes of retention: live heap of one hour / of 10 minutes within 1 ± 0.2", cases: [2]string{"100x2000-1h-ret5m", "100x2000-10m-ret5m"}, figure: liveHeap, limit: 0.2, within: true, skipWithout: noLiveHeap},
	{issue: 18, what: "1000x10000, 10 virtual minutes: peak RSS <= 8192 MB", cases: [2]string{"1000x10000-10m"}, figure: peakRSS, limit: 8192, atMost: true},
	{issue: 18, what: "1000x10000, 10 virtual minutes: virtual seconds per CPU second >= 5", cases: [2]string{"1000x10000-10m"}, figure: virtualPerCPU, limit: 5},
}

// targets evaluates benchGoals on the cases measured: a goal whose cases
// were not all measured is left out.
func targets(cs []benchResult) []benchTarget {
	by := map[string]*benchResult{}
	for i := range cs {
		by[cs[i].Name] = &cs[i]
	}
	var out []benchTarget
	for _, g := range benchGoals {
		a := by[g.cases[0]]
		if a == nil || g.skipWithout != nil && g.skipWithout(a) {
			continue
		}
		v := g.figure(a)
		if g.cases[1] != "" {
			b := by[g.cases[1]]
			if b == nil || g.figure(b) == 0 || g.skipWithout != nil && g.skipWithout(b) {
				continue
			}
			v = round(v/g.figure(b), 3)
		}
		t := benchTarget{Target: g.what, Value: v, Limit: g.limit, Issue: g.issue}
		switch {
		case g.within:
			t.Met = v >= 1-g.limit && v <= 1+g.limit
			t.Limit = 1 + g.limit
		case g.atMost:
			t.Met = v <= g.limit
		default:
			t.Met = v >= g.limit
		}
		out = append(out, t)
	}
	return out
}

// printBench prints the cases and targets as Markdown tables (the README
// quotes them).
func printBench(w io.Writer, rep *benchReport) {
	fmt.Fprintf(w, "| case | virtual s | events | CPU s (user+sys) | virtual s per CPU s | CPU µs per event | peak RSS MB | live heap MB | command |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rep.Cases {
		if r.Seeds > 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %.0f | %d | %.2f | %.0f | %.3f | %.1f | %.1f | `%s` |\n", r.Name, r.VirtualSeconds, r.Events, r.CPUSeconds, r.VirtualPerCPUSecond, r.MicrosPerEvent, r.PeakRSSMB, r.LiveHeapMB, r.Command)
	}
	for _, r := range rep.Cases {
		if r.Seeds == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d seeds in %.1f s wall on %d cores, %.2f seeds/s; %.1f CPU s, %.2f seeds per CPU second; peak RSS %.1f MB (`%s`)\n",
			r.Name, r.Seeds, r.WallSeconds, rep.CPUs, r.SeedsPerSecond, r.CPUSeconds, r.SeedsPerCPUSecond, r.PeakRSSMB, r.Command)
	}
	fmt.Fprintf(w, "\n| target | issue | measured | met |\n| --- | --- | --- | --- |\n")
	for _, t := range rep.Targets {
		met := "yes"
		if !t.Met {
			met = "NO"
		}
		fmt.Fprintf(w, "| %s | %d | %v | %s |\n", t.Target, t.Issue, t.Value, met)
	}
}
