package sim

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// stealRelease (issue 17): the window of the planted bug
// take-ignores-handoff-from. In a fleet whose workers take leases
// themselves, a worker that joins steals a lease: its take names the
// previous holder (HandoffFrom) and it waits out that holder's lease
// before it acts. As the steal applies, the thief shuts down (it releases
// the lease before it acted, HandoffFrom still set) and the previous
// holder is cut off the table (it learns nothing of the steal and acts
// on until its own view of expiry). A third worker's take scan finds the
// row unowned with HandoffFrom set: it must wait a lease duration before
// it acts (S1 otherwise: the previous holder still acts).
var stealRelease = Combo{
	Name: "steal-release",
	What: "workers join a scan-mode fleet (3-4 workers, 8 or more shards, a 3-5 s lease, take scans every quarter to third of a lease duration, " +
		"one or two steals a round), and at most three to six times a steal applies: the thief shuts down at once (restarted two to three " +
		"lease durations later; it releases the lease before it acted) and the previous holder is cut off the table for one to one and a " +
		"half lease durations (it acts on until its own view of expiry); a calm world otherwise",
	Share: 0.04,
	calms: true,
	engine: func(w *World, e *EngineParams, r rng) {
		shortLease(e, r, 3*time.Second, 5*time.Second)
		e.TakeInterval = time.Duration(float64(e.LeaseDuration) * r.rangeF(0.25, 0.34)).Round(100 * time.Millisecond)
		e.MaxLeasesForWorker, e.MaxLeasesToStealAtOnce = 0, r.intIn(1, 2)
	},
	world: func(w *World, r rng, full engine.Config) {
		calm(w, full)
		w.Assignment.Mode = engine.AssignmentScan
		w.Workers = r.intIn(3, 4)
		w.Shards = max(w.Shards, 8)
	},
	schedule: func(s *simulator, r rng) []Action {
		s.stl.max = r.intIn(3, 6)
		return joins(s, r, r.intIn(3, 6), 5*time.Second, s.w.Chaos-5*time.Second)
	},
}

// stealReleases is what the combination steal-release keeps as the run
// goes.
type stealReleases struct {
	rng   rng
	max   int // the most steals it strikes
	fired int
}

// stealApplied: write f of p reached the table (applied: it applied). In
// the combination steal-release, a steal (a take naming another previous
// holder) that applied, after the fleet's first ten seconds (its first
// takes), may shut its thief down and cut the previous holder off the
// table.
func (s *simulator) stealApplied(p *proc, f *inflight, applied bool) {
	st := &s.stl
	l := &f.call.Lease
	if s.w.Combo.Name != stealRelease.Name || !applied || s.healed || st.fired >= st.max || s.now < 10*time.Second || f.reason != trace.WriteTake ||
		engine.IsReserved(leaseKey(&f.call)) || l.HandoffFrom == "" || l.HandoffFrom == l.Owner {
		return
	}
	victim := -1
	for _, sl := range s.cl.slots {
		if q := s.live(sl); q != nil && q.owner == l.HandoffFrom && !sl.dup && q.id != p.id {
			victim = sl.idx
			break
		}
	}
	if victim < 0 || !st.rng.chance(0.6) {
		return
	}
	st.fired++
	ld := s.full.LeaseDuration
	thief := s.cl.slots[p.slot].idx
	s.fault(fmt.Sprintf("steal-release: w%d stole %s from w%d: it shuts down, w%d is cut off the table", thief, leaseKey(&f.call), victim, victim), leaseKey(&f.call))
	s.act(Action{At: s.now, Kind: ActPartition, Workers: []int{victim}, Target: "table", Dir: "both", Dur: st.rng.between(ld, 3*ld/2).Round(time.Millisecond)})
	s.later(Action{At: s.now, Kind: ActShutdown, Worker: thief, Dur: st.rng.between(2*ld, 3*ld).Round(time.Millisecond)})
}
