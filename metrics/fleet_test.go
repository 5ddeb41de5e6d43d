package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// scanStore answers every scan with rows, and the pending index with
// pending.
type scanStore struct {
	engine.LeaseStore
	rows    []engine.Lease
	pending []engine.Lease
	err     error
}

func (s *scanStore) ListLeases(context.Context, bool) (engine.Listing, error) {
	return engine.Listing{Leases: s.rows}, s.err
}

func (s *scanStore) ListPending(context.Context, string) ([]engine.Lease, error) {
	return s.pending, nil
}

func (s *scanStore) UpdateLease(context.Context, engine.Expect, engine.Lease) error { return s.err }

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestMetrics(t *testing.T, owner string) (*Metrics, *clock) {
	t.Helper()
	m, err := New(Options{Owner: owner, LeaseDuration: 10 * time.Second, SafetyMargin: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Unix(1000, 0)}
	m.now = c.now
	return m, c
}

func lease(key, owner string, counter int64, writer string) engine.Lease {
	return engine.Lease{Key: key, Owner: owner, Counter: counter, Writer: writer, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
}

func fleetLines(t *testing.T, m *Metrics) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(scrape(t, m), "\n") {
		if strings.HasPrefix(l, "shardlease_fleet_") || strings.HasPrefix(l, "shardlease_assigner_info") {
			name, v, _ := strings.Cut(l, " ")
			name, _, _ = strings.Cut(name, "{")
			out[name] = v
		}
	}
	return out
}

func wantFleet(t *testing.T, m *Metrics, when string, want map[string]string) {
	t.Helper()
	got := fleetLines(t, m)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q (all: %v)", when, k, got[k], v, got)
		}
	}
	if len(want) == 0 && len(got) > 0 {
		t.Errorf("%s: fleet series exported: %v", when, got)
	}
}

// TestFleetFromTheAssignersScans follows the fleet through the scans of
// the worker that holds the assigner row: states, the gap's start (a
// renewal, a release, first sight; not the assigner's handoff request),
// and nothing exported by a worker that does not hold the row.
func TestFleetFromTheAssignersScans(t *testing.T) {
	m, c := newTestMetrics(t, "asg")
	ss := &scanStore{LeaseStore: engine.NewMemStore()}
	st := m.Store(ss)
	tr := m.Tracer(nil)
	ctx := context.Background()
	scan := func() {
		t.Helper()
		if _, err := st.ListLeases(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	ended := lease("e", "", 9, "")
	ended.Checkpoint = engine.SentinelCheckpoint(engine.ShardEnd)
	assigned := lease("c", "", 3, "asg")
	assigned.Pending = "w2"
	handoff := lease("d", "w1", 5, "asg")
	handoff.HandoffTo, handoff.Pending = "w3", "w1"
	ss.rows = []engine.Lease{lease("a", "w1", 1, "p1"), lease("b", "", 1, ""), assigned, handoff, ended,
		{Key: engine.AssignerKey, Owner: "asg", Counter: 7}}

	scan()
	wantFleet(t, m, "not the assigner", nil)

	tr(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: engine.AssignerKey, Reason: "assigner"})
	wantLines(t, scrape(t, m), `shardlease_assigner_info{assigner="asg",owner="asg"} 1`, `shardlease_leases_held{owner="asg"} 0`)
	scan()
	wantFleet(t, m, "first scan", map[string]string{"shardlease_fleet_leases": "4", "shardlease_fleet_leases_awaiting_assignment": "1",
		"shardlease_fleet_leases_assigned_untaken": "1", "shardlease_fleet_handoffs_in_flight": "1",
		"shardlease_fleet_shards_without_owner": "2", "shardlease_fleet_ownership_gap_seconds": "0", "shardlease_fleet_scan_age_seconds": "0"})

	c.advance(5 * time.Second)             // t0+5
	ss.rows[0] = lease("a", "w1", 2, "p1") // renewed
	scan()
	c.advance(2 * time.Second) // the view is the scan's: it does not age between scans
	wantFleet(t, m, "5 s later", map[string]string{"shardlease_fleet_shards_without_owner": "2", "shardlease_fleet_ownership_gap_seconds": "5",
		"shardlease_fleet_scan_age_seconds": "2"})

	c.advance(3 * time.Second) // t0+10: d has stood still for 10 s (past the lease less the margin, 9 s)
	ss.rows[0] = lease("a", "w1", 3, "p1")
	scan()
	wantFleet(t, m, "d stood still", map[string]string{"shardlease_fleet_shards_without_owner": "3", "shardlease_fleet_ownership_gap_seconds": "10"})

	// t0+15: b and c are taken; a gets a handoff request from the
	// assigner, which renews nothing. Without an owner now: d alone, but
	// the scan before had three: the series show the larger.
	c.advance(5 * time.Second)
	ss.rows[1], ss.rows[2] = lease("b", "w2", 2, "p2"), lease("c", "w2", 4, "p2")
	req := lease("a", "w1", 4, "asg")
	req.HandoffTo, req.Pending = "w2", "w1"
	ss.rows[0] = req
	scan()
	wantFleet(t, m, "b and c taken", map[string]string{"shardlease_fleet_shards_without_owner": "3", "shardlease_fleet_handoffs_in_flight": "2",
		"shardlease_fleet_leases_awaiting_assignment": "0", "shardlease_fleet_leases_assigned_untaken": "0", "shardlease_fleet_ownership_gap_seconds": "15"})
	// t0+19.5: a, last renewed at t0+10 (the request was no renewal), has
	// stood still for 9.5 s: a and d without an owner
	c.advance(4500 * time.Millisecond)
	ss.rows[1], ss.rows[2] = lease("b", "w2", 3, "p2"), lease("c", "w2", 5, "p2")
	scan()
	wantFleet(t, m, "a stood still after the request", map[string]string{"shardlease_fleet_shards_without_owner": "2", "shardlease_fleet_ownership_gap_seconds": "19.5"})

	// t0+20: a is released by its holder (to w2): its gap starts at the
	// release; d is taken by w3
	c.advance(500 * time.Millisecond)
	rel := lease("a", "", 5, "p1")
	rel.Pending, rel.HandoffTo = "w2", "w2"
	ss.rows[0], ss.rows[3] = rel, lease("d", "w3", 6, "p3")
	scan()
	c.advance(time.Second) // t0+21
	ss.rows[1], ss.rows[2] = lease("b", "w2", 4, "p2"), lease("c", "w2", 6, "p2")
	scan()
	wantFleet(t, m, "a released", map[string]string{"shardlease_fleet_shards_without_owner": "1", "shardlease_fleet_ownership_gap_seconds": "1",
		"shardlease_fleet_leases_assigned_untaken": "1", "shardlease_fleet_handoffs_in_flight": "0"})

	// a failed scan changes nothing; the scan's age grows
	ss.err = fmt.Errorf("scan: %w", engine.ErrThrottled)
	c.advance(3 * time.Second)
	_, _ = st.ListLeases(ctx, true)
	wantFleet(t, m, "failed scan", map[string]string{"shardlease_fleet_ownership_gap_seconds": "1", "shardlease_fleet_scan_age_seconds": "3"})
	ss.err = nil

	tr(engine.TraceEvent{Kind: engine.TraceLeaseLost, Key: engine.AssignerKey, Reason: "expired"})
	wantFleet(t, m, "the row lost", nil)
	scan()
	wantFleet(t, m, "a scan after the row was lost", nil)
}

// TestAcquireLatency: from the read of an assignment (or the take sent)
// to the first delivery, or to the first read that found no records; a
// lease lost before its first read is not timed.
func TestAcquireLatency(t *testing.T) {
	m, c := newTestMetrics(t, "w2")
	ss := &scanStore{LeaseStore: engine.NewMemStore()}
	st := m.Store(ss).(engine.PendingIndex)
	sm := m.Stream(pagedStream{})
	tr := m.Tracer(nil)
	ctx := context.Background()
	refA, refB, refC := engine.ShardRef{Stream: "s", Shard: "a"}, engine.ShardRef{Stream: "s", Shard: "b"}, engine.ShardRef{Stream: "s", Shard: "c"}

	// a: assigned, read from the index, taken 300 ms later, delivered 200 ms after that
	as := lease("a", "", 3, "asg")
	as.Pending = "w2"
	ss.pending = []engine.Lease{as}
	if _, err := st.ListPending(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	c.advance(300 * time.Millisecond)
	tr(engine.TraceEvent{Kind: engine.TraceCallSent, Key: "a", Counter: 4, Reason: "take"})
	tr(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "a", Shard: refA, Reason: "assigned"})
	c.advance(200 * time.Millisecond)
	tr(engine.TraceEvent{Kind: engine.TraceDelivered, Key: "a", Shard: refA, Count: 3})
	c.advance(time.Second)
	tr(engine.TraceEvent{Kind: engine.TraceDelivered, Key: "a", Shard: refA, Count: 3}) // not a first delivery

	// b: taken by this worker (expired in its view), its shard idle: an empty page ends it after 2 s
	tr(engine.TraceEvent{Kind: engine.TraceCallSent, Key: "b", Counter: 2, Reason: "take"})
	tr(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "b", Shard: refB, Reason: "expired"})
	it, err := sm.GetShardIterator(ctx, "s", "b", engine.Position{Type: engine.IterLatest})
	if err != nil {
		t.Fatal(err)
	}
	c.advance(2 * time.Second)
	if _, err := sm.GetRecords(ctx, it, 10); err != nil {
		t.Fatal(err)
	}

	// c: taken, lost before any read
	tr(engine.TraceEvent{Kind: engine.TraceCallSent, Key: "c", Counter: 2, Reason: "take"})
	tr(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "c", Shard: refC, Reason: "unowned"})
	tr(engine.TraceEvent{Kind: engine.TraceLeaseLost, Key: "c", Reason: "condition failed"})
	tr(engine.TraceEvent{Kind: engine.TraceDelivered, Key: "c", Shard: refC})

	wantLines(t, scrape(t, m),
		`shardlease_lease_acquire_duration_seconds_sum{owner="w2",reason="assigned"} 0.5`,
		`shardlease_lease_acquire_duration_seconds_count{owner="w2",reason="assigned"} 1`,
		`shardlease_lease_acquire_duration_seconds_bucket{owner="w2",reason="assigned",le="0.25"} 0`,
		`shardlease_lease_acquire_duration_seconds_bucket{owner="w2",reason="assigned",le="0.5"} 1`,
		`shardlease_lease_acquire_duration_seconds_sum{owner="w2",reason="expired"} 2`,
		`shardlease_lease_acquire_duration_seconds_count{owner="w2",reason="expired"} 1`,
		`shardlease_millis_behind_latest{owner="w2",shard="b",stream="s"} 42`,
		`shardlease_leases_held{owner="w2"} 2`,
	)
	if strings.Contains(scrape(t, m), `shardlease_lease_acquire_duration_seconds_count{owner="w2",reason="unowned"}`) {
		t.Error("a lease lost before its first read was timed")
	}
}

// pagedStream answers GetRecords with an empty page 42 ms behind.
type pagedStream struct{ fakeStream }

func (pagedStream) GetRecords(context.Context, string, int) (engine.RecordsPage, error) {
	return engine.RecordsPage{NextIterator: "next", MillisBehind: 42}, nil
}

// TestRenewFailures: a renewal that fails is counted by outcome; the
// renewals of any outcome are the renew histogram's count.
func TestRenewFailures(t *testing.T) {
	m, _ := newTestMetrics(t, "w1")
	ss := &scanStore{LeaseStore: engine.NewMemStore()}
	st := m.Store(ss)
	tr := m.Tracer(nil)
	ctx := context.Background()
	row := lease("a", "w1", 1, "p1")
	next := lease("a", "w1", 2, "p1")
	for i, err := range []error{nil, fmt.Errorf("x: %w", engine.ErrThrottled), nil, context.DeadlineExceeded} {
		ss.err = err
		tr(engine.TraceEvent{Kind: engine.TraceCallSent, Key: "a", Counter: next.Counter, Reason: "renew"})
		if got := st.UpdateLease(ctx, engine.ExpectOf(row), next); (got == nil) != (err == nil) {
			t.Fatalf("call %d: %v", i, got)
		}
	}
	wantLines(t, scrape(t, m),
		`shardlease_renew_duration_seconds_count{owner="w1"} 4`,
		`shardlease_renew_failures_total{outcome="throttled",owner="w1"} 1`,
		`shardlease_renew_failures_total{outcome="timeout",owner="w1"} 1`,
		`shardlease_renew_failures_total{outcome="condition-failed",owner="w1"} 0`,
	)
}

// TestFleetAfterAnAssignerTakeover: the leases of the previous assigner,
// whose expired row this worker took over, have no acting owner from the
// first scan on (their holder stopped acting when its row expired); those
// of others are timed from first sight.
func TestFleetAfterAnAssignerTakeover(t *testing.T) {
	m, c := newTestMetrics(t, "w2")
	ss := &scanStore{LeaseStore: engine.NewMemStore()}
	st := m.Store(ss)
	ss.rows = []engine.Lease{lease("a", "w1", 4, "p1"), lease("b", "w3", 2, "p3")}
	m.Tracer(nil)(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: engine.AssignerKey, Reason: "assigner", Previous: "w1"})
	if _, err := st.ListLeases(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	wantFleet(t, m, "first scan", map[string]string{"shardlease_fleet_shards_without_owner": "1"})
	c.advance(time.Second)
	ss.rows[0] = lease("a", "w3", 5, "p3") // reassigned and taken
	if _, err := st.ListLeases(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	wantFleet(t, m, "taken: the scan before still counts", map[string]string{"shardlease_fleet_shards_without_owner": "1"})
	c.advance(time.Second)
	if _, err := st.ListLeases(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	wantFleet(t, m, "taken", map[string]string{"shardlease_fleet_shards_without_owner": "0", "shardlease_fleet_ownership_gap_seconds": "0"})
}

// A lease the assigner reassigns because it expired, between two of its
// scans, was without an acting owner from its expiry to its take: the
// next scan counts it (and, as ever, the one after), though neither scan
// saw the row expired (the live chaos test: the assigner hands a killed
// worker's leases out at their expiry, and the new owner takes them before
// the next scan).
func TestFleetCountsExpiredMovesBetweenScans(t *testing.T) {
	m, c := newTestMetrics(t, "w2")
	ss := &scanStore{LeaseStore: engine.NewMemStore()}
	st := m.Store(ss)
	tr := m.Tracer(nil)
	scan := func() {
		t.Helper()
		if _, err := st.ListLeases(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	ss.rows = []engine.Lease{lease("a", "w1", 4, "p1"), lease("b", "w3", 2, "p3")}
	// not the assigner: nothing counted
	tr(engine.TraceEvent{Kind: engine.TraceAssigned, Key: "a", Reason: "to w3: expired"})
	tr(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: engine.AssignerKey, Reason: "assigner"})
	scan()
	wantFleet(t, m, "first scan", map[string]string{"shardlease_fleet_shards_without_owner": "0"})
	c.advance(time.Second)
	tr(engine.TraceEvent{Kind: engine.TraceAssigned, Key: "a", Reason: "to w3: expired"})
	tr(engine.TraceEvent{Kind: engine.TraceAssigned, Key: "b", Reason: "to w1: balance"})
	ss.rows[0] = lease("a", "w3", 5, "p3") // taken before the next scan
	scan()
	wantFleet(t, m, "reassigned for expiry since the last scan", map[string]string{"shardlease_fleet_shards_without_owner": "1"})
	c.advance(time.Second)
	scan()
	wantFleet(t, m, "the scan before still counts", map[string]string{"shardlease_fleet_shards_without_owner": "1"})
	c.advance(time.Second)
	scan()
	wantFleet(t, m, "gone", map[string]string{"shardlease_fleet_shards_without_owner": "0"})
}
