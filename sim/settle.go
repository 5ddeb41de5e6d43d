package sim

import "time"

// The early end of the healing phase.
//
// A drawn healing phase (Options.Quiet unset) is three liveness bounds,
// which L1 needs (a bound to recover, then at least a bound of records
// that must each reach a processor within a bound), plus time for the
// balance to converge: a step of each take interval and lease duration per
// lease a worker may have to take. Most worlds are balanced long before
// that, and the rest of the phase repeats the same renewals and deliveries
// (86% of the default swarm's events came after healing). So the phase
// ends once the world has settled: from World.SettleMin on, at the first
// probe at which the world has looked settled (check.Online.Settled: every
// open shard acted on, nothing put longer than settleLag ago undelivered,
// balanced within L1's slack if L1 checks balance) at every probe for
// World.SettleFor; at the latest at the drawn end. A world that never
// settles (a shard left without an owner, an imbalance that never goes
// away, records that stop flowing) runs the whole phase, so that what L1
// finds at the end is what it found before; one that settles ends in the
// state L1's end-of-run checks ask for, and is judged against its own end
// (check.Online.SetEnd).
type settleState struct {
	since time.Duration // settled at every probe since (-1: not at the last one)
	every time.Duration
}

// startSettle schedules the first probe, if the world's healing phase may
// end early.
func (s *simulator) startSettle() {
	w := &s.w
	if w.SettleMin <= 0 || w.SettleMin >= w.Quiet {
		return
	}
	s.settle.since = -1
	s.settle.every = max(s.full.RenewInterval, time.Second)
	s.q.push(event{at: w.Chaos + w.SettleMin - w.SettleFor, kind: evSettle})
}

// settleLag is how long a record may wait for its processor in a settled
// world: a page every idle interval, through two calls.
func (s *simulator) settleLag() time.Duration {
	return 2*s.full.IdleTimeBetweenReads + 2*s.w.CallTimeout + time.Second
}

// onSettle is a probe: it ends the run now if the world has been settled
// long enough, else schedules the next one.
func (s *simulator) onSettle() {
	st := &s.settle
	if !s.rec.checks.Settled(s.now, s.tbl.Snapshot().Leases, s.settleLag()) {
		st.since = -1
	} else if st.since < 0 {
		st.since = s.now
	}
	if st.since >= 0 && s.now-st.since >= s.w.SettleFor && s.now >= s.w.Chaos+s.w.SettleMin {
		s.end = s.now
		s.rec.checks.SetEnd(s.now)
		return
	}
	if next := s.now + st.every; next < s.end {
		s.q.push(event{at: next, kind: evSettle})
	}
}
