package sim

import "testing"

// The latency findings of the session-renewal soak (d575ebb, seeds 1-10000
// with -renewal session), each a world that broke T2 or B1 and the
// planted bug that undoes its fix, and the later soaks' findings. They
// renew by session; the fixes hold in both modes. A world whose history
// a later engine change altered so that it no longer shows its bug is
// dropped, its bug left to its named test (engine/testcatches_test.go):
// resolve-waits-backoff (7649), startup-scan-retry-slow (6373) and
// orphan-take-once (9134 of the ac0136d soak) since the fixes of the
// 1b4e506 soak.
var latencyWorlds = []regressWorld{
	// a worker joining a table adopted from KCL waited a lease duration
	// for its session check while the assigner had taken the KCL rows
	// over; a lease moved to it waited with it (engine/session.go,
	// sessionChecked)
	{opts: Options{Seed: 9359, Renewal: "session"}, bug: "session-check-waits-lease", test: "TestLatencyWorldsPass", inv: "T2"},
	// the assigner handed its own leases to a member at its cap, uncounted,
	// and the member declined the one over it until its own handoffs were
	// done (engine/assigner_balance.go, full)
	{opts: Options{Seed: 3795, Renewal: "session"}, bug: "cap-ignores-handoffs", test: "TestLatencyWorldsPass", inv: "T2"},
	// a holder whose writes of a row had been throttled released it half a
	// second past its handoff's deadline, after the throttle's backoff
	// (engine/holder.go, tickHolding)
	{opts: Options{Seed: 9588, Renewal: "session"}, bug: "handoff-release-waits-backoff", test: "TestLatencyWorldsPass", inv: "T2"},
	// an assignment sent from a scan whose reply came late was counted for
	// its receiver at the next scan, though that scan showed the row moved
	// on: a balance move went the wrong way and was undone
	// (engine/assigner_balance.go, loads)
	{opts: Options{Seed: 5925, Renewal: "session"}, bug: "doomed-assign-counted", test: "TestLatencyWorldsPass", inv: "B1"},
	// (the soak of ac0136d, the default swarm) a world of the default renewal beside a KCL table's
	// rows: every worker renews per lease, and the assigner, whose session
	// row it released at its start-up check, gave itself no lease
	// (engine/assigner_balance.go, sessionStill)
	{opts: Options{Seed: 8778}, bug: "assigner-still-itself", test: "TestLatencyWorldsPass", inv: "L1"},
	// (the soak of 1b4e506, the default swarm) a new assigner counted the
	// session row of the process whose expired assigner row it took over
	// as alive, listed it as a deputy and gave it leases: when the new
	// assigner was cut off, the dead deputy stood first in line
	// (engine/session.go, noteSessionLive)
	{opts: Options{Seed: 3030}, bug: "previous-session-revives", test: "TestLatencyWorldsPass", inv: "T3"},
	// (the same soak) a deputy whose take of the assigner row failed its
	// condition timed the new assigner from its next monitor read, a
	// deputy's interval later, and took the row over late when that one
	// died (engine/write.go, writeSuperseded)
	{opts: Options{Seed: 14343}, bug: "lost-assigner-take-reads-late", test: "TestLatencyWorldsPass", inv: "T3"},
	// (the same soak) beside a KCL worker's rows, the assigner counted the
	// KCL worker a member and listed it among the assigner row's deputies,
	// where it never takes the row over (engine/assigner.go, assignFrom)
	{opts: Options{Seed: 4370}, bug: "kcl-owners-members", test: "TestLatencyWorldsPass", inv: "T3"},
	// (the same soak) a scan whose reply came 3 s late showed rows of a
	// live member standing expired: the assigner took one for itself and
	// balanced in the same round, handing three of its own leases to the
	// member, then asked for one back once fresh reads showed the rows
	// renewed (engine/assigner_balance.go, staleMember)
	{opts: Options{Seed: 4170}, bug: "balance-beside-stale-member", test: "TestLatencyWorldsPass", inv: "B1"},
}

// TestLatencyWorldsPass: each latency world passes as the engine is.
func TestLatencyWorldsPass(t *testing.T) {
	for _, rw := range latencyWorlds {
		t.Run(rw.bug, func(t *testing.T) { rw.passes(t) })
	}
}

// TestLatencyWorldsCaught: with its planted bug each world breaks its
// invariant again.
func TestLatencyWorldsCaught(t *testing.T) {
	for _, rw := range latencyWorlds {
		t.Run(rw.bug, func(t *testing.T) { rw.caught(t) })
	}
}
