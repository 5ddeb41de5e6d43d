package sim

import (
	"time"

	"github.com/shardlease/shardlease/engine"
)

// deposedTake (issue 17): the window of the planted bug deposed-take-acted
// (soak seed 16892). An assigner takes a lease for itself late in its
// row's life; its row lapses (its writes of the row throttled) while the
// take's reply is still on its way (it comes just under the call timeout,
// which the world sets long: seven to eight and a half tenths of a lease
// duration); a deputy takes the row over and reassigns the lease at once
// (it was written under the lapsed row's writer: bound to it), and its new
// owner acts; then the take's reply comes, after the row was lost and
// before the take's own validity ends. The assigner must drop it (S1
// otherwise: two owners acting). The busiest member (not the assigner) is
// crashed a third to two thirds of a lease duration before each strike,
// and restarted under its own id (a new id would leave the deputies'
// member list behind the fleet), so that the assigner, among the least
// loaded members of a small fleet, has a lease to take as its row lapses.
// Strike.go's StrikeRowFail also cuts the assigner off the table after
// such a take (strikeTook): the reply is lost and the outcome learnt by a
// later read, which, once the lease is reassigned, presumably shows the new
// owner; pinned, assigner-failovers caught the bug in none of seeds 1-40.
// StrikeRowLate leaves the reply to come, late.
var deposedTake = Combo{
	Name: "deposed-take",
	What: "an assigner fleet (3-4 workers, three to four times as many shards, a 3-5 s lease, a call timeout of 0.7-0.85 lease durations, a chaos of at least 150-240 s, " +
		"pending polls every twentieth to tenth of a lease duration) whose assigner's row lapses again and again (its writes of the row throttled for one " +
		"to one and a half lease durations, the replies of its takes just under the call timeout), each lapse a third to two thirds of a lease duration " +
		"after the busiest member crashed (restarted under its own id): a take sent late in the row's life comes back after a deputy took the row over and reassigned the lease; " +
		"a calm world otherwise, without boundary seeking",
	Share: 0.04,
	calms: true, still: true,
	engine: func(w *World, e *EngineParams, r rng) {
		shortLease(e, r, 3*time.Second, 5*time.Second)
		e.MaxLeasesForWorker = 0
	},
	world: func(w *World, r rng, full engine.Config) {
		calm(w, full)
		w.Boundary = BoundaryWorld{}
		w.Assignment.Mode = engine.AssignmentAssigner
		// few workers, many shards: the crashed member's leases go to
		// the least loaded members, the assigner among them
		w.Workers = r.intIn(3, 4)
		w.Shards = max(w.Shards, 3*w.Workers+r.intIn(0, w.Workers))
		w.Chaos = max(w.Chaos, r.between(150*time.Second, 240*time.Second).Round(time.Second))
		ld := full.LeaseDuration
		// a take's late reply comes well after the row lapsed, and before
		// the take's own act-until time (a lease duration less the margin
		// after its send)
		w.CallTimeout = time.Duration(float64(ld) * r.rangeF(0.7, 0.85)).Round(10 * time.Millisecond)
		w.Config.PendingPollInterval = r.between(ld/20, ld/10).Round(10 * time.Millisecond)
	},
	schedule: func(s *simulator, r rng) []Action {
		ld := s.full.LeaseDuration
		var out []Action
		for t := r.between(5*time.Second, 5*time.Second+2*ld).Round(time.Millisecond); t < s.w.Chaos-2*ld; t += r.between(3*ld, 4*ld).Round(time.Millisecond) {
			out = append(out, Action{At: max(time.Second, t-r.between(ld/3, 2*ld/3).Round(time.Millisecond)), Kind: ActCrash, Role: RoleMember,
				Dur: r.between(ld, 3*ld).Round(time.Millisecond)},
				Action{At: t, Kind: ActStrikeAssigner, Target: StrikeAfterScan, Dir: StrikeRowLate, Dur: r.between(ld, 3*ld/2).Round(time.Millisecond)})
		}
		return out
	},
}
