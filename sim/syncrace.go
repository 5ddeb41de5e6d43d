package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Sync races (the combination sync-race): faults that land between the
// steps of a shard-sync round (the scan, the listings, the deletes of
// finished parents and the creates of children's rows) rather than
// wherever chance puts them. Each split of the combination's schedule
// (a first split; they come three to four lease durations apart) brings,
// drawn from the run's own stream:
//
//   - a follow-up split of one of its children a twentieth to a fifth of
//     a lease duration later (a child born closed: created, finished and
//     deleted soon);
//   - either (7 in 10) a stale round: the children's creates are
//     throttled until the first sync scan reply of a process other than
//     the sync leader that shows none of their rows, and that process
//     pauses in the step that sent the round's listings, until just under
//     two lease durations (on its clock) after the scan was sent (the
//     engine's in-flight bound); the creates it sends as it resumes land
//     just under their call timeout (a lease duration in this world).
//     Meanwhile the others create the children, finish the closed one and
//     delete it: a round that decides from the old scan re-creates it
//     (the round must be abandoned: its scan is older than half a lease
//     duration);
//   - or a torn round: every create of the children's rows is throttled
//     for two lease durations plus two sync intervals and a half lease
//     from the first one, so that a finished parent has been seen
//     finished for deleteGrace while its children still have no rows (its
//     row must stay until every child has a row that started).
//
// Pauses of any length, throttled calls and writes that land within their
// call timeout (at most a lease duration) are inside the assumptions. The
// combination's world adds what the other sync bugs need: holders crashed
// and restarted under their own id within half a lease duration (they
// resume their leases), eventually consistent take scans at the worst mix
// of ages in half the worlds (stale scans hide new rows from takers, which
// slows the stale round's race down), the scan assignment mode (every
// worker syncs) and TRIM_HORIZON (a parent re-created is read again).
const comboSyncRace = "sync-race"

// syncRaceState is the run's state of sync races.
type syncRaceState struct {
	on  bool
	rng rng
	// pauseUntil: a sync scan's reply before this that shows none of
	// pauseKids' rows pauses its process
	pauseUntil time.Duration
	pauseKids  []string
	// the paused process (-1: none) and when it resumes: the creates it
	// sends as it resumes land just before their call timeout
	lateProc int32
	lateAt   time.Duration
	// the latest scan reply delivered: its call and when it was sent
	scanCall uint64
	scanSent time.Duration
	// throttled: child rows' keys whose creates are throttled, until
	// when (0: from their first create on, not yet attempted)
	throttled map[string]time.Duration
	window    time.Duration // how long a torn round's creates are throttled
}

func (s *simulator) initSyncRace() {
	sr := &s.sr
	sr.on = s.w.Combo.Name == comboSyncRace
	if !sr.on {
		return
	}
	sr.rng = newRNG(s.o.Seed, streamSyncRaceRun)
	sr.throttled = map[string]time.Duration{}
	sr.lateProc = -1
	sr.window = 2*s.full.LeaseDuration + 2*s.full.ShardSyncInterval + s.full.LeaseDuration/2
}

// syncRaceSplit: shard parent was split into kids (keys) by action a.
func (s *simulator) syncRaceSplit(a *Action, parent string, kids []string, ids []string) {
	sr := &s.sr
	if !sr.on || s.healed || a.Shard != "" { // a follow-up split brings nothing more
		return
	}
	r := sr.rng
	ld := s.full.LeaseDuration
	i := r.IntN(len(ids))
	s.later(Action{At: s.now + r.between(ld/20, ld/5).Round(time.Millisecond), Kind: ActSplit, Shard: ids[i]})
	if r.chance(0.7) {
		sr.pauseUntil, sr.pauseKids = s.now+ld, kids
		return
	}
	for _, k := range kids {
		sr.throttled[k] = 0
	}
}

// syncRaceStep: p's step for input in sent calls. A step that answers a
// scan with the round's listings is a sync round between its scan and its
// decisions: a stale round pauses p there.
func (s *simulator) syncRaceStep(p *proc, in *engine.Input, calls []engine.Call) {
	sr := &s.sr
	if !sr.on || s.healed || s.now >= sr.pauseUntil || in.Kind != engine.InputResult || !p.alive || p.paused ||
		!slices.ContainsFunc(calls, func(c engine.Call) bool { return c.Op == engine.OpListShards }) ||
		slices.ContainsFunc(in.Result.Listing.Leases, func(l engine.Lease) bool { return slices.Contains(sr.pauseKids, l.Key) }) {
		return
	}
	ld := s.full.LeaseDuration
	if in.Result.ID != sr.scanCall {
		return
	}
	// resumed before the engine gives up on the round (two lease
	// durations after its scan was sent), and well after it should
	// abandon it (half a lease duration)
	if p.owner == s.syncLeader() {
		return // the others sync seldom: the leader finishes and deletes
	}
	end := sr.scanSent + time.Duration(float64(2*ld-20*time.Millisecond)/(1+s.w.DriftBound))
	d := (end - sr.rng.between(0, ld/20) - s.now).Round(time.Millisecond)
	if d < ld {
		return
	}
	sr.pauseUntil = 0
	sr.lateProc, sr.lateAt = p.id, s.now+d
	fw := s.fs.faultWorker
	s.fs.faultWorker = int32(p.slot)
	s.fault(fmt.Sprintf("sync race: w%d paused %v between its sync scan and its decisions", s.cl.slots[p.slot].idx, d), "")
	s.fs.faultWorker = fw
	s.opFaultOn(p.id)
	p.paused = true
	s.fs.lastPauseID++
	s.fs.pauseProc[s.fs.lastPauseID] = p.id
	s.q.push(event{at: s.now + d, kind: evResume, a: s.fs.lastPauseID})
}

// syncLeader returns the owner the engine's sync leader rule names: the
// smallest owner of the table's rows.
func (s *simulator) syncLeader() string {
	min := ""
	for _, l := range s.tbl.Snapshot().Leases {
		if l.Owner != "" && !strings.HasPrefix(l.Key, engine.ReservedPrefix) && (min == "" || l.Owner < min) {
			min = l.Owner
		}
	}
	return min
}

// syncRaceReply: the reply of f is delivered to its process now.
func (s *simulator) syncRaceReply(f *inflight) {
	if s.sr.on && f.call.Op == engine.OpListLeases {
		s.sr.scanCall, s.sr.scanSent = f.call.ID, f.sent
	}
}

// syncRaceSend: p sends write f. The creates a stale round's process
// sends as it resumes reach the table just before their call timeout.
func (s *simulator) syncRaceSend(p *proc, f *inflight) {
	sr := &s.sr
	if !sr.on || p.id != sr.lateProc || f.call.Op != engine.OpCreateLease {
		return
	}
	if s.now > sr.lateAt+100*time.Millisecond {
		sr.lateProc = -1
		return
	}
	f.aim.holdUntil = s.now + s.timeoutOf(&f.call) - 100*time.Millisecond
	f.fault = "sync-race-late"
}

// syncRaceThrottle reports whether the create c reaching the table now is
// throttled by a torn round.
func (s *simulator) syncRaceThrottle(c *engine.Call) bool {
	sr := &s.sr
	if !sr.on || c.Op != engine.OpCreateLease || s.healed {
		return false
	}
	if s.now < sr.pauseUntil && slices.Contains(sr.pauseKids, c.Lease.Key) {
		return true // until a stale round's process pauses
	}
	until, ok := sr.throttled[c.Lease.Key]
	if !ok {
		return false
	}
	if until == 0 {
		until = s.now + sr.window
		sr.throttled[c.Lease.Key] = until
	}
	if s.now >= until {
		delete(sr.throttled, c.Lease.Key)
		return false
	}
	return true
}

// syncRace is the combination sync-race's world.
func syncRace(w *World, r rng, full engine.Config) {
	calm(w, full)
	w.addFaults("split")
	w.Workers = max(w.Workers, 3)
	w.Assignment.Mode = engine.AssignmentScan
	w.Config.InitialPosition = engine.TrimHorizon
	b := &w.Boundary
	*b = BoundaryWorld{On: true, ScanAfterRenew: r.rangeF(0.3, 0.8)}
	if r.chance(0.5) {
		// stale scans hide new rows from takers (a child is taken late,
		// its parent deleted late): half the worlds only
		b.StaleMix = r.rangeF(0.5, 1)
		w.Rates.StaleRead = r.rangeF(0.3, 1)
		w.Rates.StaleLag = full.LeaseDuration
	}
	// a stale round's creates may land up to nearly a lease duration
	// after they are sent
	w.CallTimeout = max(w.CallTimeout, full.LeaseDuration)
}

// syncRaceSchedule is the combination's actions: the first splits, and
// holders crashed and restarted under their own id within half a lease
// duration (they resume their leases).
func syncRaceSchedule(s *simulator, r rng) []Action {
	var out []Action
	// the first splits three to four lease durations apart: each race
	// meets no other
	ld := s.full.LeaseDuration
	at := r.between(3*time.Second, 3*time.Second+ld).Round(time.Millisecond)
	for i := 0; i < 8 && at < s.w.Chaos-3*ld; i++ {
		out = append(out, Action{At: at, Kind: ActSplit})
		at += r.between(3*ld, 4*ld).Round(time.Millisecond)
	}
	for i := r.intIn(2, 4); i > 0; i-- {
		out = append(out, Action{At: r.between(5*time.Second, s.w.Chaos-2*ld).Round(time.Millisecond), Kind: ActCrash, Role: RoleHolder,
			Dur: r.between(200*time.Millisecond, ld/2).Round(time.Millisecond)})
	}
	return out
}
