package engine

import (
	"slices"
	"time"
)

// syncState is the shard sync: ListShards of every stream plus a strongly
// consistent scan, then lease creation for new shards and deletion of
// finished leases whose children have all started.
type syncState struct {
	next    time.Duration
	sentAt  time.Duration
	round   uint64
	waiting int
	failed  bool
	scanned bool
	scans   uint64
	shards  map[string][]Shard // the latest listing of each stream whose identity was confirmed
	// listedAt: when the round that made each stream's latest listing
	// began (0: the start-up listing)
	listedAt map[string]time.Duration
	listing  map[string][]Shard // this round's listings, committed to shards once confirmed
	fresh    map[string]bool    // streams listed in this round
	checked  map[string]bool    // streams whose identity this round confirmed
	rows     map[string]Lease   // this round's consistent scan, by key
	asked    bool               // soon was called (a worker that does not sync periodically syncs then)
}

func (s *syncState) inFlight() bool { return s.waiting > 0 }

// listed records a listing of stream.
func (s *syncState) listed(stream string, shards []Shard) {
	if s.shards == nil {
		s.shards = make(map[string][]Shard)
		s.listing = make(map[string][]Shard)
		s.fresh = make(map[string]bool)
		s.checked = make(map[string]bool)
	}
	s.shards[stream] = shards
}

// soon asks for a sync within a short time.
func (s *syncState) soon(now time.Duration) {
	s.asked = true
	if s.next > now+200*time.Millisecond {
		s.next = now + 200*time.Millisecond
	}
}

// BackupSyncFactor is how many times less often a worker that is not the
// sync leader runs the periodic shard sync (see Config.ShardSyncInterval).
const BackupSyncFactor = 6

// syncInterval returns the time until this worker's next periodic shard
// sync. Shard sync is conditional and idempotent, so any number of workers
// may run it, and one suffices: the sync leader, the worker with the
// smallest owner id among the owners of the rows it last listed (or any
// worker that saw no smaller owner, e.g. at start), syncs every
// ShardSyncInterval; the others every BackupSyncFactor times that, in case
// the leader cannot. Periodic syncs then read the table O(shards) rather
// than O(workers x shards) times per interval. Syncs that an event asks
// for (a shard ended, a listing lacks its children) run at once on any
// worker.
func (w *Worker) syncInterval() time.Duration {
	if w.syncLeader || w.asg.as != nil {
		return w.cfg.ShardSyncInterval
	}
	return BackupSyncFactor * w.cfg.ShardSyncInterval
}

func (w *Worker) startSync() {
	s := &w.sync
	s.next = w.now.Mono + w.jitter(w.syncInterval())
	s.sentAt = w.now.Mono
	s.round++
	s.failed = false
	s.scanned = false
	if s.shards == nil {
		s.listed("", nil)
		delete(s.shards, "")
	}
	for _, sc := range w.cfg.Streams {
		s.fresh[sc.Name] = false
		s.checked[sc.Name] = false
	}
	// The consistent scan first, the listings after its reply: a listing
	// never older than the scan is what keeps a finished parent from
	// being re-created (see syncStream).
	s.waiting = 1
	w.call(Call{Op: OpListLeases, Consistent: !w.bug("sync-from-eventual-scan")}, pendingCall{purpose: forSyncScan, gen: s.round})
}

func (w *Worker) onSyncShards(stream string, r *Result) {
	s := &w.sync
	s.waiting--
	if r.Err != nil {
		s.failed = true
	} else {
		// Not used until this round's DescribeStream confirms that the
		// stream is still the one the worker started on: a listing of a
		// re-created stream would make every row of the old one look gone.
		s.listing[stream] = r.Shards
		s.fresh[stream] = true
	}
	if s.waiting == 0 {
		w.finishSync()
	}
}

func (w *Worker) onSyncScan(r *Result) {
	s := &w.sync
	s.waiting--
	if r.Err != nil {
		s.failed = true
		w.finishSync()
		return
	}
	s.scanned = true
	// The round decides from this snapshot alone: take scans in between
	// may be eventually consistent, row by row.
	s.rows = rowsByKey(r.Listing.Leases)
	// A consistent scan is as good as a take scan.
	if w.asg.on {
		w.nextScan = w.now.Mono + w.jitter(w.cfg.AssignerScanInterval)
	} else {
		w.nextScan = w.now.Mono + w.jitter(w.cfg.TakeInterval)
	}
	w.onTable(w.observeListing(r.Listing))
	for _, sc := range w.cfg.Streams {
		s.waiting += 2
		w.call(Call{Op: OpListShards, Stream: sc.Name}, pendingCall{purpose: forSyncShards, key: sc.Name, gen: s.round})
		// Every round confirms the stream's identity: a stream deleted and
		// re-created under its name must not get rows, or lose them, on
		// the strength of the old one's.
		w.call(Call{Op: OpDescribeStream, Stream: sc.Name}, pendingCall{purpose: forSyncDescribe, key: sc.Name, gen: s.round})
	}
	if s.waiting == 0 {
		w.finishSync()
	}
}

func (w *Worker) onSyncDescribe(stream string, r *Result) {
	s := &w.sync
	s.waiting--
	switch {
	case r.Err != nil:
		// A stream that is gone (or unreachable) now: nothing to decide
		// this round; keep trying.
		s.failed = true
	case r.Stream.Identity() != w.identity(stream):
		was := w.identity(stream)
		w.fail(&StreamMismatchError{Stream: stream, Want: DescribeIdentity(r.Stream.Identity()), Found: DescribeIdentity(was), Recreated: true})
		return
	default:
		s.checked[stream] = true
	}
	if s.waiting == 0 {
		w.finishSync()
	}
}

func rowsByKey(rows []Lease) map[string]Lease {
	m := make(map[string]Lease, len(rows))
	for _, l := range rows {
		m[l.Key] = l
	}
	return m
}

func (w *Worker) finishSync() {
	s := &w.sync
	if s.failed {
		s.next = min(s.next, w.now.Mono+w.jitter(w.cfg.ShardSyncInterval/4))
	}
	if !s.scanned || w.shutdown || w.stopped {
		return
	}
	if age := w.now.Mono - s.sentAt; age > maxSyncAge(w.cfg) && !w.bug("sync-never-abandons") {
		// The round's scan and listings are too old to decide from: the
		// worker was paused (or its replies were held) after it sent
		// them, and meanwhile a shard may have been created, finished and
		// its row deleted (see deleteGrace). Decide from a fresh round.
		w.emit(TraceEvent{Kind: TraceSyncAbandoned, Reason: "the shard sync's scan was sent " + age.String() + " ago"})
		s.soon(w.now.Mono)
		return
	}
	deferred := false
	for _, sc := range w.cfg.Streams {
		if s.fresh[sc.Name] && s.checked[sc.Name] {
			s.shards[sc.Name] = s.listing[sc.Name]
			if s.listedAt == nil {
				s.listedAt = make(map[string]time.Duration)
			}
			s.listedAt[sc.Name] = s.sentAt
			if w.asg.on && w.asg.as == nil {
				continue // only the assigner creates and deletes rows
			}
			if w.syncStream(&sc) {
				deferred = true
			}
		}
	}
	if deferred {
		s.next = min(s.next, w.now.Mono+w.jitter(w.cfg.RenewInterval/3))
	}
}

// syncStream creates the leases the stream's shards lack and deletes the
// finished ones no longer needed. It reports whether some shard waits for
// its parents' leases to be created first.
//
// The rules, which keep concurrent workers from creating a lease twice or
// re-creating a finished parent:
//   - a shard with a row, or with a descendant that has a row, gets none;
//   - a shard whose parent will get a row in this round waits for the next
//     round, so that a child's row never exists before its parents';
//   - a shard with a parent that has a row starts at TRIM_HORIZON (it is
//     a child of a split or merge: nothing written to it may be skipped);
//   - otherwise the shard existed when the application first started: it
//     gets the stream's initial position, except that a closed shard is
//     skipped under LATEST (its records are all before "latest").
func (w *Worker) syncStream(sc *StreamConfig) (deferred bool) {
	shards := w.sync.shards[sc.Name]
	byID := make(map[string]int, len(shards))
	for i, sh := range shards {
		byID[sh.ID] = i
	}
	children := make(map[string][]string, len(shards))
	for _, sh := range shards {
		for _, p := range sh.ParentIDs() {
			children[p] = append(children[p], sh.ID)
		}
	}
	hasRow := func(id string) bool {
		_, ok := w.sync.rows[w.keys.Key(ShardRef{Stream: sc.Name, Shard: id})]
		return ok
	}
	// covered: the shard or a descendant has a row.
	covered := make(map[string]bool, len(shards))
	var cover func(id string, depth int) bool
	cover = func(id string, depth int) bool {
		if v, ok := covered[id]; ok {
			return v
		}
		v := hasRow(id)
		if !v && depth < 64 && !w.bug("descendant-check-dropped") {
			for _, c := range children[id] {
				if cover(c, depth+1) {
					v = true
					break
				}
			}
		}
		covered[id] = v
		return v
	}
	// state of each shard this round: 0 unknown, 1 has or gets no row
	// (settled), 2 gets a row this round or waits (pending).
	const settled, pending = 1, 2
	state := make(map[string]uint8, len(shards))
	var decide func(sh Shard, depth int) uint8
	decide = func(sh Shard, depth int) uint8 {
		if st := state[sh.ID]; st != 0 {
			return st
		}
		if cover(sh.ID, 0) || depth > 64 {
			state[sh.ID] = settled
			return settled
		}
		parentHasRow := false
		for _, p := range sh.ParentIDs() {
			if hasRow(p) {
				parentHasRow = true
				continue
			}
			if i, ok := byID[p]; ok && decide(shards[i], depth+1) == pending {
				state[sh.ID] = pending
				deferred = true
				return pending
			}
		}
		start := sc.InitialPosition
		if parentHasRow {
			start = TrimHorizon
			if w.bug("child-at-latest") {
				start = Latest
			}
		} else if sh.Closed() && sc.InitialPosition == Latest {
			state[sh.ID] = settled
			return settled
		}
		state[sh.ID] = pending
		w.create(sc.Name, sh, start)
		return pending
	}
	for _, sh := range shards {
		decide(sh, 0)
	}
	w.cleanup(sc, children, byID)
	return deferred
}

func (w *Worker) create(stream string, sh Shard, start string) {
	key := w.keys.Key(ShardRef{Stream: stream, Shard: sh.ID})
	rs := w.rows.intern(key)
	if rs.write != nil {
		return
	}
	parents := sh.ParentIDs()
	slices.Sort(parents)
	row := Lease{
		Key:             key,
		Checkpoint:      SentinelCheckpoint(start),
		Parents:         parents,
		StartingHashKey: sh.StartingHashKey,
		EndingHashKey:   sh.EndingHashKey,
		StreamID:        w.identity(stream),
	}
	wr := &write{kind: wCreate, key: key, row: row}
	w.setWrite(rs, wr)
	w.sendWrite(wr)
}

// maxSyncAge is the oldest a shard sync round's scan may be when the
// round decides: older (the worker paused, its replies held), the round
// is abandoned and a fresh one runs.
func maxSyncAge(c Config) time.Duration { return c.LeaseDuration / 2 }

// deleteGrace is how long a worker must have seen a finished row
// (SHARD_END, same version) before it deletes it. A sync round decides
// from a scan at most maxSyncAge old, and its creates apply within the
// call timeout (at most a lease duration) of being sent, so a create
// decided from a scan that predates a parent's row can only land while the
// row is still there, and fails its condition: a finished parent is never
// re-created, however long a worker was paused. Time is measured on the
// deleting worker's clock, so the margin covers the drift bound.
func deleteGrace(c Config) time.Duration { return 2 * c.LeaseDuration }

// cleanup deletes finished rows (SHARD_END) once every child has a row that
// has started (been taken, or moved past its start) and the row has been
// finished for deleteGrace in this worker's view: from then on no sync can
// mistake the parent for a shard without a lease.
//
// A finished row whose shard has left the stream's listing and has no
// known children (its retention has passed) is deleted too: sync never
// creates a row for a shard it does not list.
//
// Only rows provably of the stream's shards are deleted (see provenOurs):
// a row of another stream that shares the table, or of an earlier stream
// of the same name, is never touched.
func (w *Worker) cleanup(sc *StreamConfig, children map[string][]string, listed map[string]int) {
	var keys []string
	for k, row := range w.sync.rows {
		if ref, ok := w.keys.Parse(k); ok && ref.Stream == sc.Name && row.Checkpoint.IsShardEnd() && w.writeOf(k) == nil && w.holdingOf(k) == nil &&
			w.provenOurs(ref, row) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		row := w.sync.rows[k]
		if o := w.observed(k); o == nil || o.row.Counter != row.Counter || o.row.Owner != row.Owner || w.now.Mono-o.seenAt < deleteGrace(w.cfg) {
			continue // not finished long enough in this worker's view
		}
		ref, _ := w.keys.Parse(k)
		kids := append(slices.Clone(row.Children), children[ref.Shard]...)
		if _, ok := listed[ref.Shard]; len(kids) == 0 && (ok || len(listed) == 0) {
			continue
		}
		started := true
		for _, c := range kids {
			child, ok := w.sync.rows[w.keys.Key(ShardRef{Stream: sc.Name, Shard: c})]
			if (!ok && !w.bug("delete-before-children-started")) || (ok && child.Owner == "" && child.Checkpoint.IsStart()) {
				started = false
				break
			}
		}
		if !started {
			continue
		}
		wr := &write{kind: wDelete, key: k, expect: ExpectOf(row)}
		w.setWrite(w.rows.intern(k), wr)
		w.sendWrite(wr)
	}
}
