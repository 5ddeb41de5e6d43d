package engine

import (
	"math"
	"slices"
	"time"
)

// standsExpired reports whether the row rs shows has stood still for a
// lease duration in this worker's view (and is neither its own nor bound
// to a session it saw renew): counted for nobody in the loads.
func (w *Worker) standsExpired(rs *rowState, now time.Duration) bool {
	o := &rs.obs
	return now-w.stillSince(o) >= w.cfg.LeaseDuration && rs.held == nil && !w.sessionNamed(o)
}

// staleMember reports whether a member other than this worker holds a
// row of rows that stands expired in this worker's view: a member shows
// it is alive (its other rows renew, or it says hello) while a row it
// holds looks dead, as a scan whose reply came late shows it. The loads
// then count that row for nobody, and a balance move made from them would
// be undone once a fresh scan shows the row renewed: the assigner does
// not balance on such a view (soak seeds 4170 and 7575 of 1b4e506: B1,
// the assigner handed three of its own leases to the holder, then asked
// for one back). The holder's leases are assigned as before once they
// expire; a dead member leaves the member list before its rows stand
// expired.
func (w *Worker) staleMember(rows []*rowState, members []string) bool {
	if w.bug("balance-beside-stale-member") {
		return false
	}
	now := w.now.Mono
	for _, rs := range rows {
		if !rs.observed || !rs.obs.ok || rs.obs.row.Checkpoint.IsShardEnd() {
			continue
		}
		if own := rs.obs.row.Owner; own != "" && own != w.cfg.Owner && !IsReserved(rs.key) && w.standsExpired(rs, now) && slices.Contains(members, own) {
			return true
		}
	}
	return false
}

// loads returns the load of every owner of an unfinished lease (its lease
// count, or its reported throughput with BalanceThroughput), counting
// assignments not yet taken for their assignee, and not leases expired in
// this worker's view (they are about to move).
func (w *Worker) loads() map[string]float64 {
	loads := map[string]float64{}
	now := w.now.Mono
	for _, rs := range w.rows.all {
		if rs == nil || !rs.observed {
			continue
		}
		o := &rs.obs
		if !o.ok || o.row.Checkpoint.IsShardEnd() || w.standsExpired(rs, now) {
			continue
		}
		who := o.row.Owner
		switch {
		case who == "":
			who = o.row.Pending
		case o.row.HandoffTo != "" && !w.bug("handoff-counted-for-source"):
			who = o.row.HandoffTo // being handed over: the receiver's already
		}
		if h := rs.held; h != nil && h.handing {
			who = h.handoffTo // this worker hands it over
		}
		if wr := rs.write; wr != nil && wr.kind == wAssign && w.mayLand(wr, o) {
			// what the assigner's write in flight makes of it (unless a
			// later read shows the row moved past the version it expects:
			// it fails, and the row stays its owner's. Swarm seed 5925
			// with -renewal session, B1: an assignment sent from a scan
			// whose reply came late was counted for its receiver at the
			// next scan, and a balance move went the wrong way)
			who = wr.row.Owner
			if wr.row.HandoffTo != "" {
				who = wr.row.HandoffTo
			} else if who == "" {
				who = wr.row.Pending
			}
		}
		if who != "" && who != AssignerPending {
			loads[who] += w.weight(o.row)
		}
	}
	return loads
}

// mayLand reports whether the assigner's write wr of o's row may still
// apply: o shows the version it expects, or the row it writes.
func (w *Worker) mayLand(wr *write, o *observation) bool {
	return o.row.Counter == wr.expect.Counter || w.sameWrite(o.row, wr.row) || w.bug("doomed-assign-counted")
}

// weight is what one lease adds to its holder's load: 1, or with
// BalanceThroughput its throughput in thousandths of a KB per second, a
// whole number (idle shards weigh one), so that loads summed in any order
// are the same (loads ranges over the rows in the order this worker
// interned their keys, which another worker or run may not share).
func (w *Worker) weight(row Lease) float64 {
	if w.cfg.BalanceBy == BalanceThroughput {
		return math.Round(row.ThroughputKBps*1000) + 1
	}
	return 1
}

// leastLoaded returns the member with the smallest load (ties: the
// smallest owner id), other than not (the lease's previous owner) unless
// not is this worker and no other member is left.
//
// A stalled member (see stalled) is chosen only when no
// other is left: an assignment that would otherwise wait for nobody may
// as well wait for it; so is this worker while it may take no lease (in
// session renewal, before it acts on its session row).
func (w *Worker) leastLoaded(loads map[string]float64, not string, members []string) string {
	best := ""
	for _, stalledToo := range []bool{false, true} {
		for _, m := range members {
			if m != not && !w.full(m) && (stalledToo || !w.stalled(m) && !w.sessionStill(m) && (m != w.cfg.Owner || w.sessionReady())) && (best == "" || loads[m] < loads[best]) {
				best = m
			}
		}
		if best != "" {
			break
		}
	}
	if best == "" && not == w.cfg.Owner {
		return not
	}
	if best == "" && not != "" && slices.Contains(members, not) && !w.full(not) && !w.bug("expired-never-back-to-owner") {
		// no other member may take it (the others at their cap): the
		// previous owner, a live member again (its lease expired while it
		// was cut off), takes it back rather than nobody (soak seed 52768
		// of 01b4227, S4 and L1: the assigner at its cap, the only other
		// member the one whose lease had expired, and the lease stood
		// unowned for good)
		return not
	}
	return best
}

// stalled reports whether member m let an assignment stand untaken and
// has not shown itself alive since (see assigner.stalledMember).
func (w *Worker) stalled(m string) bool {
	a := w.asg.as
	return a != nil && len(a.stalled) > 0 && a.stalledMember(m)
}

// sessionStill reports whether member m's session row stands still in
// this assigner's fresh reads (see assigner.sessionStill).
//
// The assigner itself is alive whatever its session row shows (a worker
// of RenewalAuto that renews per lease released the session row it took
// at start: swarm seed 8778, L1, an assigner that gave itself no lease).
func (w *Worker) sessionStill(m string) bool {
	a := w.asg.as
	return a != nil && (m != w.cfg.Owner || w.bug("assigner-still-itself")) && a.sessionStill(w, m)
}

// full reports whether member m holds MaxLeasesForWorker leases (the
// assigner takes its own cap for every worker's: a fleet shares its
// configuration; a worker over its own cap declines, see onConfirm).
func (w *Worker) full(m string) bool {
	if w.cfg.MaxLeasesForWorker <= 0 {
		return false
	}
	n := 0
	for _, rs := range w.rows.all {
		if rs == nil || !rs.observed {
			continue
		}
		o := &rs.obs
		if !o.ok || o.row.Checkpoint.IsShardEnd() || rs.write != nil {
			continue
		}
		// A lease on its way to m counts for m as an assignment does: a
		// handoff asked of its holder, or one of this worker's own leases
		// it hands over (the row still names it). m takes such a lease
		// before its own handoffs away are done, and a receiver at its cap
		// declines it: the lease would wait for m's other leases to go
		// (swarm seed 3795 with -renewal session, T2).
		toM := o.row.HandoffTo == m || rs.held != nil && rs.held.handing && rs.held.handoffTo == m && o.row.Owner == w.cfg.Owner
		if o.row.Owner == m || o.row.Owner == "" && o.row.Pending == m || toM && !w.bug("cap-ignores-handoffs") {
			n++
		}
	}
	// writes in flight: this worker's takes, the assignments and handoff
	// requests it sent
	for _, rs := range w.writing {
		if wr := rs.write; wr.kind == wTake && m == w.cfg.Owner && !IsReserved(wr.key) || wr.kind == wAssign && (wr.row.Pending == m && wr.row.Owner == "" || wr.row.HandoffTo == m && !w.bug("cap-ignores-handoffs")) {
			n++
		}
	}
	return n >= w.cfg.MaxLeasesForWorker
}

// balance asks the most loaded member to hand a lease over to the least
// loaded, again and again in a round (the loads as the round's moves leave
// them), while that narrows the spread (by two leases, or by a tenth of the
// load with BalanceThroughput) and fewer than the limit of moves are in
// flight, and never moves a lease moved within MoveQuiet: a worker that
// took every lease before the others joined gives them out in a few
// rounds, not one lease a round.
func (w *Worker) balance(rows []*rowState, loads map[string]float64, members []string) {
	a := w.asg.as
	now := w.now.Mono
	if len(members) < 2 || w.cfg.MaxLeasesToStealAtOnce < 0 {
		return
	}
	// Moves in flight, up to limit: the requests to other holders. The
	// assigner's own leases are not counted: it hands them over itself,
	// with no request to write or to wait on, as soon as their processors
	// let go.
	outstanding := 0
	for k, at := range a.requests {
		o := w.observed(k)
		if wr := w.writeOf(k); (wr != nil && wr.kind == wAssign && wr.row.HandoffTo != "") || (o != nil && o.row.HandoffTo != "" && now-at < 2*w.cfg.LeaseDuration) {
			outstanding++
			continue
		}
		from := a.requestFrom[k]
		delete(a.requests, k)
		delete(a.requestFrom, k)
		if m, ok := a.moved[k]; ok && o != nil && o.row.Owner == from && o.row.HandoffTo == "" && m.at == at {
			// The request went nowhere (its owner lost the lease in its
			// own view and took it back, which clears the request): the
			// lease did not move, so it may move again two lease durations
			// from now, not only after MoveQuiet. (A request cancelled for
			// an owner that renews without handing over keeps MoveQuiet.)
			a.moved[k] = move{now - MoveQuiet + 2*w.cfg.LeaseDuration, m.epoch}
		}
	}
	limit := max(1, w.cfg.MaxLeasesToStealAtOnce) * max(1, len(members)/2)
	// The fair share of the members (by count): a move never takes a
	// receiver above its ceiling nor a source below its floor, so several
	// sources in one round do not pile onto one receiver.
	total := 0.0
	for _, m := range members {
		total += loads[m]
	}
	ceiling := float64(int(total+float64(len(members))-1) / len(members))
	floor := float64(int(total) / len(members))
	// done: the members that can give nothing more this round
	done := map[string]bool{}
	for outstanding < limit {
		// the most loaded member, as the moves of this round left it
		from := ""
		for _, m := range members {
			if !done[m] && (from == "" || loads[m] > loads[from]) {
				from = m
			}
		}
		if from == "" {
			return
		}
		to := w.leastLoaded(loads, from, members)
		if to == "" {
			return
		}
		if w.cfg.BalanceBy != BalanceThroughput && (loads[to]+1 > ceiling || loads[from]-1 < floor) {
			done[from] = true
			continue
		}
		o := w.pickMove(rows, from, loads[from]-loads[to])
		if o == nil {
			done[from] = true
			continue
		}
		wt := w.weight(o.row)
		loads[from] -= wt
		loads[to] += wt
		if from != w.cfg.Owner {
			outstanding++
		}
		if from == w.cfg.Owner {
			if h := w.holdingOf(o.row.Key); h != nil && !h.handing {
				a.moved[o.row.Key] = move{now, a.epoch}
				w.handOver(h, to) // its own lease: no request to write
			}
			continue
		}
		if w.bug("handoff-before-release") {
			a.moved[o.row.Key] = move{now, a.epoch}
			row := o.row.Clone()
			row.Owner, row.Counter, row.Pending, row.HandoffFrom = "", row.Counter+1, to, ""
			w.sendAssign(&write{kind: wAssign, key: row.Key, expect: ExpectOf(o.row), row: row, previous: from, reason: "to " + to + ": balance"})
			continue
		}
		row := o.row.Clone()
		row.Counter++
		row.HandoffTo, row.Pending = to, from
		a.moved[row.Key], a.requests[row.Key], a.requestFrom[row.Key] = move{now, a.epoch}, now, from
		w.sendAssign(&write{kind: wAssign, key: row.Key, expect: ExpectOf(o.row), row: row, previous: from, reason: "handoff to " + to, stillSince: o.seenAt, keepsAge: true})
	}
}

// pickMove returns a lease of from to move, given the spread between from
// and the least loaded member, or nil if no move narrows it: by lease
// count a spread of two or more; by throughput the largest lease lighter
// than the spread that cuts it by a tenth of from's load.
func (w *Worker) pickMove(rows []*rowState, from string, spread float64) *observation {
	now := w.now.Mono
	a := w.asg.as
	var best, again *observation
	for _, rs := range rows {
		if !rs.observed {
			continue
		}
		o := &rs.obs
		if !o.ok || o.row.Owner != from || o.row.HandoffTo != "" || o.row.Checkpoint.IsShardEnd() ||
			rs.write != nil || w.foreign(o) || now-w.stillSince(o) >= w.cfg.LeaseDuration {
			continue
		}
		m, moved := a.moved[o.row.Key]
		moved = moved && now-m.at < MoveQuiet
		if moved && m.epoch == a.epoch {
			continue
		}
		if h := rs.held; h != nil && h.handing {
			continue
		}
		wt := w.weight(o.row)
		switch {
		case w.cfg.BalanceBy != BalanceThroughput:
			if spread < 2 && (spread < 1 || !w.bug("balance-spread-one")) {
				return nil
			}
			if !moved {
				return o // rows are sorted: the first such lease
			}
			if again == nil {
				// moved in an earlier epoch of the fleet: only if no
				// lease of from has stood still (a fleet that grows as
				// it starts moves each lease once)
				again = o
			}
		case wt < spread && spread-wt > 0 && (best == nil || wt > w.weight(best.row)):
			best = o
		}
	}
	if again != nil {
		return again
	}
	if best != nil && 2*w.weight(best.row) < spread/10 {
		return nil // too small a step to be worth a move
	}
	return best
}

// cancelHandoff withdraws a handoff request its owner did not act on.
func (w *Worker) cancelHandoff(o *observation) {
	row := o.row.Clone()
	row.Counter++
	row.HandoffTo, row.Pending = "", ""
	delete(w.asg.as.requests, row.Key)
	delete(w.asg.as.requestFrom, row.Key)
	w.sendAssign(&write{kind: wAssign, key: row.Key, expect: ExpectOf(o.row), row: row, previous: o.row.Owner, reason: "handoff cancelled", stillSince: o.seenAt, keepsAge: true})
}
