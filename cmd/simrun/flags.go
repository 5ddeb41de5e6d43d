package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/ddbcost"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/scenarios"
	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/driversim"
)

// Defaults of the sweep that `make sim` (no flags) runs.
const (
	defaultFirst = 1
	defaultSeeds = 32
	// defaultSoakSeeds is the soak's range (1-N) without -seeds.
	defaultSoakSeeds = 10000
)

// config is the parsed command line.
type config struct {
	scenario scenarios.Scenario
	base     sim.Options // the scenario's options with the flags applied; Seed unset
	first    uint64
	last     uint64
	parallel int
	json     bool
	out      string // report folder ("" with -report=false)
	trace    string
	list     bool
	verbose  bool
	memStats bool   // print the live heap at the end of each run (stderr)
	cpuProf  string // write a CPU profile of the whole command here
	memProf  string // write a heap profile at the end here
	heapProf string // write a heap profile when a run's events are done here
	// soak runs the seeds as a soak: resumable from soakState, failing
	// seeds saved under findings
	soak      bool
	soakState string
	findings  string
	part      partition // the soak's share of the seeds (partition.go)
	// mergeDirs are the folders simrun -soak-merge reads (merge.go)
	mergeDirs []string
	// bench measures the figures into this file (runBench)
	bench      string
	benchBin   string
	benchCases []string
	benchRuns  int
	command    string
	options    map[string]string
	// driver worlds (driver.go): every seed (driver) or a share of the
	// seeds in percent, with driverBase's options, run by the test binary
	// driverBin; a failing one re-run driverReruns times
	driver       bool
	driverShare  int
	driverBase   driversim.Options
	driverBin    string
	driverReruns int
	// explore is the guided search or a world file's replay (explore.go)
	explore *exploreConfig
}

// errUsage marks an error of the command line (exit status 2).
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

func usagef(format string, a ...any) error { return errUsage{fmt.Sprintf(format, a...)} }

func newFlagSet(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("simrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: simrun [flags]

Runs a scenario of the shardlease simulator on one seed or a sweep of seeds
against the in-memory fakes (no AWS), prints a summary, writes summary.json
and report.html, and exits 0 when every seed passed, 1 when any broke an
invariant, 2 on bad usage. With no flags: scenario %q, seeds %d-%d.

flags:
`, scenarios.Default, defaultFirst, defaultFirst+defaultSeeds-1)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses the command line. It returns flag.ErrHelp for -h.
func parseArgs(args []string, stderr io.Writer) (*config, error) {
	fs := newFlagSet(stderr)
	var (
		scenario   = fs.String("scenario", scenarios.Default, "the scenario to run (see -list)")
		seed       = fs.String("seed", "", "run this one seed (replays it exactly: same trace hash)")
		seeds      = fs.String("seeds", "", fmt.Sprintf("run the seeds A-B (inclusive); default %d-%d", defaultFirst, defaultFirst+defaultSeeds-1))
		workers    = fs.Int("workers", 0, "initial workers (0: the scenario's, or drawn from the seed)")
		shards     = fs.Int("shards", 0, "initial shards (0: the scenario's, or drawn from the seed)")
		duration   = fs.Duration("duration", 0, "virtual length of the chaos phase, in which the faults are in force (0: the scenario's, or drawn); a healing phase follows")
		chaos      = fs.Duration("chaos", 0, "the same as -duration (the replay commands use it)")
		retention  = fs.Duration("retention", 0, "how long the stream keeps records (0: a day, or drawn from 30s to 5m where the fault class retention is drawn)")
		quiet      = fs.Duration("quiet", 0, "virtual length of the healing phase after the chaos (0: derived from the liveness bound)")
		faults     = fs.String("faults", "", "fault classes: swarm (each seed draws its mix), none, all, or a comma-separated list (see -list); default: the scenario's")
		mutation   = fs.String("mutation", "", "plant a bug (see -list) to show the checkers catch it")
		assignment = fs.String("assignment", "", "how leases reach the workers: assigner, scan, mixed (each worker slot draws), or empty: the assigner (the swarm draws)")
		renewal    = fs.String("renewal", "", "how assigner-mode workers renew: lease (each lease's row), session (one session row per worker), mixed (each worker slot draws), auto (the engine's default: by session unless a worker's start-up scan shows a KCL worker's row), or empty: per lease (the swarm draws)")
		consumer   = fs.String("consumer", "", "how the workers read: polling, fan-out (enhanced fan-out), or empty: the swarm draws fan-out for 3 worlds in 10; default: the scenario's")
		store      = fs.String("store", "", "the lease table: dynamodb, etcd (an etcd store, with pushed assignments), or empty: the swarm draws etcd for a quarter of its worlds")
		lifetime   = fs.Duration("subscription-lifetime", 0, "fan-out: how long a subscription lasts (0: the scenario's, or drawn from 15s to 5m)")
		boundary   = fs.String("boundary", "", "boundary seeking (timings at the edges of the assumptions): on, off, or empty: the swarm draws it for half its worlds")
		aim        = fs.String("aim", "", "faults aimed inside the engine's multi-write operations: on, off, or empty: the swarm draws them for 4 worlds in 10")
		targeted   = fs.String("targeted", "", "a fault aimed at one kind of row or call alone: on, off, or empty: the swarm draws one for a quarter of its worlds")
		kpl        = fs.String("kpl", "", "KPL-aggregated records: on, off, or empty: the swarm draws them for 4 worlds in 10")
		ckptEvery  = fs.String("checkpoint-every", "", "the processor's checkpoint cadence, as applications checkpoint: every N records (1000), every interval (60s), or both (1000,60s); empty: drawn (a share of batches, and every 1-20 s)")
		priceWrite = fs.Float64("price-write", ddbcost.DefaultWritePrice, "DynamoDB on-demand price, USD per million write request units, for the table cost figures (default: us-east-1's)")
		priceRead  = fs.Float64("price-read", ddbcost.DefaultReadPrice, "DynamoDB on-demand price, USD per million read request units, for the table cost figures (default: us-east-1's)")
		combo      = fs.String("combo", "", fmt.Sprintf("a combination of rare things drawn on purpose (see -list), off, or empty: the swarm draws one for %.0f%% of its worlds", 100*sim.ComboShare()))
		options    = fs.String("options", "", "the draw of the engine options beyond the lease timings (initial position, poll and scan intervals, balance by, ...): on, off (their defaults, reading from TRIM_HORIZON), or empty: the swarm draws them")
		parallel   = fs.Int("parallel", runtime.NumCPU(), "seeds run at a time (each seed is single-threaded and deterministic)")
		asJSON     = fs.Bool("json", false, "print one JSON object per seed, one per line, in seed order")
		out        = fs.String("out", "", "write summary.json and report.html to this folder (default: reports/out/SCENARIO, or reports/out/SCENARIO-seed-N for one seed)")
		report     = fs.Bool("report", true, "write the report (summary.json, report.html); -report=false skips it")
		list       = fs.Bool("list", false, "list the scenarios, fault classes and mutations, and exit")
		traceTo    = fs.String("trace", "", "write the trace of the run as JSON Lines to this file (one seed only)")
		verbose    = fs.Bool("v", false, "print every seed's full summary (world, schedule, figures, violations)")
		cpuProf    = fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
		memProf    = fs.String("memprofile", "", "write a heap profile (allocations) at the end to this file")
		heapProf   = fs.String("heapprofile", "", "write a heap profile of what the run holds when its events are done (after a GC; one seed) to this file: where the live heap goes")
		memStats   = fs.Bool("memstats", false, "print, on stderr, the live heap (after a GC) when each run's events are done: what the run holds, without the garbage")
		soak       = fs.Bool("soak", false, "run the seeds (-seeds, default 1-10000) as a soak on every core: a progress bar, a state file that a soak started again with the same flags resumes (-state), every failing seed saved as a case with its replay command (-findings); no report")
		state      = fs.String("state", "", "the soak's state file (default reports/out/soak/SCENARIO/state.json)")
		findings   = fs.String("findings", "", "the soak's findings folder (default reports/out/soak/SCENARIO/findings)")
		soakDir    = fs.String("soak-dir", "", "the soak's folder: its state file and findings go there (under part-I-of-N/ for a partition); default reports/out/soak/SCENARIO")
		partFlag   = fs.String("partition", "", "run partition I/N of the soak's seeds (0 <= I < N): the seeds whose offset from the first is I modulo N; default: from "+envIndex+" (a Kubernetes Indexed Job) with -partitions, else the whole range")
		partsFlag  = fs.Int("partitions", 0, "the soak's partition count N, this soak's index coming from "+envIndex+" (default: "+envPartitions+")")
		soakMerge  = fs.Bool("soak-merge", false, "merge the partitions of a soak: simrun -soak-merge DIR... reads the state files in each DIR (or its part-* folders), checks that they cover their range once, and prints the totals and every finding")
		bench      = fs.String("bench", "", "measure the simulator's speed and memory (CPU time, peak RSS of a child simrun per case) and write the figures to this JSON file (make bench: reports/bench.json)")
		benchBin   = fs.String("bench-binary", "", "with -bench: measure this simrun binary instead of this one (a baseline)")
		benchSel   = fs.String("bench-cases", "", "with -bench: only these cases (comma-separated names)")
		benchN     = fs.Int("bench-runs", 3, "with -bench: runs of each case (the one with the least CPU counts; one for a case over a minute of CPU)")
		driver     = fs.Bool("driver", false, "run every seed as a driver world: the production driver (engine.Consumer) in virtual time, sim/driversim, in worker processes of its test binary (built with go test -c from this checkout); -faults then names the driver's fault classes (see -list); replays of driver findings carry -driver")
		drvShare   = fs.Int("driver-share", -1, fmt.Sprintf("run this percentage of the swarm's seeds (chosen by a hash of the seed) as driver worlds; default 0, and %d in a soak of the swarm", defaultSoakDriverShare))
		drvBin     = fs.String("driver-binary", "", "with driver worlds: run this test binary of ./sim/driversim (go test -c -o FILE ./sim/driversim) instead of building one")
		drvReruns  = fs.Int("driver-reruns", defaultDriverReruns, "run a failing driver seed this many times more and report how often it fails again (a driver world is not bit-identical run to run)")
	)
	ef := addExploreFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage{err.Error()}
	}
	if fs.NArg() > 0 && !*soakMerge {
		return nil, usagef("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *soakMerge {
		if fs.NArg() == 0 {
			return nil, usagef("-soak-merge needs the folders to merge: simrun -soak-merge DIR...")
		}
		for name := range set {
			if name != "soak-merge" {
				return nil, usagef("-soak-merge takes no other flag (-%s): the state files hold the soak's", name)
			}
		}
		return &config{mergeDirs: fs.Args(), options: map[string]string{}}, nil
	}

	c := &config{json: *asJSON, list: *list, verbose: *verbose, trace: *traceTo, parallel: *parallel, options: map[string]string{},
		cpuProf: *cpuProf, memProf: *memProf, heapProf: *heapProf, memStats: *memStats, soak: *soak, bench: *bench, benchBin: *benchBin, benchRuns: *benchN}
	if *benchSel != "" {
		c.benchCases = strings.Split(*benchSel, ",")
	}
	if (c.benchBin != "" || c.benchCases != nil) && c.bench == "" {
		return nil, usagef("-bench-binary and -bench-cases go with -bench FILE")
	}
	c.command = commandLine(args)
	if c.list || c.bench != "" {
		return c, nil
	}
	sc, ok := scenarios.Lookup(*scenario)
	if !ok {
		return nil, usagef("unknown scenario %q; known: %s", *scenario, strings.Join(scenarioNames(), ", "))
	}
	c.scenario = sc
	o := sc.Options
	o.Scenario = sc.Name
	o.Seed = 0

	// seeds
	switch {
	case set["seed"] && set["seeds"]:
		return nil, usagef("-seed and -seeds are exclusive")
	case set["seed"]:
		n, err := strconv.ParseUint(strings.TrimSpace(*seed), 10, 64)
		if err != nil {
			return nil, usagef("-seed %q: not a seed (a non-negative integer)", *seed)
		}
		c.first, c.last = n, n
	case set["seeds"]:
		a, b, err := parseRange(*seeds)
		if err != nil {
			return nil, err
		}
		c.first, c.last = a, b
	case *soak:
		c.first, c.last = 1, defaultSoakSeeds
	default:
		c.first, c.last = defaultFirst, defaultFirst+defaultSeeds-1
	}

	// the world
	if *workers < 0 || *shards < 0 {
		return nil, usagef("-workers and -shards must not be negative")
	}
	if set["workers"] {
		o.Workers = *workers
	}
	if set["shards"] {
		o.Shards = *shards
	}
	if *duration < 0 || *chaos < 0 || *quiet < 0 {
		return nil, usagef("-duration, -chaos and -quiet must not be negative")
	}
	if set["duration"] && set["chaos"] && *duration != *chaos {
		return nil, usagef("-duration %v and -chaos %v disagree (they are the same setting)", *duration, *chaos)
	}
	if set["duration"] {
		o.Chaos = *duration
	}
	if set["chaos"] {
		o.Chaos = *chaos
	}
	if set["quiet"] {
		o.Quiet = *quiet
	}
	if *retention < 0 || set["retention"] && *retention == 0 {
		return nil, usagef("-retention %v: need a positive duration", *retention)
	}
	o.Retention = *retention
	if set["faults"] {
		check := checkFaults
		if *driver {
			check = checkDriverFaults
		}
		f, err := check(*faults)
		if err != nil {
			return nil, err
		}
		o.Faults = f
	}
	if set["assignment"] {
		o.Assignment = *assignment
	}
	if set["renewal"] {
		o.Renewal = *renewal
	}
	if set["consumer"] {
		switch *consumer {
		case "", "polling", "fan-out":
		default:
			return nil, usagef("-consumer %q: want polling or fan-out (or empty: drawn)", *consumer)
		}
		o.Consumer = *consumer
	}
	if set["store"] {
		switch *store {
		case "", "dynamodb", "etcd":
		default:
			return nil, usagef("-store %q: want dynamodb or etcd (or empty: drawn)", *store)
		}
		o.Store = *store
	}
	if set["subscription-lifetime"] {
		if *lifetime < 0 {
			return nil, usagef("-subscription-lifetime must not be negative")
		}
		o.SubscriptionLifetime = *lifetime
	}
	if set["boundary"] {
		switch *boundary {
		case "", "on", "off":
		default:
			return nil, usagef("-boundary %q: want on or off (or empty: drawn)", *boundary)
		}
		o.Boundary = *boundary
	}
	if set["aim"] {
		switch *aim {
		case "", "on", "off":
		default:
			return nil, usagef("-aim %q: want on or off (or empty: drawn)", *aim)
		}
		o.Aim = *aim
	}
	if set["targeted"] {
		switch *targeted {
		case "", "on", "off":
		default:
			return nil, usagef("-targeted %q: want on or off (or empty: drawn)", *targeted)
		}
		o.Targeted = *targeted
	}
	if set["kpl"] {
		switch *kpl {
		case "", "on", "off":
		default:
			return nil, usagef("-kpl %q: want on or off (or empty: drawn)", *kpl)
		}
		o.KPL = *kpl
	}
	if set["checkpoint-every"] {
		ce, err := sim.ParseCheckpointCadence(*ckptEvery)
		if err != nil {
			return nil, usagef("-checkpoint-every: %v", err)
		}
		o.CheckpointEvery = ce
	}
	if *priceWrite < 0 || *priceRead < 0 {
		return nil, usagef("-price-write %v, -price-read %v: prices cannot be negative", *priceWrite, *priceRead)
	}
	o.Prices = ddbcost.Prices{Write: *priceWrite, Read: *priceRead}
	if set["combo"] {
		if *combo != "" && *combo != "off" && !slices.ContainsFunc(sim.Combos, func(c sim.Combo) bool { return c.Name == *combo }) {
			return nil, usagef("-combo %q: want one of the combinations (see -list), off, or empty (drawn)", *combo)
		}
		o.Combo = *combo
	}
	if set["options"] {
		switch *options {
		case "", "on", "off":
		default:
			return nil, usagef("-options %q: want on or off (or empty: drawn)", *options)
		}
		o.Options = *options
	}
	if set["mutation"] {
		if *mutation != "" {
			if _, ok := sim.Mutations[*mutation]; !ok || *driver && !strings.HasPrefix(*mutation, sim.EngineMutationPrefix) {
				if ok {
					return nil, usagef("mutation %q is the simulator's: driver worlds plant only the engine's bugs (engine:NAME, see -list)", *mutation)
				}
				if strings.HasPrefix(*mutation, sim.EngineMutationPrefix) && !planted.Enabled() {
					return nil, usagef("mutation %q is planted inside the engine, which this simrun was built without: run go run -tags %s ./cmd/simrun ...", *mutation, sim.MutationTag)
				}
				return nil, usagef("unknown mutation %q; known: %s", *mutation, strings.Join(mutationNames(), ", "))
			}
		}
		o.Mutation = *mutation
	}
	if err := c.parseDriver(set, o, *driver, *drvShare, *drvBin, *drvReruns); err != nil {
		return nil, err
	}
	c.base = o
	if err := c.parseExplore(set, ef, o); err != nil || c.explore != nil {
		return c, err
	}

	if c.parallel < 1 {
		return nil, usagef("-parallel %d: need at least 1", c.parallel)
	}
	if n := c.last - c.first + 1; uint64(c.parallel) > n {
		c.parallel = int(n)
	}
	c.part = partition{0, 1}
	if c.trace != "" && c.first != c.last {
		return nil, usagef("-trace writes the trace of one run: use it with -seed N")
	}
	if (set["state"] || set["findings"] || set["soak-dir"] || set["partition"] || set["partitions"]) && !c.soak {
		return nil, usagef("-state, -findings, -soak-dir, -partition and -partitions are the soak's: use them with -soak")
	}
	if c.heapProf != "" && (c.first != c.last || c.soak) {
		return nil, usagef("-heapprofile profiles one run: use it with -seed N")
	}
	if c.soak {
		if c.json || c.trace != "" || set["out"] {
			return nil, usagef("-soak prints totals and writes findings: it takes neither -json, -trace nor -out")
		}
		p, err := parsePartition(*partFlag, *partsFlag, set["partitions"], c.last-c.first+1)
		if err != nil {
			return nil, err
		}
		c.part = p
		dir := *soakDir
		if dir == "" {
			dir = filepath.Join(repoRoot(), "reports", "out", "soak", sc.Name)
		}
		if p.partitioned() {
			dir = filepath.Join(dir, p.dir())
		}
		c.soakState, c.findings = *state, *findings
		if c.soakState == "" {
			c.soakState = filepath.Join(dir, "state.json")
		}
		if c.findings == "" {
			c.findings = filepath.Join(dir, "findings")
		}
		*report = false
	}
	if *report {
		c.out = *out
		if c.out == "" {
			name := sc.Name
			if c.first == c.last {
				name += "-seed-" + strconv.FormatUint(c.first, 10)
			}
			c.out = filepath.Join(repoRoot(), "reports", "out", name)
		}
	} else if set["out"] {
		return nil, usagef("-out and -report=false disagree")
	}

	c.options["scenario"] = sc.Name
	if c.first == c.last {
		c.options["seed"] = strconv.FormatUint(c.first, 10)
	} else {
		c.options["seeds"] = fmt.Sprintf("%d-%d", c.first, c.last)
	}
	if o.Workers != 0 {
		c.options["workers"] = strconv.Itoa(o.Workers)
	}
	if o.Shards != 0 {
		c.options["shards"] = strconv.Itoa(o.Shards)
	}
	if o.Chaos != 0 {
		c.options["chaos"] = o.Chaos.String()
	}
	if o.Retention != 0 {
		c.options["retention"] = o.Retention.String()
	}
	if o.Quiet != 0 {
		c.options["quiet"] = o.Quiet.String()
	}
	f := o.Faults
	if f == "" {
		f = "swarm"
	}
	c.options["faults"] = f
	if o.Mutation != "" {
		c.options["mutation"] = o.Mutation
	}
	if o.Consumer != "" {
		c.options["consumer"] = o.Consumer
	}
	if o.Store != "" {
		c.options["store"] = o.Store
	}
	if o.Assignment != "" {
		c.options["assignment"] = o.Assignment
	}
	if o.Renewal != "" {
		c.options["renewal"] = o.Renewal
	}
	if o.Boundary != "" {
		c.options["boundary"] = o.Boundary
	}
	if o.Aim != "" {
		c.options["aim"] = o.Aim
	}
	if o.Targeted != "" {
		c.options["targeted"] = o.Targeted
	}
	if o.KPL != "" {
		c.options["kpl"] = o.KPL
	}
	if o.Options != "" {
		c.options["options"] = o.Options
	}
	if o.Combo != "" {
		c.options["combo"] = o.Combo
	}
	if !o.CheckpointEvery.IsZero() {
		c.options["checkpoint-every"] = o.CheckpointEvery.String()
	}
	if len(o.Actions) > 0 {
		c.options["scripted_actions"] = strconv.Itoa(len(o.Actions))
	}
	if o.Engine != nil {
		c.options["engine"] = "adjusted by the scenario"
	}
	if c.driver {
		c.options["driver"] = "all"
	} else if c.driverShare > 0 {
		c.options["driver-share"] = strconv.Itoa(c.driverShare)
	}
	c.options["parallel"] = strconv.Itoa(c.parallel)
	return c, nil
}

// parseDriver reads the driver worlds' flags into c (driver.go): which
// seeds run as driver worlds, and their options, from o (the scenario's
// options with the flags applied).
func (c *config) parseDriver(set map[string]bool, o sim.Options, driver bool, share int, bin string, reruns int) error {
	c.driver, c.driverBin, c.driverReruns = driver, bin, reruns
	switch {
	case share > 100 || share < 0 && set["driver-share"]:
		return usagef("-driver-share %d: want a percentage, 0 to 100", share)
	case driver && set["driver-share"]:
		return usagef("-driver runs every seed as a driver world: it takes no -driver-share")
	case reruns < 0:
		return usagef("-driver-reruns %d: must not be negative", reruns)
	}
	swarm := c.scenario.Name == scenarios.Default
	drawn := o.Faults == "" || o.Faults == "swarm"
	sameBugs := o.Mutation == "" || strings.HasPrefix(o.Mutation, sim.EngineMutationPrefix)
	c.driverShare = share
	if share < 0 {
		c.driverShare = 0
		if c.soak && swarm && drawn && sameBugs {
			c.driverShare = defaultSoakDriverShare
		}
	}
	if !c.usesDriver() {
		if set["driver-binary"] || set["driver-reruns"] {
			return usagef("-driver-binary and -driver-reruns go with driver worlds (-driver or -driver-share)")
		}
		return nil
	}
	if !swarm {
		return usagef("driver worlds draw their own worlds: -scenario %s does not apply to them (use the swarm)", c.scenario.Name)
	}
	for _, f := range []string{"retention", "boundary", "store", "subscription-lifetime", "heapprofile", "memstats", "cpuprofile", "memprofile"} {
		if set[f] && driver {
			return usagef("-%s does not apply to driver worlds", f)
		}
	}
	if !driver && !drawn {
		return usagef("-driver-share mixes driver worlds into the swarm's drawn faults: -faults %s names classes of one runner only (use -driver for the driver's)", o.Faults)
	}
	if !sameBugs {
		return usagef("mutation %q is the simulator's: driver worlds plant only the engine's bugs (engine:NAME); use -driver-share 0", o.Mutation)
	}
	d := driversim.Options{Workers: o.Workers, Shards: o.Shards, Chaos: o.Chaos, Assignment: o.Assignment, Consumer: o.Consumer}
	if driver {
		d.Faults, d.Quiet = o.Faults, o.Quiet // -quiet: a safety-only run
	}
	d.Mutation = strings.TrimPrefix(o.Mutation, sim.EngineMutationPrefix)
	if bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return usagef("-driver-binary: %v", err)
		}
	}
	c.driverBase = d
	return nil
}

// parseRange parses "A-B" (inclusive) or "A".
func parseRange(s string) (uint64, uint64, error) {
	s = strings.TrimSpace(s)
	as, bs, found := strings.Cut(s, "-")
	a, err := strconv.ParseUint(strings.TrimSpace(as), 10, 64)
	if err != nil {
		return 0, 0, usagef("-seeds %q: want A-B, e.g. 1-100", s)
	}
	if !found {
		return a, a, nil
	}
	b, err := strconv.ParseUint(strings.TrimSpace(bs), 10, 64)
	if err != nil {
		return 0, 0, usagef("-seeds %q: want A-B, e.g. 1-100", s)
	}
	if b < a {
		return 0, 0, usagef("-seeds %q: the range is empty (B < A)", s)
	}
	if b-a >= 1<<24 {
		return 0, 0, usagef("-seeds %q: more than %d seeds", s, 1<<24)
	}
	return a, b, nil
}

// checkFaults validates a -faults value as sim reads it.
func checkFaults(f string) (string, error) {
	f = strings.TrimSpace(f)
	switch f {
	case "", "swarm", "none", "all":
		return f, nil
	}
	known := map[string]bool{}
	all := append(append(append([]string(nil), sim.FaultClasses...), sim.OutsideClasses...), sim.FanOutClasses...)
	for _, c := range all {
		known[c] = true
	}
	for _, c := range strings.Split(f, ",") {
		if !known[strings.TrimSpace(c)] {
			return "", usagef("-faults: unknown fault class %q; use swarm, none, all or a comma-separated list of: %s", strings.TrimSpace(c),
				strings.Join(all, ","))
		}
	}
	return f, nil
}

func scenarioNames() []string {
	var out []string
	for _, s := range scenarios.All() {
		out = append(out, s.Name)
	}
	return out
}

func mutationNames() []string {
	var out []string
	for m := range sim.Mutations {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// commandLine renders the command that was run, for the report.
func commandLine(args []string) string {
	parts := []string{"go run ./cmd/simrun"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$`\\|&;<>()*?[]{}!#~") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// repoRoot returns the root of this module's checkout if the working
// directory is inside one, else the working directory.
func repoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := wd; ; {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/shardlease/shardlease\n") {
			return d
		}
		p := filepath.Dir(d)
		if p == d {
			return wd
		}
		d = p
	}
}

// listing is what -list prints.
func listing(w io.Writer) {
	fmt.Fprintln(w, "scenarios (-scenario NAME):")
	for _, s := range scenarios.All() {
		def := ""
		if s.Name == scenarios.Default {
			def = " (default)"
		}
		fmt.Fprintf(w, "  %s%s\n", s.Name, def)
		for _, l := range wrap(s.Story, 76) {
			fmt.Fprintf(w, "      %s\n", l)
		}
	}
	fmt.Fprintf(w, "\nfault classes (-faults swarm|none|all|A,B,...):\n  inside the assumptions: %s\n  outside (S1 tolerated): %s\n  enhanced fan-out worlds only (-consumer fan-out; a swarm draws them there): %s\n  etcd worlds only (-store etcd; a swarm draws them there): %s\n",
		strings.Join(sim.FaultClasses, ", "), strings.Join(sim.OutsideClasses, ", "), strings.Join(sim.FanOutClasses, ", "), strings.Join(sim.EtcdClasses, ", "))
	fmt.Fprintln(w, "\ncombinations (-combo NAME|off), rare things a swarm draws together on purpose:")
	for _, c := range sim.Combos {
		fmt.Fprintf(w, "  %s (%.0f%% of swarm worlds)\n", c.Name, 100*c.Share)
		for _, l := range wrap(c.What, 76) {
			fmt.Fprintf(w, "      %s\n", l)
		}
	}
	fmt.Fprintf(w, "\naimed faults (-aim on|off; %.0f%% of swarm worlds): %s, inside the operations %s\n",
		100*sim.AimShare, strings.Join(sim.AimFaults, ", "), strings.Join(sim.OpKinds, ", "))
	fmt.Fprintf(w, "targeted faults (-targeted on|off; %.0f%% of swarm worlds): %s of one kind of call: %s\n",
		100*sim.TargetShare, strings.Join(sim.TargetFaults, ", "), strings.Join(sim.Targets, ", "))
	fmt.Fprintf(w, "\ndriver worlds (-driver: every seed; -driver-share P: P%% of the swarm's seeds, %d%% in a soak of the swarm by default):\n"+
		"  the production driver (engine.Consumer: goroutines, call pools, processor runners) in virtual time (sim/driversim),\n"+
		"  with every checker; they plant only the engine's bugs (engine:NAME).\n  fault classes: %s\n",
		defaultSoakDriverShare, strings.Join(driversim.FaultClasses, ", "))
	fmt.Fprintln(w, "\nmutations (-mutation NAME), planted bugs the checkers must catch:")
	for _, m := range mutationNames() {
		fmt.Fprintf(w, "  %-22s %s\n", m, sim.Mutations[m])
	}
	if !planted.Enabled() {
		fmt.Fprintf(w, "  (the bugs planted inside the engine, engine:NAME, need a build with -tags %s)\n", sim.MutationTag)
	}
}

func wrap(s string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// durationString is a Duration for messages.
func durationString(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}
