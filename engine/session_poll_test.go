package engine

import (
	"testing"
	"time"
)

// In session renewal the assigner scans every half lease duration by
// default: it times leases by the session rows it reads in between.
func TestSessionScanIntervalDefault(t *testing.T) {
	cfg := Config{Owner: "w", Streams: []StreamConfig{{Name: "s"}}, Renewal: RenewalSession}
	got, err := cfg.Validate()
	if err != nil || got.AssignerScanInterval != got.LeaseDuration/2 {
		t.Errorf("session renewal: AssignerScanInterval %v, %v; want LeaseDuration/2 = %v", got.AssignerScanInterval, err, got.LeaseDuration/2)
	}
	cfg.Renewal = RenewalPerLease
	if got, _ := cfg.Validate(); got.AssignerScanInterval != got.LeaseDuration/3 {
		t.Errorf("per-lease renewal: AssignerScanInterval %v, want LeaseDuration/3 = %v", got.AssignerScanInterval, got.LeaseDuration/3)
	}
}

// The assigner reads the session row of every worker whose leases it
// times between its scans, every PendingPollInterval, and ends a dead
// worker's session a lease duration after the first of those reads that
// showed its last renewal: within a lease duration and a poll interval of
// that renewal, not a lease duration and a scan interval.
func TestSessionPollsTimeTheLastRenewal(t *testing.T) {
	c := startSessions(t)
	cfg := c.cfg.withDefaults()
	d, poll := cfg.LeaseDuration, cfg.PendingPollInterval
	type read struct {
		by  string
		at  time.Duration
		key string
	}
	var reads, scans []read
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		switch {
		case call.Op == OpGetLease && IsSessionRow(call.Key) && call.Key != SessionKey(tw.id):
			reads = append(reads, read{tw.id, c.now, call.Key})
		case call.Op == OpListLeases && tw.w.IsAssigner():
			scans = append(scans, read{tw.id, c.now, ""})
		}
		return Result{}, false
	}
	c.run(3 * d)
	asg := ""
	for _, id := range []string{"X", "A", "B"} {
		if c.worker(id).w.IsAssigner() {
			asg = id
		}
	}
	if asg == "" || asg == "B" {
		t.Fatalf("assigner %q: want X or A", asg)
	}
	polled := 0
	for _, r := range reads {
		if r.by == asg && r.key == SessionKey("B") {
			polled++
		}
	}
	// three lease durations: six scans, 24 polls (jittered by a tenth)
	if want := int(3*d/poll) * 3 / 4; polled < want || len(scans) > 8 {
		t.Fatalf("in %v the assigner %s read B's session row %d times (want at least %d) and scanned %d times (want at most 8)", 3*d, asg, polled, want, len(scans))
	}
	var lastRenewed time.Duration
	for _, e := range c.traceOf(TraceLeaseRenewed, "B", SessionKey("B")) {
		lastRenewed = e.Mono
	}
	c.worker("B").down = true
	crash := c.now
	c.runUntil(3*d, "B's session ended", func() bool { return c.firstTraceAt(TraceCallSent, SessionKey("B"), crash) < 1<<62 })
	ended := c.firstTraceAt(TraceCallSent, SessionKey("B"), crash)
	if limit := lastRenewed + d + poll + poll/10 + 10*time.Millisecond; ended > limit {
		t.Errorf("B's session (last renewed at %v) ended at %v, after %v: a lease duration and a poll interval", lastRenewed, ended, limit)
	}
}
