package sim

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Strikes at the assigner (the combinations assigner-failovers and
// assigner-lapse): a fault aimed at the moment the assigner's work makes
// a failover of its row hardest. ActStrikeAssigner arms the process that
// holds the assigner row when it fires; the fault strikes it at the armed
// moment (Action.Target):
//
//   - StrikeAfterScan: once the reply of its next consistent scan has been
//     delivered (the assignments and takes of that round in flight);
//   - StrikeAfterAssign: once its next assignment or take applies at the
//     table (the reply still to come); StrikeAfterTake: its next take;
//   - StrikeDeputyRead: when a deputy's next read of the assigner row
//     reaches the table;
//   - StrikeNow: at once.
//
// A moment that does not come within two lease durations of the arming
// gives way to the next scan reply. The fault (Action.Dir) is a crash
// (StrikeCrash: restarted after Dur, under a new owner id if NewOwner), a
// pause (StrikePause: for Dur, its calls and replies held) or a cut of its
// table link both ways (StrikeCut: for Dur; its stream link stays, so it
// goes on reading its shards), or the lapse of its row alone (StrikeRowFail:
// for Dur, every write of the assigner row it sends is throttled, and the
// replies of its takes of other rows come just under the call timeout, so
// that a take may be in flight as its row lapses, while its other calls go
// through; and, late in the row's life, a pause after a renewal and a cut
// after a take: strikeRead, strikeTook), or that lapse with only the late
// replies of its takes (StrikeRowLate: no pause, no cut; in a world whose
// call timeout is long, the reply of a take sent late in the row's life
// comes after the row lapsed and its successor reassigned the lease,
// combos_deposed.go). Each is one of the faults the assumptions allow at any moment
// (a throttled call, a late reply); the strike only picks the moment.

// ActStrikeAssigner arms a strike at the assigner (see above).
const ActStrikeAssigner ActionKind = "strike-assigner"

// The moments a strike is aimed at (Action.Target).
const (
	StrikeAfterScan   = "after-scan"
	StrikeAfterAssign = "after-assign"
	StrikeAfterTake   = "after-take"
	StrikeDeputyRead  = "deputy-read"
	StrikeNow         = "now"
)

// The faults of a strike (Action.Dir).
const (
	StrikeCrash   = "crash"
	StrikePause   = "pause"
	StrikeCut     = "cut"
	StrikeRowFail = "row-fail"
	StrikeRowLate = "row-late"
)

// strikeState is the armed strike, if any.
type strikeState struct {
	on   bool
	a    Action
	proc int32
	at   time.Duration // when it was armed
	// rowFail: the process whose writes of the assigner row fail until
	// rowFailUntil (StrikeRowFail)
	rowFail      int32
	rowFailUntil time.Duration
	// rowAt: when the assigner row's last write applied, rowBy: by whom
	rowAt time.Duration
	rowBy int32
	// paused: the process whose row lapses has been paused after a
	// renewal of one of its leases (StrikeRowFail)
	paused  bool
	cut     bool                     // p has been cut off the table after a take (strikeTook)
	renewed map[string]time.Duration // lease key -> the send time of its latest applied renewal
	rng     rng
}

// armStrike carries out ActStrikeAssigner: it arms the assigner's process
// (or, with no live assigner or a strike armed already, tries again half a
// lease duration later, up to four times: Action.Value counts the tries).
func (s *simulator) armStrike(a Action) {
	if s.healed {
		return
	}
	if st := &s.sk; st.on && (!s.cl.procs[st.proc].alive || s.now-st.at >= 3*s.full.LeaseDuration) {
		st.on, st.a = false, Action{} // its process died, or its moment never came
	}
	var p *proc
	if i, ok := s.ownerSlot(engine.AssignerKey); ok {
		p = s.live(s.cl.slots[i])
	}
	if p == nil || s.sk.on || s.now < s.sk.rowFailUntil {
		if a.Value < 4 && s.now+s.full.LeaseDuration/2 < s.w.Chaos {
			a.At, a.Value = s.now+s.full.LeaseDuration/2, a.Value+1
			s.later(a)
		}
		return
	}
	s.sk.on, s.sk.a, s.sk.proc, s.sk.at = true, a, p.id, s.now
	if a.Target == StrikeNow || a.Target == "" {
		s.strike(p)
	}
}

// strike fires the armed strike at p.
func (s *simulator) strike(p *proc) {
	a := s.sk.a
	s.sk.on, s.sk.a = false, Action{}
	if s.healed || !p.alive {
		return
	}
	idx := s.cl.slots[p.slot].idx
	switch a.Dir {
	case StrikeCrash:
		s.later(Action{At: s.now, Kind: ActCrash, Worker: idx, Dur: a.Dur, NewOwner: a.NewOwner})
	case StrikePause:
		s.later(Action{At: s.now, Kind: ActPause, Worker: idx, Dur: a.Dur})
	case StrikeCut:
		// at once: the replies of the calls now at the table are lost
		// too (a take that applied is then of unknown outcome until the
		// link heals)
		s.act(Action{At: s.now, Kind: ActPartition, Workers: []int{idx}, Target: "table", Dir: "both", Dur: a.Dur})
	case StrikeRowFail, StrikeRowLate:
		s.fault(fmt.Sprintf("strike: w%d's writes of the assigner row throttled for %v, its takes' replies late", idx, a.Dur), engine.AssignerKey)
		// row-late: neither the pause after a late renewal (strikeRead)
		// nor the cut after a take (strikeTook): the take's late reply
		// itself comes after the row lapsed
		late := a.Dir == StrikeRowLate
		s.sk.rowFail, s.sk.rowFailUntil, s.sk.paused, s.sk.cut, s.sk.renewed = p.id, s.now+a.Dur, late, late, nil
	}
}

// armedAt reports whether the armed strike goes off now at moment m of
// process p (a moment overdue gives way to the next scan reply).
func (s *simulator) armedAt(p *proc, m string) bool {
	st := &s.sk
	if !st.on || p.id != st.proc {
		return false
	}
	if !p.alive {
		st.on, st.a = false, Action{} // struck by something else
		return false
	}
	return st.a.Target == m || (m == StrikeAfterScan && s.now-st.at >= 2*s.full.LeaseDuration)
}

// strikeAfterScan: p's consistent scan reply has been delivered.
func (s *simulator) strikeAfterScan(p *proc) {
	if s.armedAt(p, StrikeAfterScan) {
		s.strike(p)
	}
}

// strikeApplied: call f of p reached the table (applied: a write that
// applied).
func (s *simulator) strikeApplied(p *proc, f *inflight, applied bool) {
	st := &s.sk
	c := &f.call
	if applied && leaseKey(c) == engine.AssignerKey {
		st.rowAt, st.rowBy = s.now, p.id
	}
	s.strikeRead(p, f)
	if applied && f.reason == trace.WriteTake && !engine.IsReserved(leaseKey(c)) {
		s.strikeTook(p)
	}
	if !st.on {
		return
	}
	switch {
	case applied && (f.reason == trace.WriteAssign || f.reason == trace.WriteTake) && !engine.IsReserved(leaseKey(c)):
		if s.armedAt(p, StrikeAfterAssign) || (f.reason == trace.WriteTake && s.armedAt(p, StrikeAfterTake)) {
			s.strike(p)
		}
	case c.Op == engine.OpGetLease && c.Key == engine.AssignerKey && p.id != st.proc && p.alive:
		if q := s.cl.procs[st.proc]; s.armedAt(q, StrikeDeputyRead) {
			s.strike(q)
		}
	}
}

// strikeSend marks a call p sends now while its row is made to lapse
// (StrikeRowFail): a write of the assigner row is throttled, a take of
// another row has its reply come just under the timeout.
func (s *simulator) strikeSend(p *proc, f *inflight) {
	st := &s.sk
	if st.rowFailUntil == 0 || p.id != st.rowFail || !f.call.Op.IsWrite() {
		return
	}
	if s.now >= st.rowFailUntil || s.healed {
		st.rowFail, st.rowFailUntil = 0, 0
		return
	}
	f.aim.label = "strike"
	switch {
	case leaseKey(&f.call) == engine.AssignerKey:
		f.aim.throttle = true
	case f.reason == trace.WriteTake && !engine.IsReserved(leaseKey(&f.call)):
		f.aim.reply = aimReplyLate
	}
}

// strikeRenewed notes, while p's row lapses (StrikeRowFail), when its
// latest renewal of a lease that applied was sent.
func (s *simulator) strikeRenewed(p *proc, f *inflight) {
	st := &s.sk
	if st.rowFailUntil == 0 || p.id != st.rowFail || engine.IsReserved(leaseKey(&f.call)) {
		return
	}
	if st.renewed == nil {
		st.renewed = map[string]time.Duration{}
	}
	st.renewed[leaseKey(&f.call)] = f.sent
}

// strikeRead is a read of records of p reaching the stream (f, its page
// built): while p's row lapses (StrikeRowFail), the first page with records
// once p has renewed a lease late in the row's life (in the renew interval
// before its expiry, in true time) pauses p, the page held, until shortly
// before that renewal's own act-until time, after its successor has taken
// the row over and handed the lease out. p's leases are bound to its row:
// it must not hand the page to its processor when it resumes.
func (s *simulator) strikeRead(p *proc, f *inflight) {
	st := &s.sk
	if st.rowFailUntil == 0 || p.id != st.rowFail || st.paused || st.rowBy != p.id || s.healed || f.call.Op != engine.OpGetRecords || len(f.in.Result.Page.Records) == 0 {
		return
	}
	ld, m := s.full.LeaseDuration, s.full.SafetyMargin
	// (a read names no lease: the earliest of the late renewals)
	var sent time.Duration
	for _, t := range st.renewed {
		if t >= st.rowAt+ld-s.full.RenewInterval && (sent == 0 || t < sent) {
			sent = t
		}
	}
	if sent == 0 || s.now >= st.rowAt+ld+ld/2 {
		return
	}
	// resumed in the last fifth of the time from the row's expiry to
	// the lease's own act-until time (less a twentieth of a lease
	// duration for the drift)
	hi := sent + ld - m - ld/20
	lo := hi - max(0, hi-(st.rowAt+ld))/5
	d := st.rng.between(lo, hi) - s.now
	if d <= 0 || hi <= st.rowAt+ld {
		return
	}
	st.paused = true
	s.later(Action{At: s.now, Kind: ActPause, Worker: s.cl.slots[p.slot].idx, Dur: d.Round(time.Millisecond)})
}

// strikeTook is a take of a lease by p that applied: while p's row lapses
// (StrikeRowFail), the first one late in the row's life (from a third of a
// lease duration after its last write) cuts p off the table both ways,
// the take's reply lost, until after a deputy has taken the row over and
// handed the lease out, and before the take's own act-until time: p
// learns the take applied once the link heals, after its row lapsed, and
// must not act on it.
func (s *simulator) strikeTook(p *proc) {
	st := &s.sk
	if st.rowFailUntil == 0 || p.id != st.rowFail || st.cut || st.rowBy != p.id || s.healed {
		return
	}
	ld, m := s.full.LeaseDuration, s.full.SafetyMargin
	if s.now < st.rowAt+ld/3 {
		return
	}
	lo, hi := st.rowAt+ld+ld/4, s.now+ld-m-ld/10
	if hi <= lo {
		return
	}
	st.cut = true
	d := st.rng.between(lo, hi) - s.now
	s.act(Action{At: s.now, Kind: ActPartition, Workers: []int{s.cl.slots[p.slot].idx}, Target: "table", Dir: "both", Dur: d.Round(time.Millisecond)})
}
