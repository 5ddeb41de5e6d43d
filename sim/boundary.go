package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Boundary seeking (BUGGIFY, after FoundationDB): with some probability
// per world, the simulator chooses timings at the edges of the stated
// assumptions on purpose instead of waiting for chance to reach them. A
// boundary world turns on a random subset of the knobs below; each knob
// fires with its own chance where it applies. Every knob stays inside the
// assumptions (drift within its bound, replies within the call timeout,
// pauses that do not outlast the margin in the middle of an act), so a
// correct engine passes them all; a rule that is off by its margin does
// not. The knobs draw from their own PRNG stream: worlds without them
// draw exactly as before.
//
//   - drift: every worker's clock runs at exactly the drift bound, fast
//     or slow (a holder at one end and a taker at the other, wherever the
//     leases go);
//   - late replies: a table call's reply arrives just under the call
//     timeout (the ambiguous edge: a validity counted from the reply
//     stretches by it);
//   - scan at expiry: a worker's scan reply is held until the instant a
//     lease it has seen standing still expires in its own view (its
//     clock), so that it decides at the earliest moment it may;
//   - scan after renewal: a scan reaches the table just after another
//     worker's renewal applies, so that its view of the lease's version
//     starts as early as it can;
//   - polls after assignments: a worker's read of the pending index
//     reaches it just after an assignment to it applied, so that it takes
//     the lease as early as it can;
//   - worst stale scans: an eventually consistent scan shows every row
//     deleted since as deleted and every other row as it was long ago
//     (past the grace before finished parents are deleted): missing if
//     created since;
//   - late resolving reads: the read that resolves a write of unknown
//     outcome reaches the table only near its timeout;
//   - cut after renewal: a holder's table link loses every request just
//     after one of its renewals applied (its reply still comes, late),
//     while the holder keeps reading its shards: it must stop at its own
//     view of expiry less the margin; a delivery it makes within the
//     mid-act slack of its view of expiry is paused in the middle for the
//     slack (a pause just under the margin);
//   - crash after renewal: a holder crashes just after one of its
//     renewals applied and restarts under its owner id within a lease
//     duration, its first two consistent scans throttled and its first
//     two eventually consistent ones as stale as the table allows;
//   - victims cut: when a take applies, the live holder it took the
//     lease from is cut off the table, so that it learns nothing and acts
//     to its own view of expiry, paused just under the margin then;
//   - slow second parent: at a merge, the holder of one parent is paused
//     for up to three lease durations, so that the parents finish far
//     apart.

// BoundaryWorld is the drawn boundary seeking of a world.
type BoundaryWorld struct {
	On bool
	// Drift: every slot's clock at exactly ±DriftBound.
	Drift bool
	// The chances per call: LateReply of a table write or read reply;
	// ScanAtExpiry of a scan reply; ScanAfterRenew of a scan's apply;
	// LateResolve of a resolving read.
	LateReply, ScanAtExpiry, ScanAfterRenew, LateResolve float64
	// PollAfterAssign: the chance that a worker's read of its pending
	// index entries waits for an assignment to it to apply.
	PollAfterAssign float64
	// StaleMix: the chance that an eventually consistent scan shows the
	// worst mix of ages (see worstLag).
	StaleMix float64
	// CutAfterRenew, CrashAfterRenew: how many such actions the schedule
	// has. SlowParent: the chance that a merge pauses a parent's holder.
	CutAfterRenew, CrashAfterRenew int
	SlowParent                     float64
	// CutVictim: the chance that a take cuts the live holder it took the
	// lease from off the table (see takeApplied).
	CutVictim float64
}

func (b BoundaryWorld) String() string {
	if !b.On {
		return ""
	}
	var ks []string
	if b.Drift {
		ks = append(ks, "drift at the bound")
	}
	for _, k := range []struct {
		name string
		p    float64
	}{{"late replies", b.LateReply}, {"scans at expiry", b.ScanAtExpiry}, {"scans after renewals", b.ScanAfterRenew},
		{"late resolving reads", b.LateResolve}, {"polls after assignments", b.PollAfterAssign}, {"worst stale scans", b.StaleMix}, {"slow second parents", b.SlowParent}, {"victims cut", b.CutVictim}} {
		if k.p > 0 {
			ks = append(ks, fmt.Sprintf("%s %.2f", k.name, k.p))
		}
	}
	if b.CutAfterRenew > 0 {
		ks = append(ks, fmt.Sprintf("%d cuts after renewals", b.CutAfterRenew))
	}
	if b.CrashAfterRenew > 0 {
		ks = append(ks, fmt.Sprintf("%d crashes after renewals", b.CrashAfterRenew))
	}
	return "; boundary seeking: " + strings.Join(ks, ", ")
}

// drawBoundary draws w's boundary seeking (Options.Boundary; a swarm
// turns it on for half the worlds) from its own stream.
func (w *World) drawBoundary(o Options, swarm bool, lease time.Duration) error {
	r := newRNG(o.Seed, streamBoundary)
	b := &w.Boundary
	drawn := r.chance(0.5) // drawn first whatever the option: the knobs of a world pinned on are its drawn ones
	switch o.Boundary {
	case "":
		b.On = swarm && drawn
	case "on":
		b.On = true
	case "off":
	default:
		return fmt.Errorf("sim: Boundary %q is not on or off (or empty: drawn by a swarm)", o.Boundary)
	}
	if !b.On {
		return nil
	}
	defer func() {
		if b.CrashAfterRenew > 0 && w.Rates.StaleLag == 0 {
			// a restarted process's first scans are stale (how stale the
			// table may be is its StaleLag)
			w.Rates.StaleLag = lease
		}
	}()
	for b.String() == "; boundary seeking: " {
		b.Drift = r.chance(0.8)
		b.LateReply = pick(r, 0.5, 0.02, 0.2)
		b.ScanAtExpiry = pick(r, 0.5, 0.2, 0.8)
		b.ScanAfterRenew = pick(r, 0.5, 0.1, 0.5)
		b.LateResolve = pick(r, 0.5, 0.3, 1)
		b.SlowParent = pick(r, 0.5, 0.3, 1)
		b.CutVictim = pick(r, 0.5, 0.3, 1)
		if r.chance(0.8) {
			b.CutAfterRenew = r.intIn(3, 8)
		}
		if r.chance(0.7) {
			b.CrashAfterRenew = r.intIn(2, 4)
		}
		b.PollAfterAssign = pick(r, 0.5, 0.3, 1)
		b.StaleMix = pick(r, 0.6, 0.2, 0.8)
	}
	return nil
}

// pick returns, with chance on, a value drawn in [lo, hi]; else 0.
func pick(r rng, on, lo, hi float64) float64 {
	if !r.chance(on) {
		return 0
	}
	return r.rangeF(lo, hi)
}

// boundaryState is the run's state of boundary seeking.
type boundaryState struct {
	rng rng
	// racing: the leases whose holder was cut after a renewal, until
	// their next take applies (key -> the cut process): the other
	// workers' scans land at their expiry, and their pending-index reads
	// just after an assignment to them
	racing map[string]int32
	// waiting are the scans held until another worker's next renewal
	// applies (call slots, with their hold generation)
	waiting []heldCall
	// iterShard: the shard each iterator a process holds reads (the
	// pages held for a cut holder's last moments are its lease's only)
	iterShard map[string]string
	// kbps: the throughput the last write of each row that applied
	// reported (worlds with crashes after renewals)
	kbps map[string]float64
}

type heldCall struct {
	slot int
	gen  uint32
	poll bool // a read of the pending index, held until an assignment to its reader applies
	// after: the process whose renewal releases it (-1: any other than
	// its own)
	after int32
}

// bchance draws with chance p from the boundary stream, during the chaos.
func (s *simulator) bchance(p float64) bool {
	if p <= 0 || s.healed {
		return false
	}
	return s.bd.rng.chance(p)
}

// boundaryDrift is the drift of a new slot in a world whose clocks run
// at the bound.
func (s *simulator) boundaryDrift() float64 {
	if s.bd.rng.chance(0.5) {
		return -s.w.DriftBound
	}
	return s.w.DriftBound
}

// boundarySchedule adds the drawn boundary actions to the schedule.
func (s *simulator) boundarySchedule() []Action {
	b := &s.w.Boundary
	if !b.On {
		return nil
	}
	r := s.bd.rng
	ld := s.full.LeaseDuration
	at := func() time.Duration { return r.between(time.Second, s.w.Chaos-time.Second).Round(time.Millisecond) }
	var out []Action
	for i := 0; i < b.CutAfterRenew; i++ {
		out = append(out, Action{At: at(), Kind: ActCutAfterRenew, Role: RoleHolder, Dur: r.between(ld, 3*ld).Round(time.Millisecond)})
	}
	for i := 0; i < b.CrashAfterRenew; i++ {
		// early enough that the restart and its reads come in the chaos
		at := r.between(time.Second, max(2*time.Second, s.w.Chaos-2*ld)).Round(time.Millisecond)
		// restarted after more than the margin (its take, counted from its
		// own send, then outlasts the lease its predecessor renewed), and
		// early enough to resume before a taker takes the lease
		lo := max(2*s.full.SafetyMargin, ld/3)
		out = append(out, Action{At: at, Kind: ActCrashAfterRenew, Role: RoleHolder, Dur: r.between(lo, max(lo, ld-s.full.RenewInterval/2)).Round(time.Millisecond)})
	}
	return out
}

// The boundary actions.
const (
	// ActCutAfterRenew: the next renewal of the Role's (or Worker's)
	// process that applies cuts its requests to the table for Dur.
	ActCutAfterRenew ActionKind = "cut-after-renew"
	// ActCrashAfterRenew: the next renewal of the Role's (or Worker's)
	// process that applies crashes it; it restarts under its owner id
	// after Dur, its first two consistent scans throttled.
	ActCrashAfterRenew ActionKind = "crash-after-renew"
	// actPutTo: one record is put to shard Shard (internal).
	actPutTo ActionKind = "put-to"
)

// armAfterRenew carries out ActCutAfterRenew and ActCrashAfterRenew: it
// arms the slot for its process's next applied renewal.
//
// When no process it may strike holds a lease (early in a run, after
// crashes) or every one is armed already, it tries again half a lease
// duration later, up to four times (Action.Value counts the tries).
func (s *simulator) armAfterRenew(a Action) {
	p := s.boundaryTarget(a)
	if p == nil || p.afterRenew != "" || (a.Kind == ActCrashAfterRenew && s.crashRaceOn()) {
		s.fault(a.String()+": no live process holds a lease", "")
		if a.Value < 4 && s.now+s.full.LeaseDuration/2 < s.w.Chaos {
			a.At, a.Value = s.now+s.full.LeaseDuration/2, a.Value+1
			s.later(a)
		}
		return
	}
	s.fault(a.String(), "")
	p.afterRenew, p.afterRenewDur = a.Kind, a.Dur
}

// crashRaceOn reports whether a crash after renewal is armed or under way
// (its process not yet restarted and resumed), or too few live workers
// are left to take the lease from the restarted one: one at a time, so
// that a taker watches each.
func (s *simulator) crashRaceOn() bool {
	live := 0
	for _, sl := range s.cl.slots {
		if sl.cutAfterRead {
			return true
		}
		if p := s.live(sl); p != nil && !sl.dup {
			live++
			if p.afterRenew == ActCrashAfterRenew {
				return true
			}
		}
	}
	return live < 2
}

// resuming reports whether p is the restart of a process crashed after a
// renewal that has not yet read the row it resumes (ActCrashAfterRenew):
// its scans are not held for other workers' renewals or expiries, nor its
// replies and resolving reads delayed, so that it resumes the lease
// before a taker takes it.
func (s *simulator) resuming(p *proc) bool { return s.cl.slots[p.slot].cutAfterRead }

// boundaryTarget resolves the target of a boundary action: its Worker's
// live process, or for the role holder a live process that holds a lease,
// drawn from the boundary stream, and in worlds whose clocks run at the
// drift bound one among the slowest clocks if any holds one (the holder
// whose own view of expiry comes last in true time). The assigner is
// drawn only when no other process holds a lease: its leases are bound to
// its row, so that a cut assigner's leases go through a takeover of the
// row (seen by its own planted bugs and scenarios), not through the
// expiry race the boundary actions seek.
func (s *simulator) boundaryTarget(a Action) *proc {
	if a.Role == "" {
		return s.live(s.slotOf(a.Worker))
	}
	holds := map[string]bool{}
	asg := ""
	for _, l := range s.tbl.Snapshot().Leases {
		if l.Owner != "" && !strings.HasPrefix(l.Key, engine.ReservedPrefix) {
			holds[l.Owner] = true
		}
		if l.Key == engine.AssignerKey {
			asg = l.Owner
		}
	}
	if len(holds) > 1 {
		delete(holds, asg)
	}
	var all, slow []*proc
	for _, sl := range s.cl.slots {
		if p := s.live(sl); p != nil && !sl.dup && holds[p.owner] && p.afterRenew == "" {
			all = append(all, p)
			if sl.drift < 0 {
				slow = append(slow, p)
			}
		}
	}
	if s.w.Boundary.Drift && len(slow) > 0 {
		all = slow
	}
	if len(all) == 0 {
		return nil
	}
	return all[s.bd.rng.IntN(len(all))]
}

// racingOther reports whether a lease whose holder was cut after a
// renewal, by a process other than p, is still to be taken (see
// boundaryState.racing).
func (s *simulator) racingOther(p *proc) bool {
	if s.healed {
		return false
	}
	for _, id := range s.bd.racing {
		if id != p.id {
			return true
		}
	}
	return false
}

// armedOther returns the process other than p armed to be cut or crashed
// after its next renewal, if any (-1): p's scan then waits for that
// renewal, so that p sees the lease's last version as early as it can.
func (s *simulator) armedOther(p *proc) int32 {
	if s.healed {
		return -1
	}
	for _, sl := range s.cl.slots {
		if q := s.live(sl); q != nil && q != p && q.afterRenew != "" {
			return q.id
		}
	}
	return -1
}

// onHeldApply is a held call reaching the table, unless an earlier
// release of it did.
func (s *simulator) onHeldApply(a uint64) {
	i, gen := int(a>>32), uint32(a)
	f := s.net.calls[i]
	if f.holdGen != gen {
		f.pending--
		s.release(i)
		return
	}
	f.holdGen++
	s.onApply(i, false)
}

// releaseHeld lets the held calls that match reach the table just after
// now; the others stay held.
func (s *simulator) releaseHeld(match func(heldCall, *inflight) bool) {
	kept := s.bd.waiting[:0]
	for _, w := range s.bd.waiting {
		g := s.net.calls[w.slot]
		switch {
		case g == nil || g.holdGen != w.gen:
		case !match(w, g):
			kept = append(kept, w)
		default:
			g.holdGen++
			g.pending++
			s.q.push(event{at: s.now + time.Microsecond, kind: evHeldApply, a: uint64(w.slot)<<32 | uint64(g.holdGen)})
		}
	}
	s.bd.waiting = kept
}

// assignApplied is an assignment that applied: the reads of the pending
// index held for its assignee reach the index just after it, and read it
// fresh (an eventually consistent read may always be).
func (s *simulator) assignApplied(f *inflight) {
	to := f.call.Lease.Pending
	if to == "" || len(s.bd.waiting) == 0 {
		return
	}
	if _, ok := s.bd.racing[leaseKey(&f.call)]; len(s.bd.racing) > 0 && !ok {
		// a lease whose holder was cut is about to be assigned: the polls
		// wait for that assignment, not for one that comes just before it
		return
	}
	s.releaseHeld(func(w heldCall, g *inflight) bool {
		if w.poll && g.call.Key == to {
			g.freshIndex = true // and sees the assignment
			return true
		}
		return false
	})
}

// renewApplied is a renewal of p that applied (call slot i): the scans
// waiting for one reach the table just after it, and an armed boundary
// action goes off.
// boundLeaseOf returns a lease the table shows bound to p's session (one
// drawn from the boundary stream), "" if none.
func (s *simulator) boundLeaseOf(p *proc) string {
	var keys []string
	for _, l := range s.tbl.Snapshot().Leases {
		if l.Owner == p.owner && l.Session != "" && !engine.IsReserved(l.Key) && !l.Checkpoint.IsShardEnd() {
			keys = append(keys, l.Key)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return keys[s.bd.rng.IntN(len(keys))]
}

func (s *simulator) renewApplied(p *proc, f *inflight) {
	if s.w.Boundary.CutVictim > 0 {
		if p.renewSent == nil {
			p.renewSent = map[string]time.Duration{}
		}
		p.renewSent[leaseKey(&f.call)] = f.sent
	}
	// a scan of another process waited for this renewal: the assigner's,
	// if there is one (it decides when the lease has expired)
	waited, asg := false, int32(-1)
	if p.afterRenew != "" {
		if i, ok := s.ownerSlot(engine.AssignerKey); ok {
			if q := s.live(s.cl.slots[i]); q != nil {
				asg = q.id
			}
		}
	}
	for _, w := range s.bd.waiting {
		if g := s.net.calls[w.slot]; g != nil && g.holdGen == w.gen && w.after == f.proc && (asg < 0 || g.proc == asg) {
			waited = true
		}
	}
	s.releaseHeld(func(w heldCall, g *inflight) bool {
		return !w.poll && g.proc != f.proc && (w.after < 0 || w.after == f.proc)
	})
	k := p.afterRenew
	key := leaseKey(&f.call)
	if engine.IsSessionRow(key) && k != "" {
		// session renewal: the renewal of every lease bound to it, of
		// which one is the lease the action is about
		key = s.boundLeaseOf(p)
	}
	if k == "" || key == "" || engine.IsReserved(key) {
		return // (the assigner row's renewals neither: a lease's)
	}
	if s.healed {
		p.afterRenew = "" // no fault after healing
		return
	}
	if !waited && p.afterRenewTries < 8 {
		// cut or crash after a renewal that another worker's scan sees
		// at once
		p.afterRenewTries++
		return
	}
	if k == ActCrashAfterRenew && !engine.IsSessionRow(key) && s.bd.kbps[key] != f.call.Lease.ThroughputKBps && p.afterRenewTries < 30 {
		// crash after a renewal that changed nothing but the row's
		// version (an idle lease): the restarted process's resume, built
		// on the row before it, then writes that renewal's very row
		p.afterRenewTries++
		return
	}
	p.afterRenew = ""
	sl := s.cl.slots[p.slot]
	switch k {
	case ActCutAfterRenew:
		s.fault(fmt.Sprintf("cut w%d from the table after its renewal of %s, for %v", sl.idx, key, p.afterRenewDur), key)
		sl.table.cutReq = true
		s.opFaultOnSlot(sl)
		s.later(Action{At: s.now + p.afterRenewDur, Kind: actHealLink, Workers: []int{sl.idx}, Target: "table"})
		// its reply comes late: half the time just under the timeout (a
		// validity counted from the reply outlasts the holder's), else
		// early enough that the holder learns it in time to act to the
		// end of its validity
		if s.bd.rng.chance(0.5) {
			f.late = true
		} else if slack := s.midActSlack(); slack > time.Millisecond {
			m := p.clk.mono(f.sent)
			by := p.clk.trueAt(m+s.full.LeaseDuration-s.full.SafetyMargin) - slack - s.full.IdleTimeBetweenReads - s.full.RenewInterval
			f.lateAt = s.bd.rng.between(s.now, max(s.now, by))
		}
		s.armExpiryPause(p, key, f.sent)
		if s.bd.racing == nil {
			s.bd.racing = map[string]int32{}
		}
		s.bd.racing[key] = p.id
	case ActCrashAfterRenew:
		s.fault(fmt.Sprintf("crash w%d after its renewal of %s", sl.idx, key), key)
		s.stopProc(p, "crash")
		sl.throttleScans, sl.staleScans = 2, 2
		sl.staleKey, sl.staleAt, sl.cutAfterRead = key, s.now, true
		s.later(Action{At: s.now + p.afterRenewDur, Kind: ActRestart, Worker: sl.idx})
		if s.bd.racing == nil {
			s.bd.racing = map[string]int32{}
		}
		s.bd.racing[key] = p.id // the others take it as early as they may
		// and records come once the process is back, for both to read
		for j := 1; j <= 6; j++ {
			if at := s.now + p.afterRenewDur + time.Duration(j)*s.full.LeaseDuration/6; at < s.w.Chaos {
				s.later(Action{At: at, Kind: actPutTo, Shard: key})
			}
		}
	}
}

// rowWritten notes, in worlds with crashes after renewals, the throughput
// an applied write of a row reported (see renewApplied).
func (s *simulator) rowWritten(f *inflight) {
	if s.w.Boundary.CrashAfterRenew == 0 || f.call.Op != engine.OpUpdateLease {
		return
	}
	if s.bd.kbps == nil {
		s.bd.kbps = map[string]float64{}
	}
	s.bd.kbps[leaseKey(&f.call)] = f.call.Lease.ThroughputKBps
}

// armExpiryPause arms p, whose lease key was last renewed by a write
// sent at sent (true time) and which will learn nothing more of it, for
// the last moments it may act on the lease: a page of records that
// reaches it in its last read interval before its act-until time (its
// own view of expiry less the margin) is held until just before that
// time, or, half the time, until just before its view of expiry (where
// only a holder without its margin still acts), and its first delivery
// from the mid-act slack before its act-until time on is paused in the
// middle for the slack: inside the assumptions (the margin covers it).
//
// So that the holder has something to deliver then, records are put to
// the lease's shard at four moments in the last read interval and the
// slack before its act-until time, and at four more in the margin after
// it (which only a holder that acts past its act-until time reads).
func (s *simulator) armExpiryPause(p *proc, key string, sent time.Duration) {
	slack := s.midActSlack()
	if slack <= time.Millisecond {
		return
	}
	m := p.clk.mono(sent)
	until := p.clk.trueAt(m + s.full.LeaseDuration - s.full.SafetyMargin)
	end := p.clk.trueAt(m + s.full.LeaseDuration)
	p.pauseDeliveryFrom, p.pauseDeliveryUntil, p.pauseDeliveryFor = until-slack, end, slack
	p.lastActs, p.lastKey = [2]time.Duration{until, end}, key
	from := until - slack - s.full.IdleTimeBetweenReads
	for j := 0; j < 8; j++ {
		at := from + time.Duration(j)*(until-from)/4
		if j >= 4 {
			at = until + time.Duration(j-4)*(end-until)/4
		}
		if at > s.now && at < s.w.Chaos {
			s.later(Action{At: at, Kind: actPutTo, Shard: key})
		}
	}
}

// lastActAt returns when a page of records that would reach p at at,
// within deadline, reaches it: just before one of its armed last
// moments (armExpiryPause) that at precedes, drawn, or the other one if
// the deadline does not allow the drawn one.
func (s *simulator) lastActAt(p *proc, at, deadline time.Duration) time.Duration {
	first, second := p.lastActs[0], p.lastActs[1]
	if s.bd.rng.chance(0.5) {
		first, second = second, first
	}
	for _, t := range [2]time.Duration{first, second} {
		t -= s.bd.rng.between(time.Microsecond, time.Millisecond)
		if t > at && t <= deadline {
			return t
		}
	}
	return at
}

// takeApplied is a take of f's key that applied: with chance CutVictim,
// the live holder it took the lease from (it renewed the lease within a
// lease duration) is cut from the table for two lease durations, so that
// it learns nothing and acts until its own view of expiry, and armed for
// a pause just under the margin then.
func (s *simulator) takeApplied(f *inflight) {
	b := &s.w.Boundary
	delete(s.bd.racing, leaseKey(&f.call))
	victim := f.call.Expect.Owner
	if !b.On || victim == "" || victim == f.call.Lease.Owner || !s.bchance(b.CutVictim) {
		return
	}
	key := leaseKey(&f.call)
	for _, sl := range s.cl.slots {
		p := s.live(sl)
		if p == nil || p.owner != victim || sl.dup {
			continue
		}
		sent, ok := p.renewSent[key]
		if !ok || s.now-sent > s.full.LeaseDuration || sl.table.cutReq {
			return
		}
		d := 2 * s.full.LeaseDuration
		s.fault(fmt.Sprintf("cut w%d from the table as its lease %s is taken, for %v", sl.idx, key, d), key)
		sl.table.cutReq = true
		s.opFaultOnSlot(sl)
		s.later(Action{At: s.now + d, Kind: actHealLink, Workers: []int{sl.idx}, Target: "table"})
		s.armExpiryPause(p, key, sent)
		return
	}
}

// pauseMidDelivery delivers in (a page of records, held for p's last
// moment on a lease: f.lastAct) to p inside a mid-act pause when p's armed
// delivery pause (armExpiryPause) covers now: the step's effects, the
// delivery among them, come out when the pause ends. It reports whether
// it delivered.
func (s *simulator) pauseMidDelivery(p *proc, f *inflight, in *engine.Input) bool {
	if p.pauseDeliveryFor <= 0 || !f.lastAct || s.now < p.pauseDeliveryFrom || s.now >= p.pauseDeliveryUntil || p.paused || !p.alive {
		return false
	}
	d := p.pauseDeliveryFor
	p.pauseDeliveryFrom = s.now + d // a later last moment may be paused again
	s.fault(fmt.Sprintf("pause w%d in the middle of a delivery for %v (the mid-act slack)", p.slot, d), "")
	p.holdNext = true
	s.deliver(p, in)
	s.opFaultOn(p.id)
	p.paused = true
	s.fs.lastPauseID++
	s.fs.pauseProc[s.fs.lastPauseID] = p.id
	s.q.push(event{at: s.now + d, kind: evResume, a: s.fs.lastPauseID})
	return true
}

// replyAt returns when the reply of call f (applied now) reaches its
// process: at, or, under a boundary knob, later within the deadline.
func (s *simulator) replyAt(p *proc, f *inflight, at, deadline time.Duration) time.Duration {
	b := &s.w.Boundary
	if !b.On {
		return at
	}
	shard := s.readsShard(f)
	if at >= deadline || s.healed {
		return at
	}
	late := deadline - s.bd.rng.between(0, 2*time.Millisecond)
	switch {
	case p.lastActs[1] > at && f.in.Result.Err == nil && shard == p.lastKey &&
		(f.call.Op == engine.OpGetRecords && len(f.in.Result.Page.Records) > 0 || f.call.Op == engine.OpNextEvent && len(f.in.Result.Event.Records) > 0):
		// a page of records (polled, or pushed by a subscription) of the
		// lease the holder was cut from
		t := s.lastActAt(p, at, deadline)
		f.lastAct = t != at
		return t
	case f.lateAt > 0:
		return min(max(at, f.lateAt), deadline)
	case f.late || (f.call.Op.IsStore() && f.call.Op != engine.OpListLeases && !s.resuming(p) && s.bchance(b.LateReply)):
		return max(at, late)
	case f.call.Op == engine.OpListLeases && f.in.Result.Err == nil && !f.lastAct && !s.resuming(p):
		// racing: only the leases whose holder was cut after a renewal
		racing := s.racingOther(p)
		if !racing && !s.bchance(b.ScanAtExpiry) {
			break
		}
		// at the instant the lease expires in p's view, or half the
		// time a margin before it (where a taker that took the margin
		// for its own would act)
		wait := s.full.LeaseDuration
		if s.bd.rng.chance(0.5) {
			wait -= s.full.SafetyMargin
		}
		if t, ok := s.expiryInView(p, &f.in.Result.Listing, at, deadline, wait, racing); ok {
			return t
		}
	}
	return at
}

// readsShard returns the shard a call that reads records reads (GetRecords
// names only its iterator: the shard is the one the iterator was got for,
// or the page before it came from), and follows the iterators a reply
// hands out.
func (s *simulator) readsShard(f *inflight) string {
	c, res := &f.call, &f.in.Result
	switch c.Op {
	case engine.OpGetIterator:
		if res.Err == nil && res.Iterator != "" {
			if s.bd.iterShard == nil {
				s.bd.iterShard = map[string]string{}
			}
			s.bd.iterShard[res.Iterator] = s.callKey(c)
		}
		return s.callKey(c)
	case engine.OpGetRecords:
		shard := s.bd.iterShard[c.Iterator]
		if res.Err == nil && shard != "" {
			delete(s.bd.iterShard, c.Iterator)
			if res.Page.NextIterator != "" {
				s.bd.iterShard[res.Page.NextIterator] = shard
			}
		}
		return shard
	case engine.OpNextEvent:
		return s.callKey(c)
	}
	return ""
}

// seenVersion is a lease version as a process first saw it (the engine's
// observation rule: the time it first received a scan with that owner and
// counter).
type seenVersion struct {
	owner   string
	counter int64
	mono    time.Duration
}

// observed records a scan reply delivered to p (scan-at-expiry worlds).
func (s *simulator) observed(p *proc, l *engine.Listing) {
	if !s.w.Boundary.On {
		return
	}
	if p.seen == nil {
		p.seen = map[string]seenVersion{}
	}
	m := p.clk.mono(s.now)
	for i := range l.Leases {
		r := &l.Leases[i]
		v, ok := p.seen[r.Key]
		switch {
		case ok && r.Counter < v.counter:
		case !ok || r.Counter != v.counter || r.Owner != v.owner:
			p.seen[r.Key] = seenVersion{owner: r.Owner, counter: r.Counter, mono: m}
		}
	}
}

// expiryInView returns the earliest true time in (at, deadline) at which
// a lease of l held by another worker (if racing, one whose holder was
// cut after a renewal), whose version p has seen standing still, has
// stood still for wait in p's view.
func (s *simulator) expiryInView(p *proc, l *engine.Listing, at, deadline, wait time.Duration, racing bool) (time.Duration, bool) {
	best, ok := deadline, false
	for i := range l.Leases {
		r := &l.Leases[i]
		if id, cut := s.bd.racing[r.Key]; racing && (!cut || id == p.id) {
			continue
		}
		v, seen := p.seen[r.Key]
		if !seen || r.Owner == "" || r.Owner == p.owner || v.owner != r.Owner || v.counter != r.Counter || r.Checkpoint.IsShardEnd() {
			continue
		}
		t := p.clk.trueAt(v.mono + wait)
		if t > at && t < best {
			best, ok = t, true
		}
	}
	return best, ok
}

// applyAt decides whether call slot i, reaching the table now, is held
// back by a boundary knob (a scan until just after another worker's
// renewal applies, a resolving read until near its timeout); it reports
// the held apply time.
func (s *simulator) heldApply(p *proc, i int, f *inflight) (time.Duration, bool) {
	b := &s.w.Boundary
	if !b.On || f.held || s.healed {
		return 0, false
	}
	deadline := f.sent + s.timeoutOf(&f.call)
	switch {
	case f.call.Op == engine.OpListLeases && !s.resuming(p) && (s.armedOther(p) >= 0 || s.bchance(b.ScanAfterRenew)):
		// wait for the next renewal of the armed process, or of another
		// one, to apply (renewApplied releases it), or until its time
		// runs out
		if until := deadline - 3*s.latency(s.linkOf(p, f.call.Op)); until > s.now {
			f.holdGen++
			s.bd.waiting = append(s.bd.waiting, heldCall{slot: i, gen: f.holdGen, after: s.armedOther(p)})
			f.pending++
			s.q.push(event{at: until, kind: evHeldApply, a: uint64(i)<<32 | uint64(f.holdGen)})
			return -1, true
		}
	case f.call.Op == engine.OpListPending && f.call.Key == p.owner && (s.armedOther(p) >= 0 || s.racingOther(p) || s.bchance(b.PollAfterAssign)):
		// wait for an assignment to p to apply (assignApplied releases
		// it), or until its time runs out
		if until := deadline - 3*s.latency(s.linkOf(p, f.call.Op)); until > s.now {
			f.holdGen++
			s.bd.waiting = append(s.bd.waiting, heldCall{slot: i, gen: f.holdGen, poll: true})
			f.pending++
			s.q.push(event{at: until, kind: evHeldApply, a: uint64(i)<<32 | uint64(f.holdGen)})
			return -1, true
		}
	case f.call.Op == engine.OpGetLease && p.unknown[f.call.Key] && !s.resuming(p) && s.bchance(b.LateResolve):
		delete(p.unknown, f.call.Key)
		if t := deadline - 2*s.latency(s.linkOf(p, f.call.Op)); t > s.now {
			return s.bd.rng.between(s.now, t), true
		}
	}
	return 0, false
}

// noteUnknown records, in late-resolve worlds, that p learnt nothing of
// the outcome of its write of key: its next read of the key resolves it.
func (s *simulator) noteUnknown(p *proc, f *inflight) {
	if s.w.Boundary.LateResolve <= 0 || !f.call.Op.IsWrite() {
		return
	}
	if p.unknown == nil {
		p.unknown = map[string]bool{}
	}
	p.unknown[leaseKey(&f.call)] = true
}

// tableLag is how stale the table may read: the world's StaleLag, and in
// worlds with crashes after renewals at least two lease durations, so
// that a restarted process's first scans may show the row its
// predecessor renewed last as it was before that renewal (see
// renewApplied).
func (s *simulator) tableLag() time.Duration {
	lag := s.w.Rates.StaleLag
	if s.w.Boundary.CrashAfterRenew > 0 {
		lag = max(lag, 2*s.full.LeaseDuration)
	}
	if s.w.Boundary.StaleMix > 0 {
		lag = max(lag, s.worstStale())
	}
	return lag
}

// worstStale is how far back a worst-mix scan reads a row that exists:
// past the grace after which a finished parent's row is deleted, so that
// the scan may show the parent gone and its children not yet created.
func (s *simulator) worstStale() time.Duration {
	return 10*s.full.LeaseDuration + 6*s.full.ShardSyncInterval
}

// worstLag returns the per-row lag of a worst-mix eventually consistent
// scan: a row deleted since is shown deleted (fresh), a row that exists
// as it was worstStale ago (missing if created since). DynamoDB bounds
// neither; a correct engine decides nothing from such a scan that a
// strongly consistent read has not confirmed.
func (s *simulator) worstLag() func(string) time.Duration {
	present := map[string]bool{}
	for _, l := range s.tbl.Snapshot().Leases {
		present[l.Key] = true
	}
	stale := s.worstStale()
	return func(k string) time.Duration {
		if present[k] {
			return stale
		}
		return 0
	}
}

// readReplied is a read of one row that replied to p: the first one of
// the row its predecessor renewed just before it crashed (the read that
// resolves its resume of the row, which its stale scan showed at the
// version before that renewal) cuts p off the table for two lease
// durations, so that what it makes of the read alone decides how long it
// acts.
func (s *simulator) readReplied(p *proc, f *inflight) {
	sl := s.cl.slots[p.slot]
	if !sl.cutAfterRead || leaseKey(&f.call) != sl.staleKey || sl.table.cutReq || s.healed {
		return
	}
	sl.cutAfterRead = false
	d := 2 * s.full.LeaseDuration
	s.fault(fmt.Sprintf("cut w%d from the table after its read of %s, for %v", sl.idx, sl.staleKey, d), sl.staleKey)
	sl.table.cutReq = true
	s.opFaultOnSlot(sl)
	if s.bd.racing == nil {
		s.bd.racing = map[string]int32{}
	}
	s.bd.racing[sl.staleKey] = p.id // the others take it as early as they may
	s.later(Action{At: s.now + d, Kind: actHealLink, Workers: []int{sl.idx}, Target: "table"})
}
