package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// streamExplore is the explorer's PRNG stream (beside rng.go's streams).
const streamExplore uint64 = 1 << 20

// Explorer is a guided search over worlds: it runs swarm seeds, keeps a
// corpus of the worlds that reached abstract states (Coverage) no earlier
// execution reached, and runs mutations of corpus worlds (their fault
// schedules shifted, retargeted, stretched, stacked, added to: Mutate),
// every run with every checker. Each execution is a deterministic world
// (a WorldSpec); the search itself is a function of its seed (Seed) and
// of the executions done so far, so a search stopped and resumed from its
// state (ExploreState) makes the same choices as one run straight
// through. It runs one world at a time, on the calling goroutine.
type Explorer struct {
	St *ExploreState
	// Swarm: run swarm seeds only (NextSeed, NextSeed+1, ...), with the
	// same coverage accounting: the baseline the search is measured
	// against.
	Swarm bool
	// Base holds the options every world gets (Mutation, and the
	// overrides of the command line).
	Base WorldSpec
	// Fresh is the share of executions, after the first Init, that run
	// the next swarm seed instead of a mutation (0: 0.2).
	Fresh float64
	// Init is how many swarm seeds start the search (0: 8).
	Init int
	// Stack is the most mutation ops applied to one corpus world (0: 3).
	Stack int
}

// ExploreState is an explorer's whole state: saved after every
// execution (simrun -explore's state.json), it resumes the search.
type ExploreState struct {
	Version  int    `json:"version"`
	Seed     uint64 `json:"explore_seed"`
	Mutation string `json:"mutation,omitempty"`
	Mode     string `json:"mode"` // "explore" or "swarm"
	From     uint64 `json:"from"` // the first swarm seed
	// Execs is how many worlds were run; NextSeed the next swarm seed.
	Execs    int    `json:"execs"`
	NextSeed uint64 `json:"next_seed"`
	// States counts, for every abstract state reached, the executions
	// that reached it (sorted by state).
	States []StateCount `json:"states"`
	// Growth is the number of distinct states after every 10th execution.
	Growth   []int          `json:"growth"`
	Corpus   []CorpusEntry  `json:"corpus"`
	Findings []ExploreFound `json:"findings"`
	// FirstFinding is the execution (from 1) of the first finding (0:
	// none yet).
	FirstFinding int `json:"first_finding,omitempty"`
	// Invalid counts the mutated worlds the simulator refused to run (a
	// combination of overrides it does not support).
	Invalid int `json:"invalid,omitempty"`
	// CPUSeconds is the CPU time of the executions so far (user+sys, as
	// the caller measured it).
	CPUSeconds float64 `json:"cpu_seconds"`
}

// StateCount is one abstract state and how many executions reached it.
type StateCount struct {
	State uint64 `json:"s"`
	N     int    `json:"n"`
}

// CorpusEntry is a world that reached new states when it ran.
type CorpusEntry struct {
	World WorldSpec  `json:"world"`
	Shape WorldShape `json:"shape"`
	// Exec is the execution that ran it; New the states it reached first;
	// Picked how often it was mutated since.
	Exec   int `json:"exec"`
	New    int `json:"new"`
	Picked int `json:"picked"`
}

// ExploreFound is an execution that broke an invariant.
type ExploreFound struct {
	Exec       int       `json:"exec"`
	World      WorldSpec `json:"world"`
	Invariants []string  `json:"invariants"`
	Detail     string    `json:"detail"`
	// File is where the caller saved the world (its replay command names
	// it).
	File   string `json:"file,omitempty"`
	Replay string `json:"replay,omitempty"`
}

// ExploreStep is what one execution did.
type ExploreStep struct {
	Exec    int
	World   WorldSpec
	How     string // "swarm seed N" or the mutations
	States  int    // states the run reached
	New     int    // of which no earlier execution had reached
	Corpus  bool   // it joined the corpus
	Result  *Result
	Finding *ExploreFound
}

// NewExploreState returns the state of a new search.
func NewExploreState(seed uint64, mutation string, swarm bool, first uint64) *ExploreState {
	mode := "explore"
	if swarm {
		mode = "swarm"
	}
	return &ExploreState{Version: 1, Seed: seed, Mutation: mutation, Mode: mode, From: max(first, 1), NextSeed: max(first, 1)}
}

// Distinct is the number of distinct abstract states reached.
func (st *ExploreState) Distinct() int { return len(st.States) }

func (e *Explorer) defaults() (fresh float64, init, stack int) {
	fresh, init, stack = e.Fresh, e.Init, e.Stack
	if fresh == 0 {
		fresh = 0.2
	}
	if init == 0 {
		init = 8
	}
	if stack == 0 {
		stack = 8
	}
	return
}

// pick draws a corpus entry: half the time among the eight most recent,
// otherwise weighted by the states it found first, decayed by how often
// it was picked (rare and recent coverage is favoured).
func (e *Explorer) pick(r rng) int {
	c := e.St.Corpus
	if r.chance(0.5) {
		lo := max(0, len(c)-8)
		return lo + r.IntN(len(c)-lo)
	}
	var total float64
	w := make([]float64, len(c))
	for i, en := range c {
		w[i] = float64(1+en.New) / float64(1+en.Picked)
		total += w[i]
	}
	x := r.Float64() * total
	for i := range w {
		if x < w[i] {
			return i
		}
		x -= w[i]
	}
	return len(c) - 1
}

// Next chooses the world of the next execution without running it.
func (e *Explorer) Next() (WorldSpec, string, int) {
	st := e.St
	fresh, init, stack := e.defaults()
	r := newRNG(st.Seed^splitmix(uint64(st.Execs)+1), streamExplore)
	if e.Swarm || st.Execs < init || len(st.Corpus) == 0 || r.chance(fresh) {
		w := e.Base
		w.Seed, w.Replace, w.Schedule, w.Note = st.NextSeed, false, nil, ""
		how := fmt.Sprintf("swarm seed %d", w.Seed)
		if !e.Swarm && st.Execs >= init && r.chance(0.5) {
			// a fresh seed with rare knobs set on purpose
			var ts []string
			for k := 1 + r.IntN(3); k > 0; k-- {
				var t string
				w, t = toggle(w, nil, r)
				ts = append(ts, t)
			}
			w.Replace, w.Schedule = false, nil
			how += " with " + strings.Join(ts, ", ")
		}
		return w, how, -1
	}
	i := e.pick(r)
	en := st.Corpus[i]
	w := en.World
	var how []string
	for k := 1 + r.IntN(stack); k > 0; k-- {
		var h string
		w, h = Mutate(w, en.Shape, r)
		how = append(how, h)
	}
	w.Note = fmt.Sprintf("exec %d: corpus #%d (exec %d): %s", st.Execs+1, i, en.Exec, strings.Join(how, "; "))
	return w, w.Note, i
}

// Step runs the next execution and updates the state (the caller adds
// the CPU time it measured to CPUSeconds).
func (e *Explorer) Step() (*ExploreStep, error) {
	st := e.St
	w, how, parent := e.Next()
	cov := NewCoverage()
	o := w.RunOptions()
	o.Observe = cov.Observe
	o.moments = true
	o.NoExcerpts = true
	res, err := Run(o)
	if err != nil && parent >= 0 {
		// a combination of overrides the simulator refuses: counted, and
		// the search goes on
		st.Execs++
		st.Invalid++
		st.Corpus[parent].Picked++
		st.grew()
		return &ExploreStep{Exec: st.Execs, World: w, How: how + ": not run: " + err.Error()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("explore: execution %d (%s): %w", st.Execs+1, how, err)
	}
	st.Execs++
	defer st.grew()
	step := &ExploreStep{Exec: st.Execs, World: w, How: how, Result: res}
	if parent < 0 {
		st.NextSeed++
		// the corpus keeps the drawn schedule, made explicit
		w = SpecOf(w.RunOptions(), res)
		w.Note = how
		step.World = w
	} else {
		st.Corpus[parent].Picked++
	}
	states := cov.States()
	step.States = len(states)
	step.New = st.merge(states)
	if step.New > 0 {
		st.Corpus = append(st.Corpus, CorpusEntry{World: w, Shape: ShapeOf(res), Exec: st.Execs, New: step.New})
		step.Corpus = true
	}
	if len(res.Violations) > 0 {
		f := ExploreFound{Exec: st.Execs, World: w}
		for _, v := range res.Violations {
			if !slices.Contains(f.Invariants, v.Invariant) {
				f.Invariants = append(f.Invariants, v.Invariant)
			}
		}
		sort.Strings(f.Invariants)
		d := res.Violations[0].String()
		if len(d) > 300 {
			d = d[:300] + "..."
		}
		f.Detail = d
		st.Findings = append(st.Findings, f)
		if st.FirstFinding == 0 {
			st.FirstFinding = st.Execs
		}
		step.Finding = &st.Findings[len(st.Findings)-1]
	}
	return step, nil
}

// grew notes the distinct states after every 10th execution.
func (st *ExploreState) grew() {
	if st.Execs%10 == 0 {
		st.Growth = append(st.Growth, len(st.States))
	}
}

// merge adds a run's sorted states to the counts and returns how many
// were new.
func (st *ExploreState) merge(states []uint64) int {
	old := st.States
	out := make([]StateCount, 0, len(old)+len(states))
	i, j, n := 0, 0, 0
	for i < len(old) || j < len(states) {
		switch {
		case j == len(states) || i < len(old) && old[i].State < states[j]:
			out = append(out, old[i])
			i++
		case i == len(old) || states[j] < old[i].State:
			out = append(out, StateCount{states[j], 1})
			j++
			n++
		default:
			out = append(out, StateCount{old[i].State, old[i].N + 1})
			i++
			j++
		}
	}
	st.States = out
	return n
}
