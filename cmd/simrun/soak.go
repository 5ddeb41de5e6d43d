package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/reports"
	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/driversim"
)

// soakState is a soak's progress, saved in its state file as it goes: a
// soak stopped (Ctrl-C, a crash, a reboot) and started again with the
// same flags goes on where it was.
type soakState struct {
	// Options are the soak's settings (all but the seed range, the
	// parallelism and the files); a state file is only resumed by a soak
	// with the same.
	Options map[string]string `json:"options"`
	First   uint64            `json:"first"`
	Last    uint64            `json:"last"`
	// Partition of Partitions is the soak's share of First..Last: the
	// seeds whose offset from First is Partition modulo Partitions (see
	// partition.go); 0 of 1 (or of 0, in a state written before
	// partitions) is the whole range.
	Partition  int `json:"partition"`
	Partitions int `json:"partitions"`
	// DoneBelow: every seed of the share from First below it has run;
	// Done are the seeds of the share at or above it that have run too
	// (sorted).
	DoneBelow uint64   `json:"done_below"`
	Done      []uint64 `json:"done,omitempty"`

	Seeds       int            `json:"seeds"`
	Passed      int            `json:"passed"`
	Failed      int            `json:"failed"`
	Errors      int            `json:"errors"`
	Tiers       map[string]int `json:"tiers"`
	ByInvariant map[string]int `json:"violations_by_invariant"`
	Tolerated   int            `json:"tolerated"`
	LinUnknown  int            `json:"lin_unknown"`
	// DriverSeeds counts the seeds run as driver worlds (-driver,
	// -driver-share): their tier is inside.
	DriverSeeds int `json:"driver_seeds,omitempty"`
	// VirtualSeconds, Events: summed over the seeds run.
	VirtualSeconds float64 `json:"virtual_seconds"`
	Events         uint64  `json:"events"`
	// WallSeconds and CPUSeconds (user+sys of simrun) are summed over the
	// sessions that ran the soak.
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Sessions    int     `json:"sessions"`
	// Findings are the failing seeds, each saved as a case in the
	// findings folder.
	Findings []soakFinding `json:"findings,omitempty"`
}

type soakFinding struct {
	Seed       uint64   `json:"seed"`
	Invariants []string `json:"invariants,omitempty"`
	Error      string   `json:"error,omitempty"`
	Replay     string   `json:"replay"`
	File       string   `json:"file"`
	// Runner is reports.RunnerDriver for a driver world (empty: the
	// simulator); Reproduced how often its re-runs failed too.
	Runner     string `json:"runner,omitempty"`
	Reproduced string `json:"reproduced,omitempty"`
}

func (st *soakState) isDone(seed uint64) bool {
	if seed < st.DoneBelow {
		return true
	}
	_, ok := slices.BinarySearch(st.Done, seed)
	return ok
}

// part returns the state's partition.
func (st *soakState) part() partition { return partition{st.Partition, max(st.Partitions, 1)} }

// markDone records seed as run and advances DoneBelow over the seeds run.
func (st *soakState) markDone(seed uint64) {
	if i, ok := slices.BinarySearch(st.Done, seed); !ok {
		st.Done = slices.Insert(st.Done, i, seed)
	}
	n := 0
	for n < len(st.Done) && st.Done[n] == st.DoneBelow {
		st.DoneBelow += st.part().step()
		n++
	}
	st.Done = st.Done[n:]
}

// seeds calls f for every seed the state records as run, in order.
func (st *soakState) seeds(f func(seed uint64)) {
	p := st.part()
	for s := p.first(st.First); s < st.DoneBelow; s += p.step() {
		f(s)
	}
	for _, s := range st.Done {
		f(s)
	}
}

// soakOptions are the settings a state file must match.
func soakOptions(c *config) map[string]string {
	o := map[string]string{}
	for k, v := range c.options {
		switch k {
		case "seed", "seeds", "parallel": // the range is First..Last; parallelism may change
		default:
			o[k] = v
		}
	}
	return o
}

func loadSoakState(path string, c *config) (*soakState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &soakState{Options: soakOptions(c), First: c.first, Last: c.last, Partition: c.part.index, Partitions: c.part.count,
			DoneBelow: c.part.first(c.first), Tiers: map[string]int{}, ByInvariant: map[string]int{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var st soakState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	want := soakOptions(c)
	if !mapsEqual(st.Options, want) || st.First != c.first {
		return nil, fmt.Errorf("%s is the state of another soak (seeds from %d, %s); this one is seeds from %d, %s: pass another -state, or delete it to start again",
			path, st.First, optionString(st.Options), c.first, optionString(want))
	}
	if st.part() != c.part {
		return nil, fmt.Errorf("%s is the state of partition %s of a soak; this one is partition %s: pass another -state or -soak-dir", path, st.part(), c.part)
	}
	st.Last = c.last // a soak may be extended (or cut short) and goes on
	if st.Tiers == nil {
		st.Tiers = map[string]int{}
	}
	if st.ByInvariant == nil {
		st.ByInvariant = map[string]int{}
	}
	return &st, nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func optionString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// save writes the state atomically (a temporary file renamed over it).
func (st *soakState) save(path string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// soakResult is one seed's outcome, from a runner to the collector.
type soakResult struct {
	seed    uint64
	res     *sim.Result
	drv     *driversim.Report // a driver world's (res is nil)
	err     error
	finding *soakFinding
}

// cpuSeconds returns the process's user+sys CPU time so far.
func cpuSeconds() float64 {
	var t time.Duration
	// the children: the driver worlds' worker processes, once ended
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			t += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return t.Seconds()
}

// runSoak runs every seed of c's range not yet run (by its state file) on
// c.parallel goroutines, saves the state as it goes and each failing seed
// as a case in the findings folder, and prints the totals. It returns the
// exit status: 0 if every seed run so far passed, 1 if one failed, 130 if
// interrupted.
func runSoak(c *config, stdout, stderr io.Writer, intr interrupts) int {
	for _, dir := range []string{filepath.Dir(c.soakState), c.findings} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "simrun: %v\n", err)
			return exitUsage
		}
	}
	st, err := loadSoakState(c.soakState, c)
	if err != nil {
		fmt.Fprintf(stderr, "simrun: -soak: %v\n", err)
		return exitUsage
	}
	total := c.part.size(c.first, c.last)
	var todo []uint64
	for s := c.part.first(c.first); s <= c.last; s += c.part.step() {
		if !st.isDone(s) {
			todo = append(todo, s)
		}
	}
	already := total - len(todo)
	fmt.Fprintf(stdout, "soak: scenario %s, seeds %d-%d%s on %d cores: %d to run", c.scenario.Name, c.first, c.last, partOf(c.part, c.first), c.parallel, len(todo))
	if already > 0 {
		fmt.Fprintf(stdout, " (%d already run, from %s)", already, c.soakState)
	}
	switch {
	case c.driver:
		fmt.Fprintf(stdout, ", all driver worlds")
	case c.driverShare > 0:
		fmt.Fprintf(stdout, ", %d%% of the seeds driver worlds (-driver-share)", c.driverShare)
	}
	fmt.Fprintf(stdout, "; state %s, findings %s\n", c.soakState, c.findings)

	prog := newSoakProgress(stderr, total, already, st.Failed, isTerminal(stderr))
	start, cpu0 := time.Now(), cpuSeconds()
	st.Sessions++

	next := make(chan uint64)
	results := make(chan soakResult)
	var wg sync.WaitGroup
	for w := 0; w < c.parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			drv := &driverConn{bin: c.driverBin}
			defer drv.close()
			for seed := range next {
				results <- c.soakOne(drv, seed)
			}
		}()
	}
	go func() {
		defer close(next)
		for _, s := range todo {
			select {
			case next <- s:
			case <-intr.stop:
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()

	status := exitPass
	lastSave := time.Now()
	save := func() {
		st.WallSeconds += time.Since(start).Seconds()
		st.CPUSeconds += cpuSeconds() - cpu0
		start, cpu0 = time.Now(), cpuSeconds()
		if err := st.save(c.soakState); err != nil {
			fmt.Fprintf(stderr, "simrun: saving the soak's state: %v\n", err)
			status = exitUsage
		}
	}
	sessionStart, sessionCPU := time.Now(), cpuSeconds()
	interrupted := false
	stop := intr.stop
	ran := 0
collect:
	for {
		select {
		case r, ok := <-results:
			if !ok {
				break collect
			}
			ran++
			st.record(r)
			prog.done(r.finding != nil, st)
			if r.finding != nil {
				prog.print(func() {
					fmt.Fprintf(stdout, "FINDING seed %d: %s\n  replay: %s\n  case: %s\n", r.seed, findingWhat(r.finding), r.finding.Replay, r.finding.File)
				})
			}
			if time.Since(lastSave) >= 2*time.Second {
				save()
				lastSave = time.Now()
			}
		case <-stop:
			interrupted = true
			prog.print(func() {
				fmt.Fprintf(stderr, "simrun: interrupted: the seeds in flight finish (interrupt again to give them up); the state is saved\n")
			})
			stop = nil
		case <-intr.abandon:
			break collect
		}
	}
	prog.finish()
	save()
	wall := time.Since(sessionStart)
	cpu := cpuSeconds() - sessionCPU
	printSoak(stdout, c, st, ran, wall, cpu, interrupted)
	switch {
	case interrupted:
		return exitInterrupted
	case status != exitPass:
		return status
	case st.Failed > 0 || st.Errors > 0:
		return exitViolation
	}
	return exitPass
}

// partOf describes partition p of a range from first ("" for the whole).
func partOf(p partition, first uint64) string {
	if !p.partitioned() {
		return ""
	}
	return fmt.Sprintf(", partition %s (seeds %d, %d, ... every %d)", p, p.first(first), p.first(first)+p.step(), p.count)
}

func findingWhat(f *soakFinding) string {
	what := "broke " + strings.Join(f.Invariants, ", ")
	if f.Error != "" {
		what = "could not run: " + f.Error
	}
	if f.Runner == reports.RunnerDriver {
		what = "a driver world " + what
		if f.Reproduced != "" {
			what += " (failed again in " + f.Reproduced + ")"
		}
	}
	return what
}

// soakOne runs one seed (as a driver world on d if it is one) and, if it
// fails, saves it as a case.
func (c *config) soakOne(d *driverConn, seed uint64) soakResult {
	if c.isDriver(seed) {
		return c.soakDriver(d, seed)
	}
	o := c.base
	o.Seed = seed
	o.NoExcerpts = true // passing seeds need none; a finding is run again below
	res, err := sim.Run(o)
	r := soakResult{seed: seed, res: res, err: err}
	if err == nil {
		c.fixReplay(o, res)
		if res.OK() {
			return r
		}
	}
	// a finding: run it again with its excerpts and save it
	o.NoExcerpts = false
	f := &soakFinding{Seed: seed, Replay: replayCommand(o, c.scenario.Options)}
	var b strings.Builder
	fmt.Fprintf(&b, "simrun soak finding: scenario %s, seed %d\nreplay: %s\n\n", c.scenario.Name, seed, f.Replay)
	if err != nil {
		f.Error = err.Error()
		fmt.Fprintf(&b, "the run could not complete: %v\n", err)
	} else {
		full, err2 := sim.Run(o)
		if err2 != nil {
			full = res
			fmt.Fprintf(&b, "(the re-run for the excerpts failed: %v)\n", err2)
		}
		c.fixReplay(o, full)
		for _, v := range full.Violations {
			if !slices.Contains(f.Invariants, v.Invariant) {
				f.Invariants = append(f.Invariants, v.Invariant)
			}
		}
		b.WriteString(full.Summary())
		if js, err := json.Marshal(reports.NewSeed(c.scenario.Name, o, full, 0)); err == nil {
			b.WriteString("\njson: ")
			b.Write(js)
			b.WriteString("\n")
		}
	}
	f.File = filepath.Join(c.findings, c.scenario.Name+"-seed-"+strconv.FormatUint(seed, 10)+".txt")
	if werr := os.WriteFile(f.File, []byte(b.String()), 0o644); werr != nil {
		f.Error += " (the case could not be written: " + werr.Error() + ")"
	}
	r.finding = f
	return r
}

// soakDriver runs the driver world of seed on d and, if it fails (a
// failing driver seed is re-run, -driver-reruns), saves it as a case that
// says how often it failed again.
func (c *config) soakDriver(d *driverConn, seed uint64) soakResult {
	out, rep := c.runDriverSeed(d, seed, "")
	r := soakResult{seed: seed, drv: rep, err: out.err}
	if out.err == nil && rep.OK() {
		return r
	}
	f := &soakFinding{Seed: seed, Replay: out.seed.Replay, Runner: reports.RunnerDriver, Reproduced: out.seed.Reproduced}
	var b strings.Builder
	fmt.Fprintf(&b, "simrun soak finding: a driver world (the production driver in virtual time, sim/driversim), seed %d\nreplay: %s\n", seed, f.Replay)
	fmt.Fprintf(&b, "or:     %s\n", driversim.Replay(c.driverOptions(seed)))
	if out.err != nil {
		f.Error = out.err.Error()
		fmt.Fprintf(&b, "\nthe run could not complete: %v\n", out.err)
	} else {
		for _, v := range rep.Violations {
			if !slices.Contains(f.Invariants, v.Invariant) {
				f.Invariants = append(f.Invariants, v.Invariant)
			}
		}
		if rr := rep.Reruns; rr != nil {
			fmt.Fprintf(&b, "reproduced: the seed failed again in %d of %d re-runs (%d distinct trace hashes among the %d runs): "+
				"a driver world is not bit-identical run to run, its verdict is what must hold\n", rr.Failed, rr.Runs, rr.Hashes, rr.Runs+1)
		} else {
			b.WriteString("reproduced: not re-run (-driver-reruns 0)\n")
		}
		b.WriteString("\n" + rep.Summary)
		if js, err := json.Marshal(out.seed); err == nil {
			b.WriteString("\njson: ")
			b.Write(js)
			b.WriteString("\n")
		}
	}
	f.File = filepath.Join(c.findings, "driver-seed-"+strconv.FormatUint(seed, 10)+".txt")
	if werr := os.WriteFile(f.File, []byte(b.String()), 0o644); werr != nil {
		f.Error += " (the case could not be written: " + werr.Error() + ")"
	}
	r.finding = f
	return r
}

// record adds one seed's outcome to the totals.
func (st *soakState) record(r soakResult) {
	st.markDone(r.seed)
	st.Seeds++
	if r.finding != nil {
		st.Findings = append(st.Findings, *r.finding)
	}
	if r.err != nil {
		st.Errors++
		return
	}
	if rep := r.drv; rep != nil {
		st.DriverSeeds++
		st.Tiers["inside"]++
		st.VirtualSeconds += rep.VirtualSeconds
		if len(rep.Lin.TimedOut) > 0 {
			st.LinUnknown++
		}
		if rep.OK() {
			st.Passed++
			return
		}
		st.Failed++
		for _, v := range rep.Violations {
			st.ByInvariant[v.Invariant]++
		}
		return
	}
	res := r.res
	st.Tiers[res.Tier()]++
	st.VirtualSeconds += res.VirtualSeconds
	st.Events += res.Events
	st.Tolerated += len(res.Tolerated)
	if res.Lin.Unknown {
		st.LinUnknown++
	}
	if res.OK() {
		st.Passed++
		return
	}
	st.Failed++
	for _, v := range res.Violations {
		st.ByInvariant[v.Invariant]++
	}
}

func printSoak(w io.Writer, c *config, st *soakState, ran int, wall time.Duration, cpu float64, interrupted bool) {
	verdict := "PASS"
	if st.Failed > 0 || st.Errors > 0 {
		verdict = "FAIL"
	}
	if interrupted {
		verdict = "INTERRUPTED"
	}
	total := c.part.size(c.first, c.last)
	fmt.Fprintf(w, "%s: soak of scenario %s, seeds %d-%d%s: %d of %d run (%d this session), %d passed, %d failed", verdict, c.scenario.Name, c.first, c.last, partOf(c.part, c.first), st.Seeds, total, ran, st.Passed, st.Failed)
	if st.Errors > 0 {
		fmt.Fprintf(w, ", %d could not run", st.Errors)
	}
	fmt.Fprintf(w, "; tiers: %d inside, %d outside", st.Tiers["inside"], st.Tiers["outside"])
	if st.DriverSeeds > 0 {
		fmt.Fprintf(w, " (%d driver worlds among them)", st.DriverSeeds)
	}
	fmt.Fprintf(w, "; %d S1 tolerated outside the assumptions; Lin unknown on %d\n", st.Tolerated, st.LinUnknown)
	if len(st.ByInvariant) > 0 {
		var parts []string
		for _, k := range sortedKeys(st.ByInvariant) {
			parts = append(parts, fmt.Sprintf("%s %d", k, st.ByInvariant[k]))
		}
		fmt.Fprintf(w, "violations: %s\n", strings.Join(parts, ", "))
	}
	if ran > 0 && wall > 0 {
		fmt.Fprintf(w, "speed this session: %d seeds in %s wall, %.1f seeds/s on %d cores (%.1f per CPU second, %.0f CPU s)\n",
			ran, wall.Round(time.Second), float64(ran)/wall.Seconds(), c.parallel, float64(ran)/max(cpu, 1e-9), cpu)
	}
	if st.WallSeconds > 0 && st.Sessions > 1 {
		fmt.Fprintf(w, "speed over %d sessions: %.1f seeds/s, %.1f per CPU second\n", st.Sessions, float64(st.Seeds)/st.WallSeconds, float64(st.Seeds)/max(st.CPUSeconds, 1e-9))
	}
	for _, f := range st.Findings {
		fmt.Fprintf(w, "finding: seed %d %s; %s; replay: %s\n", f.Seed, findingWhat(&f), f.File, f.Replay)
	}
	fmt.Fprintf(w, "state: %s\n", c.soakState)
}

// soakProgress draws the soak's progress bar: seeds, seeds/s, failures,
// tiers, time left.
type soakProgress struct {
	mu                sync.Mutex
	w                 io.Writer
	on, lines         bool
	lastLine          time.Time
	total, n, already int
	failed            int
	inside, outside   int
	start, last       time.Time
	drawn, stopped    bool
}

// newSoakProgress draws a bar on a terminal (on), else prints a line every
// lineEvery.
func newSoakProgress(w io.Writer, total, already, failed int, on bool) *soakProgress {
	now := time.Now()
	return &soakProgress{w: w, on: on, lines: !on, total: total, n: already, already: already, failed: failed, start: now, lastLine: now}
}

func (p *soakProgress) done(failed bool, st *soakState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if failed {
		p.failed++
	}
	p.inside, p.outside = st.Tiers["inside"], st.Tiers["outside"]
	if p.lines && !p.stopped && p.n < p.total {
		if now := time.Now(); now.Sub(p.lastLine) >= lineEvery {
			p.lastLine = now
			fmt.Fprintf(p.w, "soak: %s\n", p.status())
		}
		return
	}
	if !p.on || p.stopped {
		return
	}
	if now := time.Now(); now.Sub(p.last) >= 200*time.Millisecond || p.n == p.total {
		p.last = now
		p.draw()
	}
}

func (p *soakProgress) draw() {
	const width = 30
	fill := width * p.n / p.total
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.status())
	p.drawn = true
}

// status is the progress in words: seeds done, rate, tiers, failures,
// time left.
func (p *soakProgress) status() string {
	el := time.Since(p.start)
	ran := p.n - p.already
	rate := float64(ran) / max(el.Seconds(), 1e-9)
	eta := ""
	if ran > 0 && p.n < p.total {
		eta = ", ~" + time.Duration(float64(p.total-p.n)/rate*float64(time.Second)).Round(time.Second).String() + " left"
	}
	fail := ""
	if p.failed > 0 {
		fail = fmt.Sprintf(", %d FAILED", p.failed)
	}
	return fmt.Sprintf("%d/%d seeds, %.1f/s, %d inside %d outside%s%s", p.n, p.total, rate, p.inside, p.outside, fail, eta)
}

func (p *soakProgress) print(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
	f()
}

func (p *soakProgress) finish() {
	p.print(func() {})
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}
