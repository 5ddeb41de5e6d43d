package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Aimed faults (BUGGIFY, after FoundationDB, like the boundary seeking of
// boundary.go): in a share of the swarm's worlds, faults fire inside the
// engine's multi-write operations (ops.go) instead of wherever chance puts
// them. At each step of an operation of an aimed kind (a write of it that
// applied, an act, the moment a holder began to let a lease go) a fault
// fires with the world's chance, until the world's cap, aimed at the
// process whose step comes next:
//
//   - crash: it crashes now, its writes of the operation still in flight
//     never reach the table (it died before sending them), and it restarts
//     within two lease durations (under a new owner id half the time);
//   - pause: it pauses (between two steps of its own: not in the middle of
//     acting) for 10 ms to two lease durations, and its writes of the
//     operation in flight reach the table only after the pause, or never
//     if their call timeout runs out first;
//   - cut: its table link is cut both ways for 100 ms to two lease
//     durations, its writes of the operation in flight lost;
//   - lose-request: its next write of the operation (or its next write)
//     never reaches the table;
//   - lose-reply: the reply of the write that made the step is lost (it
//     applied; its writer does not learn it);
//   - late-reply: that reply comes just under the call timeout;
//   - throttle-next: its next write of the operation (or its next write)
//     is throttled.
//
// Each stays inside the assumptions: a pause between two steps is a pause
// of any length, a write lands within its call timeout or never, a reply
// comes within the timeout or is lost. The aiming draws from its own PRNG
// streams: worlds without it draw exactly as before. The world's
// description names the kinds, faults, chance and cap (World.Aim); each
// firing is a fault record of the trace ("aimed: ...").

// The aimed fault kinds.
const (
	AimCrash        = "crash"
	AimPause        = "pause"
	AimCut          = "cut"
	AimLoseRequest  = "lose-request"
	AimLoseReply    = "lose-reply"
	AimLateReply    = "late-reply"
	AimThrottleNext = "throttle-next"
)

// AimFaults are the aimed fault kinds, in the order the world lists them.
var AimFaults = []string{AimCrash, AimPause, AimCut, AimLoseRequest, AimLoseReply, AimLateReply, AimThrottleNext}

// AimShare is the share of the swarm's worlds with aimed faults.
const AimShare = 0.4

// AimWorld is the drawn aiming of a world's faults at operations.
type AimWorld struct {
	On bool
	// Kinds are the operation kinds aimed at (OpKinds), Faults the fault
	// kinds drawn from (AimFaults).
	Kinds, Faults []string
	// Chance is the chance that a step of an aimed operation fires a
	// fault; Max the most that fire in the world.
	Chance float64
	Max    int
}

func (a AimWorld) String() string {
	if !a.On {
		return ""
	}
	return fmt.Sprintf("; aimed faults: %s at %s, chance %.2f a step, at most %d", strings.Join(a.Faults, ","), strings.Join(a.Kinds, ","), a.Chance, a.Max)
}

// drawAim draws w's aimed faults (Options.Aim; a swarm turns them on for
// AimShare of its worlds) from their own stream.
func (w *World) drawAim(o Options, swarm bool) error {
	r := newRNG(o.Seed, streamAim)
	a := &w.Aim
	drawn := r.chance(AimShare) // first, whatever the option: a world pinned on gets its drawn knobs
	switch o.Aim {
	case "":
		a.On = swarm && drawn
	case "on":
		a.On = true
	case "off":
	default:
		return fmt.Errorf("sim: Aim %q is not on or off (or empty: drawn by a swarm)", o.Aim)
	}
	if !a.On && o.pinAim == nil {
		return nil
	}
	for len(a.Kinds) == 0 {
		for _, k := range OpKinds {
			if r.chance(0.6) {
				a.Kinds = append(a.Kinds, k)
			}
		}
	}
	for len(a.Faults) == 0 {
		for _, f := range AimFaults {
			if r.chance(0.5) {
				a.Faults = append(a.Faults, f)
			}
		}
	}
	a.Chance = r.rangeF(0.1, 0.6)
	a.Max = r.intIn(2, 8)
	if o.pinAim != nil {
		*a = *o.pinAim
	}
	return nil
}

// aimState is the run's state of aimed faults.
type aimState struct {
	rng   rng
	trng  rng // targeted faults (targeted.go)
	on    [numOpKinds]bool
	fired int
	// the processes whose next write is lost or throttled
	loseNext, throttleNext map[int32]bool
}

func (s *simulator) initAim() {
	a := &s.aim
	a.rng = newRNG(s.o.Seed, streamAimRun)
	a.trng = newRNG(s.o.Seed, streamTargetRun)
	for _, k := range s.w.Aim.Kinds {
		a.on[slices.Index(OpKinds, k)] = true
	}
	a.loseNext, a.throttleNext = map[int32]bool{}, map[int32]bool{}
}

// aimMark is what an aimed fault did to one call.
type aimMark struct {
	drop      bool          // never reaches the table
	holdUntil time.Duration // reaches it only after this (a pause), within its timeout
	throttle  bool          // throttled at the table
	transient bool          // fails with a 500 at the table (a write applied or not)
	reply     uint8         // aimReplyLost, aimReplyLate
	label     string        // "targeted" (targeted.go); "": aimed
}

// name returns the fault's name for the trace.
func (m *aimMark) name(what string) string {
	if m.label != "" {
		return m.label + "-" + what
	}
	return "aimed-" + what
}

const (
	aimReplyLost = 1 + iota
	aimReplyLate
)

// aimAt is a step of in (f: the write that made it, if any): an aimed
// fault may fire.
func (s *simulator) aimAt(in *opInst, f *inflight) {
	a := &s.aim
	w := &s.w.Aim
	if !w.On || s.healed || a.fired >= w.Max || !a.on[in.kind] {
		return
	}
	r := a.rng
	if !r.chance(w.Chance) {
		return
	}
	kind := w.Faults[r.IntN(len(w.Faults))]
	t := s.aimTarget(in)
	if t == nil || !t.alive {
		return
	}
	a.fired++
	ld := s.full.LeaseDuration
	sl := s.cl.slots[t.slot]
	desc := fmt.Sprintf("aimed: %s w%d after step %d of %s %s", kind, sl.idx, in.steps, in.kind, in.key)
	switch kind {
	case AimLoseReply, AimLateReply:
		if f == nil || f.proc != t.id {
			kind = AimLoseRequest // no reply to aim at: the next request instead
			desc = fmt.Sprintf("aimed: %s w%d after step %d of %s %s", kind, sl.idx, in.steps, in.kind, in.key)
		}
	}
	s.fault(desc, in.key)
	s.opFaultOn(t.id)
	mine := s.aimCalls(in, t)
	switch kind {
	case AimCrash:
		for _, g := range mine {
			g.aim.drop = true
		}
		s.stopProc(t, "crash")
		if r.chance(0.5) {
			sl.restarts++
			sl.owner = "w" + strconv.Itoa(sl.idx) + "-r" + strconv.Itoa(sl.restarts)
		}
		s.later(Action{At: s.now + r.between(500*time.Millisecond, 2*ld).Round(time.Millisecond), Kind: ActRestart, Worker: sl.idx})
	case AimPause:
		if t.paused {
			return
		}
		d := r.logUniform(10*time.Millisecond, 2*ld).Round(time.Millisecond)
		for _, g := range mine {
			g.aim.holdUntil = s.now + d
		}
		t.paused = true
		s.fs.lastPauseID++
		s.fs.pauseProc[s.fs.lastPauseID] = t.id
		s.q.push(event{at: s.now + d, kind: evResume, a: s.fs.lastPauseID})
	case AimCut:
		for _, g := range mine {
			g.aim.drop = true
		}
		sl.table.cutReq, sl.table.cutRep = true, true
		s.later(Action{At: s.now + r.logUniform(100*time.Millisecond, 2*ld).Round(time.Millisecond), Kind: actHealLink, Workers: []int{sl.idx}, Target: "table"})
	case AimLoseRequest:
		if len(mine) > 0 {
			mine[0].aim.drop = true
		} else {
			a.loseNext[t.id] = true
		}
	case AimThrottleNext:
		if len(mine) > 0 {
			mine[0].aim.throttle = true
		} else {
			a.throttleNext[t.id] = true
		}
	case AimLoseReply:
		f.aim.reply = aimReplyLost
	case AimLateReply:
		f.aim.reply = aimReplyLate
	}
}

// aimCalls returns the writes of in that t has in flight and that have not
// reached the table.
func (s *simulator) aimCalls(in *opInst, t *proc) []*inflight {
	var out []*inflight
	for _, c := range in.inFlight {
		if c.slot >= len(s.net.calls) {
			continue
		}
		if g := s.net.calls[c.slot]; g != nil && g.call.ID == c.id && g.proc == t.id && g.applied < 0 && !g.answered {
			out = append(out, g)
		}
	}
	return out
}

// aimTarget returns the process an aimed fault at a step of in strikes:
// the one whose step comes next. In a handoff, after the request the
// holder, after the release the receiver; in a merge or a split, the
// process of the step, the holder of a parent still to finish, or the
// assigner (which creates the children's rows), drawn; otherwise the
// process of the step.
func (s *simulator) aimTarget(in *opInst) *proc {
	byOwner := func(owner string) *proc {
		for _, sl := range s.cl.slots {
			if p := s.live(sl); p != nil && p.owner == owner && !sl.dup {
				return p
			}
		}
		return nil
	}
	self := func() *proc {
		if in.proc >= 0 && int(in.proc) < len(s.cl.procs) {
			return s.cl.procs[in.proc]
		}
		return nil
	}
	switch in.kind {
	case okHandoff:
		if in.steps == 1 {
			if l, ok := s.row(in.key); ok {
				return byOwner(l.Owner)
			}
		}
		if in.steps == 2 {
			return byOwner(in.receiver)
		}
	case okMerge, okReshard:
		var cands []*proc
		if p := self(); p != nil && p.alive {
			cands = append(cands, p)
		}
		for _, k := range in.want {
			if key, ok := strings.CutPrefix(k, "end:"); ok && s.ops.stream[k] == in {
				if l, ok := s.row(key); ok && l.Owner != "" {
					if p := byOwner(l.Owner); p != nil {
						cands = append(cands, p)
					}
				}
			}
		}
		if i, ok := s.ownerSlot(engine.AssignerKey); ok {
			if p := s.live(s.cl.slots[i]); p != nil {
				cands = append(cands, p)
			}
		}
		if len(cands) == 0 {
			return nil
		}
		return cands[s.aim.rng.IntN(len(cands))]
	}
	return self()
}

// row returns the lease table's row key now.
func (s *simulator) row(key string) (engine.Lease, bool) {
	l, err := s.tbl.GetLease(s.ctx, key)
	return l, err == nil
}

// aimSend reports whether the write p sends now is lost by an aimed fault
// (lose-request with nothing in flight), and marks one to be throttled.
func (s *simulator) aimSend(p *proc, f *inflight) bool {
	lost := s.targetSend(f)
	a := &s.aim
	if len(a.loseNext)+len(a.throttleNext) == 0 || !f.call.Op.IsWrite() {
		return lost
	}
	if a.throttleNext[p.id] {
		delete(a.throttleNext, p.id)
		f.aim.throttle = true
	}
	if a.loseNext[p.id] {
		delete(a.loseNext, p.id)
		return true
	}
	return lost
}

// aimApply decides what an aimed fault does to call slot i reaching the
// table now: it is dropped (lost: it times out), held until its process's
// pause is over (if its timeout allows; else dropped). It reports whether
// the apply is over.
func (s *simulator) aimApply(i int, f *inflight) bool {
	m := &f.aim
	if !m.drop && m.holdUntil <= s.now {
		return false
	}
	deadline := f.sent + s.timeoutOf(&f.call)
	if !m.drop {
		p := s.cl.procs[f.proc]
		at := m.holdUntil + s.latency(s.linkOf(p, f.call.Op))
		m.holdUntil = 0
		if at < deadline {
			s.schedCall(i, at, evApply)
			return true
		}
	}
	f.fault = m.name("drop")
	s.schedCall(i, max(s.now, deadline), evTimeout)
	return true
}
