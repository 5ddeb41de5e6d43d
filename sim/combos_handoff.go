package sim

import (
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Handoff races (issue 17): combinations of an assigner fleet that keeps
// balancing (workers join it, so the assigner asks holders to hand leases
// over) with what races those handoffs: a holder gone silent as the
// request reaches it, processors slow to let a lease go. Their worlds are
// quiet (quiet: no random fault classes or rates but reshards, bursts,
// slow processors, idle shards and short retention; the aimed and
// targeted faults as drawn): the latency invariants check only handoffs
// whose path no other fault disturbed.

// crashJoin: holders silent (crashed, or paused past their lease) as the
// assigner's handoff request reaches them, while workers join.
var crashJoin = Combo{
	Name: "crash-join",
	What: "workers join an assigner fleet (it balances by handoffs), each a quarter to three quarters of a lease duration after " +
		"the member holding the most leases (not the assigner) crashed, or paused, for two to three lease durations, so that " +
		"the assigner's handoff request reaches a silent holder; a quiet world otherwise (aimed and targeted faults as drawn)",
	Share:  0.04,
	engine: balancingFleet,
	world: func(w *World, r rng, full engine.Config) {
		quiet(w, full)
		w.Assignment.Mode = engine.AssignmentAssigner
		w.Workers = r.intIn(2, 4) // few: each join moves several leases
		w.Shards = max(w.Shards, 8)
	},
	schedule: func(s *simulator, r rng) []Action {
		// each join comes just after the busiest holder other than the
		// assigner was crashed (restarted two to three lease durations
		// later under a new owner id) or paused for as long: the
		// assigner, balancing for the new member, asks the silent holder
		// for a handoff before its lease expired in its view
		ld := s.full.LeaseDuration
		var out []Action
		for _, j := range joins(s, r, r.intIn(3, 6), 10*time.Second, s.w.Chaos-5*time.Second) {
			at := max(j.At-r.between(ld/4, ld*3/4), time.Second).Round(time.Millisecond)
			if r.chance(0.5) {
				out = append(out, Action{At: at, Kind: ActCrash, Role: RoleMember, Dur: r.between(2*ld, 3*ld).Round(time.Millisecond), NewOwner: true})
			} else {
				out = append(out, Action{At: at, Kind: ActPause, Role: RoleMember, Dur: r.between(2*ld, 3*ld).Round(time.Millisecond)})
			}
			out = append(out, j)
		}
		return out
	},
}

// joinBalance: several handoffs in flight at once (workers join in
// bursts), the processors often slow to let a lease go (past the half
// lease duration a handoff waits for them).
var joinBalance = Combo{
	Name: "join-balance",
	What: "workers join a small assigner fleet of many shards in one or two bursts of two to four (several handoffs in flight), " +
		"a tenth to two fifths of the processors' batches slow (1-20 s, past the half lease duration a handoff waits), " +
		"a quiet world otherwise (aimed and targeted faults as drawn)",
	Share:  0.04,
	engine: balancingFleet,
	world: func(w *World, r rng, full engine.Config) {
		quiet(w, full)
		w.Assignment.Mode = engine.AssignmentAssigner
		w.Workers = r.intIn(2, 3) // few, and many shards: each join moves several leases
		w.Shards = max(w.Shards, 12)
		w.addFaults("slow-processor")
		w.Rates.SlowProcessor = max(w.Rates.SlowProcessor, r.rangeF(0.1, 0.4))
	},
	schedule: func(s *simulator, r rng) []Action {
		var out []Action
		ld := s.full.LeaseDuration
		for i := r.intIn(1, 2); i > 0; i-- {
			at := r.between(5*time.Second, max(6*time.Second, s.w.Chaos/2)).Round(time.Millisecond)
			out = append(out, joins(s, r, r.intIn(2, 4), at, at+2*ld)...)
		}
		return out
	},
}

// balancingFleet: no cap on the leases a worker holds, and one or two
// moved at a time (each round leaves more to move: more handoffs).
func balancingFleet(w *World, e *EngineParams, r rng) {
	e.MaxLeasesForWorker, e.MaxLeasesToStealAtOnce = 0, r.intIn(1, 2)
}

// joins returns n scale-outs drawn in [lo, hi] (within the chaos).
func joins(s *simulator, r rng, n int, lo, hi time.Duration) []Action {
	var out []Action
	for ; n > 0; n-- {
		at := r.between(lo, hi).Round(time.Millisecond)
		if at < s.w.Chaos {
			out = append(out, Action{At: at, Kind: ActScaleOut})
		}
	}
	return out
}

// quiet is calm (combos.go) but for the world's aimed and targeted
// faults, which stay as drawn (the combination takes no share of them
// away from the swarm).
func quiet(w *World, full engine.Config) {
	a, t := w.Aim, w.Target
	calm(w, full)
	w.Aim, w.Target = a, t
}
