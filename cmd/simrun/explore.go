package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/shardlease/shardlease/scenarios"
	"github.com/shardlease/shardlease/sim"
)

// exploreFlags are the flags of the guided search (simrun -explore) and
// of the replay of a world file (simrun -world).
type exploreFlags struct {
	world   *string
	explore *bool
	budget  *int
	dir     *string
	seed    *uint64
	mode    *string
	quietly *bool
	first   *bool
	from    *uint64
}

func addExploreFlags(fs *flag.FlagSet) *exploreFlags {
	return &exploreFlags{
		world:   fs.String("world", "", "run the world in this world file (a seed, its overrides and a fault schedule: what simrun -explore saves with its findings); replays it exactly"),
		explore: fs.Bool("explore", false, "a guided search (docs/explore.md): run swarm seeds and mutations of the worlds that reached new abstract states, -budget executions in all, one at a time; resumable from its state file in -explore-dir; findings saved there as world files with their replay commands"),
		budget:  fs.Int("budget", 200, "with -explore: the executions the search runs in all (a resumed search runs up to it)"),
		dir:     fs.String("explore-dir", "", "with -explore: the search's folder (state.json, findings/); default reports/out/explore/MODE[-MUTATION]-seed-N-from-F"),
		seed:    fs.Uint64("explore-seed", 1, "with -explore: the search's own seed (its choices are a function of it)"),
		mode:    fs.String("explore-mode", "explore", "with -explore: explore (the guided search) or swarm (swarm seeds 1, 2, ... only, with the same coverage accounting: the baseline)"),
		quietly: fs.Bool("explore-quiet", false, "with -explore: print only findings and the totals"),
		first:   fs.Bool("explore-first", false, "with -explore: stop at the first finding (executions to first catch)"),
		from:    fs.Uint64("explore-from", 1, "with -explore: the first swarm seed the search runs (then the next ones, in order)"),
	}
}

// exploreConfig is the parsed -explore or -world command.
type exploreConfig struct {
	world   string // -world FILE
	budget  int
	dir     string
	seed    uint64
	swarm   bool
	quietly bool
	first   bool // stop at the first finding
	from    uint64
	base    sim.WorldSpec
}

// parseExplore reads the explorer's flags into c.explore; o is the swarm's
// options with the flags applied.
func (c *config) parseExplore(set map[string]bool, f *exploreFlags, o sim.Options) error {
	if *f.world == "" && !*f.explore {
		for _, n := range []string{"budget", "explore-dir", "explore-seed", "explore-mode", "explore-quiet", "explore-first", "explore-from"} {
			if set[n] {
				return usagef("-%s goes with -explore", n)
			}
		}
		return nil
	}
	if *f.world != "" && *f.explore {
		return usagef("-world replays one world; -explore searches: use one")
	}
	allowed := map[string]bool{"world": true, "trace": true, "v": true}
	if *f.explore {
		allowed = map[string]bool{"explore": true, "budget": true, "explore-dir": true, "explore-seed": true, "explore-mode": true,
			"explore-quiet": true, "explore-first": true, "explore-from": true, "mutation": true, "workers": true, "shards": true, "chaos": true, "duration": true, "store": true,
			"consumer": true, "assignment": true, "boundary": true, "aim": true, "targeted": true, "kpl": true, "options": true, "combo": true,
			"faults": true, "quiet": true}
	}
	for n := range set {
		if !allowed[n] {
			return usagef("-%s does not go with -world or -explore (a world file holds its options; -explore takes the world's overrides, -mutation and its own flags)", n)
		}
	}
	e := &exploreConfig{world: *f.world, budget: *f.budget, seed: *f.seed, quietly: *f.quietly, first: *f.first, from: *f.from}
	if *f.explore {
		if c.scenario.Name != scenarios.Default {
			return usagef("-explore searches the swarm's worlds: it takes no -scenario")
		}
		switch *f.mode {
		case "explore":
		case "swarm":
			e.swarm = true
		default:
			return usagef("-explore-mode %q: want explore or swarm", *f.mode)
		}
		if e.budget < 1 {
			return usagef("-budget %d: need at least 1 execution", e.budget)
		}
		e.base = sim.WorldSpec{Workers: o.Workers, Shards: o.Shards, Chaos: o.Chaos, Quiet: o.Quiet, Store: o.Store, Consumer: o.Consumer,
			Assignment: o.Assignment, Boundary: o.Boundary, Aim: o.Aim, Targeted: o.Targeted, Options: o.Options, Combo: o.Combo,
			Mutation: o.Mutation}
		if o.Faults != "swarm" {
			e.base.Faults = o.Faults
		}
		e.dir = *f.dir
		if e.dir == "" {
			name := *f.mode
			if o.Mutation != "" {
				name += "-" + strings.ReplaceAll(o.Mutation, ":", "-")
			}
			e.dir = filepath.Join(repoRoot(), "reports", "out", "explore", fmt.Sprintf("%s-seed-%d-from-%d", name, e.seed, e.from))
		}
	}
	c.explore = e
	return nil
}

// runWorld runs the world in a world file and prints its summary.
func runWorld(c *config, stdout, stderr io.Writer) int {
	w, err := sim.ReadWorld(c.explore.world)
	if err != nil {
		fmt.Fprintf(stderr, "simrun: -world: %v\n", err)
		return exitUsage
	}
	if err := checkWorldMutation(w.Mutation); err != nil {
		fmt.Fprintf(stderr, "simrun: -world %s: %v\n", c.explore.world, err)
		return exitUsage
	}
	o := w.RunOptions()
	if c.trace != "" {
		f, err := os.Create(c.trace)
		if err != nil {
			fmt.Fprintf(stderr, "simrun: -trace: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		o.Trace = f
	}
	res, err := sim.Run(o)
	if err != nil {
		fmt.Fprintf(stderr, "simrun: -world %s: %v\n", c.explore.world, err)
		return exitUsage
	}
	res.Replay = sim.WorldReplayCommand(rel(c.explore.world), w.Mutation)
	for i := range res.Violations {
		res.Violations[i].Replay = res.Replay
	}
	if w.Note != "" {
		fmt.Fprintf(stdout, "world %s (%s)\n", c.explore.world, w.Note)
	}
	if c.verbose || !res.OK() {
		fmt.Fprint(stdout, res.Summary())
	} else {
		fmt.Fprintf(stdout, "seed %d: %s\ntrace hash: %016x, %d records, %d events; %d scheduled actions; no violations\nreplay: %s\n",
			w.Seed, res.Tier(), res.TraceHash, res.Records, res.Events, len(res.Schedule), res.Replay)
	}
	if !res.OK() {
		return exitViolation
	}
	return exitPass
}

func checkWorldMutation(m string) error {
	if m == "" {
		return nil
	}
	if _, ok := sim.Mutations[m]; ok {
		return nil
	}
	if strings.HasPrefix(m, sim.EngineMutationPrefix) {
		return fmt.Errorf("mutation %q is planted inside the engine, which this simrun was built without (run it with go run -tags %s ./cmd/simrun)", m, sim.MutationTag)
	}
	return fmt.Errorf("unknown mutation %q", m)
}

// runExplore runs (or resumes) the search until its budget is spent or it
// is interrupted, saving its state after every execution.
func runExplore(c *config, stdout, stderr io.Writer, intr interrupts) int {
	e := c.explore
	statePath := filepath.Join(e.dir, "state.json")
	findDir := filepath.Join(e.dir, "findings")
	if err := os.MkdirAll(findDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "simrun: -explore: %v\n", err)
		return exitUsage
	}
	st := sim.NewExploreState(e.seed, e.base.Mutation, e.swarm, e.from)
	if b, err := os.ReadFile(statePath); err == nil {
		var old sim.ExploreState
		if err := json.Unmarshal(b, &old); err != nil {
			fmt.Fprintf(stderr, "simrun: -explore: the state file %s: %v (move it away to start afresh)\n", statePath, err)
			return exitUsage
		}
		if old.Seed != st.Seed || old.Mutation != st.Mutation || old.Mode != st.Mode || old.From != st.From {
			fmt.Fprintf(stderr, "simrun: -explore: the state file %s is of another search (explore seed %d, mode %s, from seed %d, mutation %q): use another -explore-dir\n",
				statePath, old.Seed, old.Mode, old.From, old.Mutation)
			return exitUsage
		}
		st = &old
		fmt.Fprintf(stdout, "resuming %s: %d executions done, %d states, corpus %d, %d findings\n", rel(statePath), st.Execs, st.Distinct(), len(st.Corpus), len(st.Findings))
	} else if !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "simrun: -explore: %v\n", err)
		return exitUsage
	}
	x := &sim.Explorer{St: st, Swarm: e.swarm, Base: e.base}
	interrupted := false
	for st.Execs < e.budget && !(e.first && st.FirstFinding > 0) {
		select {
		case <-intr.stop:
			interrupted = true
		default:
		}
		if interrupted {
			break
		}
		cpu0 := cpuSeconds()
		step, err := x.Step()
		if err != nil {
			fmt.Fprintf(stderr, "simrun: %v\n", err)
			return exitUsage
		}
		st.CPUSeconds += cpuSeconds() - cpu0
		if f := step.Finding; f != nil {
			f.File = filepath.Join(findDir, fmt.Sprintf("exec-%d.json", f.Exec))
			f.Replay = sim.WorldReplayCommand(rel(f.File), f.World.Mutation)
			if err := sim.WriteWorld(f.File, f.World); err != nil {
				fmt.Fprintf(stderr, "simrun: -explore: %v\n", err)
				return exitUsage
			}
			f.File = rel(f.File)
			fmt.Fprintf(stdout, "exec %d FINDING %s (%s)\n  %s\n  replay: %s\n", f.Exec, strings.Join(f.Invariants, ","), step.How, f.Detail, f.Replay)
		} else if !e.quietly && step.Corpus {
			fmt.Fprintf(stdout, "exec %d: %d states, %d new (total %d, corpus %d): %s\n", step.Exec, step.States, step.New, st.Distinct(), len(st.Corpus), step.How)
		}
		if err := saveJSON(statePath, st); err != nil {
			fmt.Fprintf(stderr, "simrun: -explore: %v\n", err)
			return exitUsage
		}
	}
	first := "none"
	if st.FirstFinding > 0 {
		first = fmt.Sprintf("execution %d", st.FirstFinding)
	}
	fmt.Fprintf(stdout, "%s (explore seed %d%s): %d executions, %d distinct abstract states, corpus %d, %d findings (first: %s), %.1f CPU s\nstate: %s\n",
		st.Mode, st.Seed, mutationNote(st.Mutation), st.Execs, st.Distinct(), len(st.Corpus), len(st.Findings), first, st.CPUSeconds, rel(statePath))
	if interrupted {
		fmt.Fprintln(stdout, "interrupted: run the same command again to resume")
		return exitInterrupted
	}
	if len(st.Findings) > 0 {
		return exitViolation
	}
	return exitPass
}

func mutationNote(m string) string {
	if m == "" {
		return ""
	}
	return ", mutation " + m
}

// saveJSON writes v to path through a temporary file.
func saveJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
