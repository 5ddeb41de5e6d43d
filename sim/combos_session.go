package sim

import (
	"time"

	"github.com/shardlease/shardlease/engine"
)

// sessionStrike (issue 19): the windows of session renewal's planted bugs.
// Each holder's leases are valid through its session row alone, so what
// endangers them is whatever makes the assigner end a session that its
// holder still counts on, or leaves a row bound to a session that nobody
// acts for: a holder cut off the table just after a session renewal (it
// acts to its margin, the assigner times the session at the drift bound);
// its table link clogged past a lease duration (its renewals land late,
// after the assigner ended the session; its takes land after it gave them
// up); a holder crashed and restarted under its own id at once (it takes
// its session row over and resumes its predecessor's leases); replies of
// its table calls lost (writes of unknown outcome). An assigner world with
// a short lease, session renewal, every clock at the drift bound and the
// assigner's scans timed to renewals and expiries; a calm world otherwise.
var sessionStrike = Combo{
	Name: "session-strike",
	What: "an assigner fleet (3-5 workers) renewing by session, with a 3-5 s lease, scans every tenth to quarter of a lease duration and every clock at the drift bound, " +
		"whose holders are, four to seven times, cut off the table just after a session renewal, clogged on the table past a lease duration, " +
		"crashed and restarted under their own id within half a lease duration, or left without the replies of their table calls; a calm world otherwise",
	Share:    0.06,
	boundary: true, calms: true,
	engine: func(w *World, e *EngineParams, r rng) {
		shortLease(e, r, 3*time.Second, 5*time.Second)
		e.MaxLeasesForWorker = 0
	},
	world: func(w *World, r rng, full engine.Config) {
		calm(w, full)
		w.Assignment.Mode = engine.AssignmentAssigner
		w.Renewal.Mode = engine.RenewalSession
		w.Workers = max(w.Workers, r.intIn(3, 5))
		w.Shards = max(w.Shards, 2*w.Workers)
		w.Chaos = max(w.Chaos, r.between(90*time.Second, 150*time.Second).Round(time.Second))
		ld := full.LeaseDuration
		w.Config.AssignerScanInterval = r.between(ld/10, ld/4).Round(10 * time.Millisecond)
		w.Config.PendingPollInterval = r.between(ld/20, ld/10).Round(10 * time.Millisecond)
		// a page held to the holder's last moment must be within its
		// call's timeout
		w.CallTimeout = max(w.CallTimeout, full.SafetyMargin+full.IdleTimeBetweenReads+time.Second)
		w.Boundary = BoundaryWorld{On: true, Drift: true, ScanAtExpiry: r.rangeF(0.5, 1), ScanAfterRenew: r.rangeF(0.5, 1), PollAfterAssign: r.rangeF(0, 1),
			LateReply: r.rangeF(0, 0.3)}
	},
	schedule: sessionStrikes,
}

// sessionStrikes is the schedule of the combination session-strike.
func sessionStrikes(s *simulator, r rng) []Action {
	var out []Action
	ld := s.full.LeaseDuration
	n := r.intIn(4, 7)
	span := s.w.Chaos - 5*time.Second - 2*ld
	for i := 0; i < n && span > 0; i++ {
		at := (5*time.Second + time.Duration(i)*span/time.Duration(n) + r.between(0, span/time.Duration(2*n))).Round(time.Millisecond)
		who := r.IntN(s.w.Workers)
		switch r.IntN(4) {
		case 0: // cut after a session renewal: the margin
			out = append(out, Action{At: at, Kind: ActCutAfterRenew, Role: RoleHolder, Dur: r.between(ld, 3*ld/2).Round(time.Millisecond)})
		case 1: // its renewals and takes land late
			out = append(out, Action{At: at, Kind: ActClog, Workers: []int{who}, Target: "table", Extra: r.between(ld/2, ld).Round(time.Millisecond), Dur: r.between(ld, 2*ld).Round(time.Millisecond)})
		case 2: // a restart under its own id before its session expires
			out = append(out, Action{At: at, Kind: ActCrash, Role: RoleHolder, Dur: r.between(ld/10, ld/2).Round(time.Millisecond)})
		default: // writes of unknown outcome
			out = append(out, Action{At: at, Kind: ActPartition, Workers: []int{who}, Target: "table", Dir: "reply", Dur: r.between(ld/4, ld).Round(time.Millisecond)})
		}
	}
	return out
}
