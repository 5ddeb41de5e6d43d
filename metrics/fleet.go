package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardlease/shardlease/engine"
)

// fleet is the fleet's state as the assigner's table scans show it: which
// leases have an acting owner, which wait for an assignment or for their
// receiver, which are being handed over. Only the worker that holds the
// assigner row scans the whole table (the others read the rows that wait
// for them), so only that worker exports it; the series are absent on the
// others, and with engine.AssignmentScan (no assigner) on every worker.
type fleet struct {
	lease  time.Duration // how long a lease lasts
	margin time.Duration // how long before its expiry a holder stops acting
	now    func() time.Time

	mu        sync.Mutex
	assigner  bool                 // this worker holds the assigner row
	scanned   time.Time            // when the latest consistent scan answered
	cur, prev fleetState           // as of the latest scan, and the one before
	rows      map[string]*fleetRow // by lease key, from the latest scan
	infoName  string               // the assigner's owner id (this worker)
	previous  string               // the owner whose expired assigner row this worker took over
	// expired counts the leases this worker, the assigner, reassigned
	// because they expired since its latest scan: they were without an
	// acting owner from their expiry to their take, which may fall
	// between two scans, and the next scan counts them
	expired map[string]bool

	info, leases, withoutOwner, gap, awaiting, assigned, handoffs, scanAge *prometheus.Desc
}

// fleetRow is what the scans showed of one lease.
type fleetRow struct {
	row engine.Lease
	// changed is when a scan first showed the row's current version;
	// lastLive when a scan last showed a new version of it under an owner
	// (a renewal, a take): the owner's last sign of life. Zero: never.
	changed, lastLive time.Time
	// firstSeen is when a scan first showed the row at all.
	firstSeen time.Time
	// holder is the Lease.Writer of the owner's latest version seen.
	holder string
	// orphan: the first scan of this assigner showed the row held by the
	// previous assigner, whose row had expired: by the lease rules that
	// worker stopped acting on its leases when its row expired in its own
	// view (the engine reassigns them at once). Until the row changes.
	orphan bool
}

func newFleet(cl prometheus.Labels, lease, margin time.Duration, now func() time.Time) *fleet {
	f := &fleet{lease: lease, margin: margin, now: now, rows: map[string]*fleetRow{}}
	const who = " Exported only by the worker that holds the assigner row, from its latest strongly consistent scan of the table (absent elsewhere)."
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help+who, labels, cl)
	}
	f.info = d("shardlease_assigner_info", "1 on the worker that holds the assigner row (the elected worker that hands leases out); the label assigner names it.", "assigner")
	f.leases = d("shardlease_fleet_leases", "Leases of the table that are not finished (SHARD_END excluded).")
	f.withoutOwner = d("shardlease_fleet_shards_without_owner",
		"Unfinished leases without an acting owner at the latest scan or the one before (so that a gap one scan saw outlives one scrape): unowned (awaiting assignment, or assigned and not yet taken), or owned by a worker whose row has stood still for the lease duration less the safety margin (by the lease rules it has stopped acting), or by the previous assigner, whose row had expired; and leases the assigner reassigned since the scan before because they expired, whose gap may have fallen between two scans.")
	f.gap = d("shardlease_fleet_ownership_gap_seconds",
		"The longest ownership gap at the latest scan or the one before: how long the lease without an acting owner the longest had been so, from its owner's last renewal, take or release the scans showed (from when a scan first showed the lease if none did); 0 when every lease had an acting owner at both.")
	f.awaiting = d("shardlease_fleet_leases_awaiting_assignment", "Unowned leases no worker is assigned to yet (a new shard, a lease released at shutdown).")
	f.assigned = d("shardlease_fleet_leases_assigned_untaken", "Unowned leases assigned to a worker that has not taken them yet.")
	f.handoffs = d("shardlease_fleet_handoffs_in_flight", "Leases whose holder is asked to hand them over to another worker (a cooperative handoff: balance, scale-in) and has not released them yet.")
	f.scanAge = d("shardlease_fleet_scan_age_seconds", "Seconds since the latest strongly consistent scan of the table answered; the fleet series describe the fleet as of then.")
	return f
}

// setAssigner records whether this worker holds the assigner row, and
// whose expired row it took over (previous). A worker that loses it
// forgets what its scans showed.
func (f *fleet) setAssigner(on bool, owner, previous string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.assigner, f.infoName = on, owner
	f.previous = ""
	if previous != owner {
		f.previous = previous
	}
	if !on {
		clear(f.rows)
		f.scanned, f.cur, f.prev = time.Time{}, fleetState{}, fleetState{}
	}
}

// observe takes in a strongly consistent scan that answered at.
func (f *fleet) observe(l engine.Listing, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.assigner {
		return
	}
	seen := make(map[string]bool, len(l.Leases))
	for _, row := range l.Leases {
		if engine.IsReserved(row.Key) {
			continue
		}
		seen[row.Key] = true
		r := f.rows[row.Key]
		if r == nil {
			r = &fleetRow{row: row, changed: at, firstSeen: at}
			if row.Owner != "" {
				r.holder = row.Writer
				r.orphan = f.scanned.IsZero() && row.Owner == f.previous
			}
			f.rows[row.Key] = r
			continue
		}
		old := r.row
		if row.Counter != old.Counter || row.Owner != old.Owner {
			r.orphan = false
		}
		switch {
		case row.Counter == old.Counter && row.Owner == old.Owner:
		case row.Owner != "" && row.Owner == old.Owner && row.HandoffTo != old.HandoffTo && row.Writer != r.holder:
			// the assigner asked the holder to hand the lease over (or
			// cancelled that): a write of the assigner's, not a renewal,
			// so the lease is timed from the version it replaced, as the
			// assigner times it
		case row.Owner != "":
			r.changed, r.lastLive, r.holder = at, at, row.Writer
		case old.Owner != "" && row.Writer != "" && row.Writer == r.holder:
			// released by its holder: its last act
			r.changed, r.lastLive = at, at
		default:
			// assigned (by the assigner), or changed while unowned
			r.changed = at
		}
		r.row = row
	}
	for k := range f.rows {
		if !seen[k] {
			delete(f.rows, k)
		}
	}
	f.scanned = at
	f.prev, f.cur = f.cur, f.state(at)
	if n := len(f.expired); n > f.cur.withoutOwner {
		f.cur.withoutOwner = n
	}
	clear(f.expired)
}

// expiredMove records that this worker, the assigner, reassigned the lease
// key because it had expired (see fleet.expired).
func (f *fleet) expiredMove(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.assigner {
		return
	}
	if f.expired == nil {
		f.expired = make(map[string]bool)
	}
	f.expired[key] = true
}

// Describe implements prometheus.Collector.
func (f *fleet) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{f.info, f.leases, f.withoutOwner, f.gap, f.awaiting, f.assigned, f.handoffs, f.scanAge} {
		ch <- d
	}
}

// fleetState is the fleet as of one scan.
type fleetState struct {
	leases, withoutOwner, awaiting, assigned, handoffs int
	gap                                                time.Duration
}

// state evaluates the rows as of the scan at.
func (f *fleet) state(at time.Time) fleetState {
	var s fleetState
	for _, r := range f.rows {
		row := r.row
		if row.Checkpoint.IsShardEnd() {
			continue
		}
		s.leases++
		if row.HandoffTo != "" && row.Owner != "" {
			s.handoffs++
		}
		owned := row.Owner != ""
		if !owned {
			if row.Pending == "" || row.Pending == engine.AssignerPending {
				s.awaiting++
			} else {
				s.assigned++
			}
		}
		if owned && !r.orphan && at.Sub(r.changed) < f.lease-f.margin {
			continue // an acting owner
		}
		s.withoutOwner++
		since := r.lastLive
		if since.IsZero() {
			since = r.firstSeen
		}
		s.gap = max(s.gap, at.Sub(since))
	}
	return s
}

// Collect implements prometheus.Collector: nothing unless this worker
// holds the assigner row.
func (f *fleet) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.assigner {
		return
	}
	ch <- prometheus.MustNewConstMetric(f.info, prometheus.GaugeValue, 1, f.infoName)
	if f.scanned.IsZero() {
		return
	}
	s := f.cur
	s.withoutOwner = max(s.withoutOwner, f.prev.withoutOwner)
	s.gap = max(s.gap, f.prev.gap)
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	g(f.leases, float64(s.leases))
	g(f.withoutOwner, float64(s.withoutOwner))
	g(f.gap, s.gap.Seconds())
	g(f.awaiting, float64(s.awaiting))
	g(f.assigned, float64(s.assigned))
	g(f.handoffs, float64(s.handoffs))
	g(f.scanAge, f.now().Sub(f.scanned).Seconds())
}
