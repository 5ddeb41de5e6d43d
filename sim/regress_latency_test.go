package sim

import "testing"

// The latency findings of the session-renewal soak (d575ebb, seeds 1-10000
// with -renewal session), each a world that broke T2 or B1 and the
// planted bug that undoes its fix, and the later soaks' findings. They
// renew by session; the fixes hold in both modes.
var latencyWorlds = []regressWorld{
	// a worker that was the assigner was cut off while its assignment's
	// outcome was unknown; its resolving read backed off to seconds, and
	// an assignment to it waited for that read after the table was back
	// (engine/write.go, noteStoreReply)
	{opts: Options{Seed: 7649, Renewal: "session"}, bug: "resolve-waits-backoff", test: "TestLatencyWorldsPass", inv: "T2"},
	// a worker joining a table adopted from KCL waited a lease duration
	// for its session check while the assigner had taken the KCL rows
	// over; a lease moved to it waited with it (engine/session.go,
	// sessionChecked)
	{opts: Options{Seed: 9359, Renewal: "session"}, bug: "session-check-waits-lease", test: "TestLatencyWorldsPass", inv: "T2"},
	// the assigner handed its own leases to a member at its cap, uncounted,
	// and the member declined the one over it until its own handoffs were
	// done (engine/assigner_balance.go, full)
	{opts: Options{Seed: 3795, Renewal: "session"}, bug: "cap-ignores-handoffs", test: "TestLatencyWorldsPass", inv: "T2"},
	// a new worker's first scan failed and it scanned again a renew
	// interval later; a lease moved to it meanwhile waited
	// (engine/take.go, onScan)
	{opts: Options{Seed: 6373, Renewal: "session"}, bug: "startup-scan-retry-slow", test: "TestLatencyWorldsPass", inv: "T2"},
	// a holder whose writes of a row had been throttled released it half a
	// second past its handoff's deadline, after the throttle's backoff
	// (engine/holder.go, tickHolding)
	{opts: Options{Seed: 9588, Renewal: "session"}, bug: "handoff-release-waits-backoff", test: "TestLatencyWorldsPass", inv: "T2"},
	// an assignment sent from a scan whose reply came late was counted for
	// its receiver at the next scan, though that scan showed the row moved
	// on: a balance move went the wrong way and was undone
	// (engine/assigner_balance.go, loads)
	{opts: Options{Seed: 5925, Renewal: "session"}, bug: "doomed-assign-counted", test: "TestLatencyWorldsPass", inv: "B1"},
	// (the soak of ac0136d, the default swarm: seeds 3641, 6099, 9134) a worker's take back of a
	// row bound to its session that it did not hold was throttled, and it
	// forgot the row: the lease stood unprocessed for good
	// (engine/session.go, onOrphanRead)
	{opts: Options{Seed: 9134}, bug: "orphan-take-once", test: "TestLatencyWorldsPass", inv: "S4"},
	// (the same soak) a world of the default renewal beside a KCL table's
	// rows: every worker renews per lease, and the assigner, whose session
	// row it released at its start-up check, gave itself no lease
	// (engine/assigner_balance.go, sessionStill)
	{opts: Options{Seed: 8778}, bug: "assigner-still-itself", test: "TestLatencyWorldsPass", inv: "L1"},
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
