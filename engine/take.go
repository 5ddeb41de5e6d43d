package engine

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// observation is what this worker knows of one row of the table.
//
// seenAt is the monotonic time at which this worker first saw the row's
// current version (owner and counter). It survives re-reads of an unchanged
// row and is reset only when the version changes: a lease is expired for
// this worker when its version has stood still for LeaseDuration on this
// worker's own clock. No timestamp written by another worker is ever used.
type observation struct {
	row    Lease
	seenAt time.Duration
	// seenWall is the wall reading at seenAt, kept only by the planted
	// bug expiry-by-wall-clock
	seenWall time.Time
	ref      ShardRef
	ok       bool // the key names a shard of a consumed stream
	scan     uint64
	// identSince is when this worker first saw the row with its current
	// Owner and Writer: for a session row, since when another process
	// (or none) holds it; prevWriter, prevCounter and prevSince are the
	// Writer and Counter of the last version it saw before that, and when
	// it first saw it (see stillSince)
	identSince  time.Duration
	prevWriter  string
	prevCounter int64
	prevSince   time.Duration
	// consistent: this version was shown by a strongly consistent read
	// (a session row's fence read, see fenceRead)
	consistent bool
	// firstSeen is when this worker first saw the row (any version): a
	// version first seen then shows nothing of its writer's life now, only
	// that it was written once (see showsLife)
	firstSeen time.Duration
}

// showsLife reports whether o shows its owner alive as of o.seenAt: the
// row's version changed within a lease duration of now in this worker's
// view. A version first seen at this worker's first sight of the row is
// no sign of life: a new assigner process (a restart, or a worker that
// took the row over without having scanned before) first sees every row
// at its first scan, the rows of owners long dead too (soak seed 163 of
// d8f57de with -renewal session, T3: a restarted assigner listed three
// dead owner ids as members, two of them its deputies, and the live
// deputies it had inherited read the row at a non-deputy's pace).
func (w *Worker) showsLife(o *observation) bool {
	return w.now.Mono-o.seenAt < w.cfg.LeaseDuration && (o.seenAt > o.firstSeen || w.bug("first-sight-shows-life"))
}

func (w *Worker) refOf(key string) ShardRef {
	if rs := w.rows.get(key); rs != nil {
		return rs.ref
	}
	ref, _ := w.keys.Parse(key)
	return ref
}

// refOfRow is refOf of rs's key (rs nil: the zero ShardRef).
func (w *Worker) refOfRow(rs *rowState) ShardRef {
	if rs == nil {
		return ShardRef{}
	}
	return rs.ref
}

// observed returns what this worker observed of key's row, nil if
// nothing.
func (w *Worker) observed(key string) *observation {
	if rs := w.rows.get(key); rs != nil && rs.observed {
		return &rs.obs
	}
	return nil
}

// forget drops what this worker observed of key's row.
func (w *Worker) forget(key string) {
	if rs := w.rows.get(key); rs != nil {
		w.forgetRow(rs)
	}
}

func (w *Worker) forgetRow(rs *rowState) {
	rs.observed = false
	rs.obs = observation{}
	if rs.key == AssignerKey {
		w.asgObs = nil
	}
	w.rows.tidy(rs)
}

// observeRow records row as seen now. Rows older than the one already seen
// (a stale read) are ignored.
func (w *Worker) observeRow(row Lease) *observation {
	return w.observe(w.rows.intern(row.Key), row)
}

// observe is observeRow of rs, row.Key's row.
func (w *Worker) observe(rs *rowState, row Lease) *observation {
	o := &rs.obs
	if !rs.observed {
		rs.observed = true
		*o = observation{row: row, seenAt: w.now.Mono, ref: rs.ref, ok: rs.ok, identSince: w.now.Mono, firstSeen: w.now.Mono}
		if w.bug("expiry-by-wall-clock") {
			o.seenWall = w.wallClock("a lease version observed")
		}
		if row.Key == AssignerKey {
			w.asgObs = o
		}
		return o
	}
	switch {
	case row.Counter < o.row.Counter:
		// stale
	case row.Counter != o.row.Counter || row.Owner != o.row.Owner:
		if row.Owner != o.row.Owner || row.Writer != o.row.Writer {
			o.prevWriter, o.prevCounter, o.prevSince = o.row.Writer, o.row.Counter, o.seenAt
			o.identSince = w.now.Mono
		}
		o.row = row
		o.seenAt = w.now.Mono
		o.consistent = false
		if w.bug("expiry-by-wall-clock") {
			o.seenWall = w.wallClock("a lease version observed")
		}
	default:
		o.row = row
		if w.bug("observation-reset-on-reread") {
			o.seenAt = w.now.Mono // KCL issue #1803
		}
	}
	return o
}

func (w *Worker) startScan() {
	interval, consistent := w.cfg.TakeInterval, w.cfg.ConsistentTakeScans
	if w.asg.as != nil && w.sessionMode() {
		// the start-up scans of an assigner in session renewal (again and
		// again while its session check waits, sessionChecked) are the
		// assigner's scans: strongly consistent, at its pace, so that its
		// sightings of the fleet's session rows stay fresh (swarm seed
		// 2648 with -renewal session: eventual scans every TakeInterval)
		interval, consistent = w.cfg.AssignerScanInterval, true
	}
	w.scanInFlight = true
	w.scanSentAt = w.now.Mono
	w.nextScan = w.now.Mono + w.jitter(interval)
	w.call(Call{Op: OpListLeases, Consistent: consistent}, pendingCall{purpose: forScan})
}

func (w *Worker) onScan(r *Result) {
	if r.Err != nil {
		// Try again soon; leases held are unaffected. A scan the worker
		// needs before it may take or resume anything (in assigned mode
		// its first, or the check of who else renews in session renewal)
		// is tried again after a short backoff, not a renew interval on:
		// assignments wait for it (swarm seed 6373 with -renewal session,
		// T2: a new worker's first scan failed, and a lease handed to it
		// waited six seconds).
		next := w.jitter(w.cfg.RenewInterval)
		if w.asg.on && (!w.asg.resumed || w.cfg.Renewal == RenewalSession && !w.sess.checked) && !w.bug("startup-scan-retry-slow") {
			w.scanBackoff = w.nextBackoff(w.scanBackoff)
			next = min(next, w.scanBackoff)
		}
		w.nextScan = w.now.Mono + next
		return
	}
	w.scanBackoff = 0
	w.onTable(w.observeListing(r.Listing))
}

// onTable acts on a scan of the table (its rows, in key order): in
// assigned mode the assigner assigns and every worker resumes its own
// rows at start; otherwise the worker takes leases itself.
func (w *Worker) onTable(rows []*rowState) {
	if w.asg.on && !w.sessionChecked(rows) {
		return // a worker in session renewal checks who else renews first
	}
	switch {
	case !w.asg.on:
		w.takeLeases(rows)
	case w.asg.as != nil:
		w.asg.resumed = true
		w.assignFrom(rows)
		w.armSessionPolls()
	case !w.asg.resumed:
		w.resumeOwn(rows)
	}
}

// observeListing records a full scan of the table. It returns the rows of
// the listing, in key order, valid until the next listing.
func (w *Worker) observeListing(l Listing) []*rowState {
	w.sync.scans++
	gen := w.sync.scans
	for _, m := range l.Malformed {
		if w.malformed == nil {
			w.malformed = make(map[string]bool)
		}
		if !w.malformed[m.Key] || w.bug("malformed-reported-every-scan") {
			w.malformed[m.Key] = true
			w.emit(TraceEvent{Kind: TraceMalformedRow, Key: m.Key, Reason: m.Reason})
		}
	}
	if !slices.IsSortedFunc(l.Leases, byKey) {
		slices.SortFunc(l.Leases, byKey)
	}
	wasLeader := w.syncLeader
	w.syncLeader = true
	rows := w.scanRows[:0]
	for i := range l.Leases {
		rs := w.rows.intern(l.Leases[i].Key)
		o := w.observe(rs, l.Leases[i])
		o.scan = gen
		rows = append(rows, rs)
		if own := l.Leases[i].Owner; own != "" && own < w.cfg.Owner {
			w.syncLeader = false
		}
	}
	w.scanRows = rows
	if w.syncLeader && !wasLeader {
		// the backup's next sync may be far: the new leader's is due
		w.sync.next = min(w.sync.next, w.now.Mono+w.jitter(w.cfg.ShardSyncInterval))
	}
	for _, rs := range w.rows.all {
		if rs != nil && rs.observed && rs.obs.scan != gen && rs.write == nil && rs.held == nil {
			w.forgetRow(rs)
		}
	}
	return rows
}

func byKey(a, b Lease) int { return cmp.Compare(a.Key, b.Key) }

// gated reports whether some parent of row has a row that is not finished:
// such a lease waits for its parents.
func (w *Worker) gated(o *observation) bool {
	if w.bug("parents-unchecked") {
		return false
	}
	for _, p := range o.row.Parents {
		po := w.observed(w.keys.Key(ShardRef{Stream: o.ref.Stream, Shard: p}))
		if po != nil && !po.row.Checkpoint.IsShardEnd() {
			return true
		}
	}
	return false
}

type candidate struct {
	row     Lease
	actFrom time.Duration
	reason  string
}

// takeLeases decides, from a sorted scan, which leases to take: its own
// rows (a restart under the same owner id) at once, then unowned and
// expired ones up to the balance target ceil(leases / live workers), then,
// if none is free, at most MaxLeasesToStealAtOnce from the most-loaded
// worker, only while that worker holds at least two more than this one (so
// stealing never oscillates).
func (w *Worker) takeLeases(rows []*rowState) {
	if w.shutdown {
		return
	}
	now := w.now.Mono
	me := w.cfg.Owner
	// the candidates point at their observations: a scan of thousands of
	// rows copies none (a candidate's row is built for the few taken)
	type cand struct {
		o       *observation
		actFrom time.Duration
		reason  string
	}
	takeOne := func(c cand) { w.take(candidate{row: c.o.row, actFrom: c.actFrom, reason: c.reason}) }
	var (
		total, mine  int
		resume, free []cand
		held         []cand // held by others, not expired: what a steal picks from
		counts       = map[string]int{}
		owners       []string
		inflight     int
	)
	for _, rs := range w.writing {
		if rs.write.kind == wTake {
			inflight++
		}
	}
	for _, rs := range rows {
		if !rs.observed {
			continue
		}
		o := &rs.obs
		if !o.ok || o.row.Checkpoint.IsShardEnd() || w.gated(o) {
			continue
		}
		if w.foreign(o) {
			w.reportForeign(o)
			continue
		}
		total++
		if rs.held != nil {
			mine++
			continue
		}
		if rs.write != nil {
			continue
		}
		row := &o.row
		// A row whose owner is gone (released) or is this worker (a restart
		// under the same id) may be acted on at once, unless a handoff is
		// pending on it: then its previous owner may still be acting.
		quiet := now
		if row.HandoffFrom != "" && !w.bug("take-ignores-handoff-from") {
			quiet = o.seenAt + w.cfg.LeaseDuration
		}
		still := w.stillSince(o)
		switch {
		case row.Owner == me:
			resume = append(resume, cand{o: o, actFrom: quiet, reason: "resumed"})
		case row.Owner == "":
			free = append(free, cand{o: o, actFrom: quiet, reason: "unowned"})
		case w.bug("expiry-by-wall-clock") && w.wallClock("lease expiry").Sub(o.seenWall) >= w.cfg.LeaseDuration:
			// the planted bug: how long the version stood still, on the
			// wall clock (a Go port's time.Now().Sub(lastSeen) of
			// stored wall times), and acted on at once
			free = append(free, cand{o: o, actFrom: now, reason: "expired"})
		case now-still >= w.expiryWait() && !w.bug("expiry-by-wall-clock") && w.fencedTake(o):
			if row.Session != "" && !w.bug("scan-taker-skips-session-end") && w.endSessionFirst(o) {
				continue // taken once the end of its session applied (sessionEnded)
			}
			free = append(free, cand{o: o, actFrom: still + w.expiryWait(), reason: "expired"})
		case row.Session != "":
			// bound to a live session: its holder renews nothing on it and
			// would not see a steal; counted, never a candidate (see
			// session.go). One that looks expired but whose session this
			// eventually consistent view cannot show ended has its
			// session row read strongly (fenceRead)
			if now-still >= w.expiryWait() {
				w.fenceRead(row.Owner)
			}
			if counts[row.Owner] == 0 {
				owners = append(owners, row.Owner)
			}
			counts[row.Owner]++
		default:
			if counts[row.Owner] == 0 {
				owners = append(owners, row.Owner)
			}
			counts[row.Owner]++
			held = append(held, cand{o: o, actFrom: o.seenAt + w.cfg.LeaseDuration, reason: "stolen"})
		}
	}
	workers := len(owners) + 1
	target := (total + workers - 1) / workers
	limit := w.cfg.MaxLeasesForWorker
	if limit > 0 && target > limit {
		target = limit
	}
	have := mine + inflight
	for _, c := range resume {
		if limit > 0 && have >= limit {
			break
		}
		takeOne(c)
		have++
	}
	if have >= target {
		return
	}
	if len(free) > 0 {
		w.rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		for _, c := range free {
			if have >= target {
				break
			}
			takeOne(c)
			have++
		}
		return
	}
	if w.cfg.MaxLeasesToStealAtOnce <= 0 || len(owners) == 0 {
		return
	}
	slices.Sort(owners)
	victim := owners[0]
	for _, o := range owners[1:] {
		if counts[o] > counts[victim] {
			victim = o
		}
	}
	n := min(target-have, w.cfg.MaxLeasesToStealAtOnce, (counts[victim]-have)/2)
	if w.bug("steal-from-equal") {
		n = min(target-have, w.cfg.MaxLeasesToStealAtOnce, counts[victim]-have)
	}
	if n <= 0 {
		return
	}
	// the victim's leases, in scan order
	cands := held[:0]
	for _, c := range held {
		if c.o.row.Owner == victim {
			cands = append(cands, c)
		}
	}
	w.rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	// (the victim's session-bound leases count towards its load but are
	// never candidates: there may be fewer candidates than n)
	for _, c := range cands[:min(n, len(cands))] {
		takeOne(c)
	}
}

// fencedTake reports whether a worker that takes leases itself may take
// the expired lease o: any lease renewed per lease (its take is
// conditioned on the version it timed), and a session-bound one whose
// session row it can link to the lease: naming the session (it then ends
// the session first, endSessionFirst), or showing the session's end, its
// takeover or its release (that session renews no more, whatever the
// view's age). With strongly consistent scans, one whose session row has
// moved on otherwise too. An eventually consistent view that cannot link
// a lease to its session row may just be stale (a session row shown from
// before a restart took it over, the lease bound to the new session):
// taken unfenced, its holder would go on acting (swarm seed 7721 with
// -renewal session: S1).
func (w *Worker) fencedTake(o *observation) bool {
	if o.row.Session == "" || w.cfg.ConsistentTakeScans || w.namingSession(o) != nil || w.bug("stale-session-view-taken") {
		return true
	}
	rs := w.rows.get(w.sessionKeyOf(o.row.Owner))
	if rs == nil || !rs.observed {
		return false
	}
	so := &rs.obs.row
	n, _, ok := strings.Cut(so.Session, "@")
	if ok && n == o.row.Session || so.Owner == "" && so.Writer == o.row.Session {
		return true
	}
	// A strongly consistent read shows the row as it is now: a session row
	// that does not name the lease's session as its holder's shows that
	// session superseded, however many holders came between (soak seed
	// 46871 of 01b4227, S4 and L1: leases bound to a session whose row two
	// later processes had taken and ended stood counted for a dead owner,
	// and the scan takers kept to a share that left four shards unowned)
	return rs.obs.consistent && !(so.Owner == o.row.Owner && so.Writer == o.row.Session) && !w.bug("superseded-session-unfenced")
}

// fenceRead reads the session row of owner strongly consistently (once at
// a time), so that fencedTake may tell from it whether a lease bound to an
// older session of owner is free.
func (w *Worker) fenceRead(owner string) {
	if w.cfg.ConsistentTakeScans || w.bug("superseded-session-unfenced") {
		return
	}
	key := w.sessionKeyOf(owner)
	s := &w.sess
	if s.fencing[key] {
		return
	}
	if rs := w.rows.get(key); rs != nil && rs.observed && rs.obs.consistent {
		return // its latest version was read so: nothing newer to learn
	}
	if s.fencing == nil {
		s.fencing = map[string]bool{}
	}
	s.fencing[key] = true
	w.call(Call{Op: OpGetLease, Key: key}, pendingCall{purpose: forSessionFence, key: key})
}

// onSessionFence takes the reply of fenceRead: the version it shows is
// marked as read strongly, and the next scan decides with it.
func (w *Worker) onSessionFence(key string, r *Result) {
	delete(w.sess.fencing, key)
	if r.Err != nil {
		return
	}
	o := w.observeRow(r.Lease)
	if o.row.Counter == r.Lease.Counter && o.row.Writer == r.Lease.Writer {
		o.consistent = true
		w.nextScan = min(w.nextScan, w.now.Mono)
	}
}

// take sends a conditional take of c.row, unless a write of the row is in
// flight or the worker holds it.
func (w *Worker) take(c candidate) {
	rs := w.rows.intern(c.row.Key)
	if rs.write != nil {
		return
	}
	if h := rs.held; h != nil && !h.gone {
		return
	}
	if !IsReserved(c.row.Key) && !w.sessionReady() {
		w.sess.repoll = true
		return // no lease before the session row is held (session.go)
	}
	if w.bug("steal-acts-at-once") {
		c.actFrom = w.now.Mono
	}
	if c.reason == "resumed" && w.bug("resume-waits") {
		c.actFrom = w.now.Mono + w.cfg.LeaseDuration
	}
	row := c.row.Clone()
	prev, prevWriter := row.Owner, row.Writer
	if row.Owner != w.cfg.Owner {
		row.OwnerSwitches++
	}
	row.Owner = w.cfg.Owner
	row.Counter++
	row.Pending, row.HandoffTo = "", ""
	// bound to this worker's session in session mode (unless the planted
	// bug keeps a predecessor's binding), renewed per lease otherwise
	if w.sessionMode() && !IsReserved(row.Key) {
		if row.Session == "" || !w.bug("restart-keeps-session") {
			row.Session = w.writer
		}
	} else {
		row.Session = ""
		if IsSessionRow(row.Key) && c.row.Writer != "" && c.row.Writer != w.writer {
			// a session row taken over: it names the session it follows
			// and that session's last version, the one this take is
			// conditioned on (see stillSince)
			row.Session = followed(c.row)
		}
	}
	if ref := rs.ref; row.StreamID == "" && w.provenOurs(ref, row) {
		// A row from before stream identities (KCL, an earlier
		// shardlease) of a shard the listing shows: it is this stream's,
		// and says so from now on. Rows the listing does not prove stay
		// without one, so that nothing ends them by mistake.
		row.StreamID = w.identity(ref.Stream)
	}
	switch {
	case c.actFrom <= w.now.Mono:
		// Nobody else can be acting: no handoff pending.
		row.HandoffFrom = ""
	case row.HandoffFrom == "":
		row.HandoffFrom = prev
		if prev == "" {
			row.HandoffFrom = w.cfg.Owner
		}
	}
	wr := &write{kind: wTake, key: row.Key, expect: ExpectOf(c.row), row: row, actFrom: c.actFrom, reason: c.reason, previous: prev, prevWriter: prevWriter}
	w.setWrite(rs, wr)
	w.sendWrite(wr)
}

// reportForeign reports, once per key, a row that names another stream
// incarnation than its key's stream: the worker leaves it alone.
func (w *Worker) reportForeign(o *observation) {
	if w.malformed == nil {
		w.malformed = make(map[string]bool)
	}
	if k := "foreign:" + o.row.Key; !w.malformed[k] {
		w.malformed[k] = true
		w.emit(TraceEvent{Kind: TraceForeignRow, Key: o.row.Key, Shard: o.ref,
			Reason: "the row names " + DescribeIdentity(o.row.StreamID) + ", the stream is " + DescribeIdentity(w.identity(o.ref.Stream))})
	}
}
