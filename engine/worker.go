package engine

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Worker is the decision core of one worker: deterministic, no I/O. Feed it
// inputs with Step; it answers with the effects to carry out (calls to the
// lease store and the stream, notices for record processors) and the time
// at which it wants to be stepped next. Its decisions are a function of its
// configuration, the inputs and the times they carry: it reads no clock,
// starts no goroutine and draws randomness only from Config.Seed.
//
// It is not safe for concurrent use: a driver steps it from one goroutine.
type Worker struct {
	cfg  Config
	keys KeyFormat
	rng  *rand.Rand
	now  Now // the current Step's monotonic reading (Wall is zero: see wall)
	rd   Ready
	// wall is the current Step's wall reading, read through wallClock;
	// wallRead the purpose of the last read in this Step
	wall     time.Time
	wallRead string
	trace    Tracer

	streams map[string]*StreamConfig

	nextID    uint64
	nextBatch uint64
	pending   map[uint64]pendingCall

	// rows is the table as this worker deals with it: per lease key
	// (interned), its observation, holding, write in flight and ghosts
	// (rows.go).
	rows rowTable
	// asgObs is the observation of AssignerKey (nil if none), looked at
	// on every step
	asgObs *observation
	// writer is the Lease.Writer of every row this worker writes; it is
	// drawn anew (writerEpoch) when the worker loses the assigner row.
	writer      string
	writerEpoch uint64
	// syncLeader: no row of the latest listing is owned by an owner id
	// smaller than this worker's (see syncInterval).
	syncLeader bool

	// Leases held (each also its row's rowState.held), sorted by key for
	// deterministic iteration.
	held []*holding
	// asgHeld is the holding of the assigner row (AssignerKey), nil if
	// none
	asgHeld *holding
	// sess is the worker's session row and what it knows of the others'
	// (Config.Renewal: session.go)
	sess sessionState
	// dueq orders held leases by when each next needs the worker;
	// affected is the row the current input concerns (affectedKey its
	// key: see rowTable.current).
	dueq        dueQueue
	affected    *rowState
	affectedKey string
	// retrying counts takes, creates and deletes whose resolving read
	// failed and waits to be sent again.
	retrying int
	// storeFailing: the latest answered store call failed without
	// reaching the table (a timeout, a throttle, a 5xx): see storeReached.
	storeFailing bool
	// writing are the rows with a write in flight that are not held
	// (takes, creates, deletes, assignments, hellos: rowState.write), in
	// no order.
	writing []*rowState
	// spareWrites are applied holder writes kept for reuse (newWrite)
	spareWrites []*write
	// Keys of malformed rows already reported.
	malformed map[string]bool
	// the rows of the listing being acted on (see observeListing), in key
	// order, reused from scan to scan
	scanRows []*rowState

	started      bool
	start        startState
	asg          assignState
	err          error
	shutdown     bool
	down         shutdownReport
	stopped      bool
	scanInFlight bool
	scanSentAt   time.Duration
	nextScan     time.Duration
	scanBackoff  time.Duration // the start-up scan's retry backoff (onScan)
	sync         syncState
	fo           fanOutRegistry // FanOut: the consumers registered
}

// pendingCall remembers what a call in flight was for.
type pendingCall struct {
	purpose purpose
	op      Op
	key     string
	gen     uint64    // the holding's generation, for consumer calls
	rs      *rowState // key's row when the call was made, if key is a lease key
}

type purpose uint8

const (
	forScan purpose = iota + 1
	forWrite
	forResolve
	forParentCheck
	forIterator
	forRecords
	forSyncShards
	forSyncScan
	forSyncDescribe
	forStart
	forPoll
	forConfirm
	forMonitor
	forAssignerPoll
	forAssignerConfirm
	forUntakenRead
	forSession
	forOrphanRead
	forSessionPoll
	forSessionFence
)

// NewWorker returns a worker for cfg, or an error naming every broken
// configuration rule.
func NewWorker(cfg Config) (*Worker, error) {
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:        c,
		keys:       KeyFormat{MultiStream: c.MultiStream, LegacyStream: c.LegacyStream},
		rng:        rand.New(rand.NewPCG(c.Seed, 0x5eed5ea5e)),
		trace:      c.Trace,
		streams:    make(map[string]*StreamConfig, len(c.Streams)),
		pending:    make(map[uint64]pendingCall),
		syncLeader: true, // until a listing shows a smaller owner
		writer:     writerOf(c.Seed),
		asg:        assignState{on: c.Assignment == AssignmentAssigner},
	}
	if c.Renewal == RenewalAuto {
		// session renewal until the start-up scan shows a writer without
		// a nonce (sessionChecked)
		w.sess.auto = true
		w.cfg.Renewal = RenewalSession
	}
	if w.cfg.Renewal == RenewalSession {
		w.sess.key = SessionKey(c.Owner)
	}
	for i := range c.Streams {
		w.streams[c.Streams[i].Name] = &c.Streams[i]
	}
	w.rows = newRowTable(w.parseKey)
	return w, nil
}

// Owner returns the worker's owner id.
func (w *Worker) Owner() string { return w.cfg.Owner }

// Config returns the worker's configuration with defaults applied.
func (w *Worker) Config() Config { return w.cfg }

// Held returns the keys of the leases the worker holds, sorted (not the
// assigner row: see IsAssigner).
func (w *Worker) Held() []string {
	keys := make([]string, 0, len(w.held))
	for _, h := range w.held {
		if !IsReserved(h.key) {
			keys = append(keys, h.key)
		}
	}
	return keys
}

// leases returns how many leases the worker holds (not the assigner row).
func (w *Worker) leases() int {
	n := len(w.held)
	if w.asgHeld != nil {
		n--
	}
	if w.sess.held != nil {
		n--
	}
	return n
}

// onlyControlLeft reports whether the worker holds no lease but the
// assigner row and its session row: at shutdown, the assigner row goes
// then, the session row last.
func (w *Worker) onlyControlLeft() bool { return w.leases() == 0 }

// heldAssignerRow returns the holding of the assigner row, nil if none.
func (w *Worker) heldAssignerRow() *holding { return w.asgHeld }

// heldFor returns the holding of the lease call pc was made for, nil if
// the worker holds none.
func (w *Worker) heldFor(pc pendingCall) *holding {
	if rs := w.rows.current(pc.rs, pc.key); rs != nil {
		return rs.held
	}
	return nil
}

// holdingOf returns the holding of key, nil if the worker holds none.
func (w *Worker) holdingOf(key string) *holding {
	if rs := w.rows.get(key); rs != nil {
		return rs.held
	}
	return nil
}

// IsAssigner reports whether the worker is the assigner (see
// Config.Assignment): it holds the assigner row and may act on it.
func (w *Worker) IsAssigner() bool { return w.isAssigner() }

// Acting reports whether the worker may act on lease key at its current
// time: it holds the lease, has waited out any previous holder, and is
// before the safety margin of its own view of expiry.
func (w *Worker) Acting(key string) bool {
	h := w.holdingOf(key)
	return h != nil && w.isActing(h)
}

// ActingUntil returns the monotonic time (on the clock of Step's now.Mono)
// before which the worker may act on lease key, as decided at its last
// Step, or 0 if it may not act on it now. A driver that hands records to a
// processor later than the Step that delivered them (a queue, a goroutine
// that was descheduled or a process that was paused) checks this bound at
// the moment of hand-off: past it the lease may belong to another worker.
func (w *Worker) ActingUntil(key string) time.Duration {
	h := w.holdingOf(key)
	if h == nil || !w.isActing(h) {
		return 0
	}
	return w.actUntil(h)
}

// Step feeds one input at time now and returns what the worker asks for.
// now.Mono must never decrease from one Step to the next. The returned
// Ready is valid until the next Step.
func (w *Worker) Step(now Now, in Input) Ready {
	if now.Mono < w.now.Mono {
		now.Mono = w.now.Mono // never let time run backwards
	}
	// the wall reading is read only through wallClock (wallclock.go)
	w.now, w.wall, w.wallRead = Now{Mono: now.Mono}, now.Wall, ""
	w.rd.Calls = w.rd.Calls[:0]
	w.rd.Notices = w.rd.Notices[:0]
	if w.stopped {
		w.rd.Stopped = true
		w.rd.Err = w.err
		w.rd.WakeAt = 0
		w.rd.Watch = w.rd.Watch[:0]
		return w.rd
	}
	if !w.started {
		w.started = true
		w.beginStart()
	}
	w.affected, w.affectedKey = nil, ""
	switch in.Kind {
	case InputResult:
		w.onResult(&in.Result)
	case InputDone:
		w.affect(w.rows.get(in.Key), in.Key)
		w.onDone(in, w.affected)
	case InputCheckpoint:
		w.affect(w.rows.get(in.Key), in.Key)
		w.onCheckpointRequest(in.Key, w.affected, in.Checkpoint, in.Token)
	case InputShutdown:
		w.beginShutdown()
	case InputWatch:
		w.onWatch(&in.Watch)
	}
	switch {
	case w.stopped:
	case !w.start.done:
		w.advanceStart()
	default:
		w.advance()
	}
	w.rd.WakeAt = w.wake()
	w.rd.Watch = w.watching(w.rd.Watch[:0])
	w.rd.Stopped = w.stopped
	w.rd.Err = w.err
	return w.rd
}

// advanceStart retries the start-up check when its time has come; a
// shutdown before it passed stops the worker at once (it holds nothing).
func (w *Worker) advanceStart() {
	s := &w.start
	switch {
	case w.shutdown:
		w.stopped = true
	case s.waiting == 0 && s.failed && w.now.Mono >= s.retryAt:
		switch s.phase {
		case startDescribe:
			w.startDescribe()
		default:
			w.startMarkers()
		}
	}
}

func (w *Worker) onResult(r *Result) {
	pc, ok := w.pending[r.ID]
	if !ok {
		return // a duplicate or unknown reply
	}
	delete(w.pending, r.ID)
	w.affect(pc.rs, pc.key)
	if pc.op.IsStore() {
		w.noteStoreReply(r.Err)
	}
	switch pc.purpose {
	case forScan:
		w.scanInFlight = false
		w.onScan(r)
	case forWrite:
		w.onWriteResult(w.rows.current(pc.rs, pc.key), r)
	case forResolve:
		w.onResolveResult(w.rows.current(pc.rs, pc.key), r)
	case forParentCheck:
		w.onParentCheck(pc, r)
	case forIterator:
		w.onIterator(pc, r)
	case forRecords:
		w.onRecords(pc, r)
	case forSyncShards:
		if pc.gen == w.sync.round {
			w.onSyncShards(pc.key, r)
		}
	case forSyncScan:
		if pc.gen == w.sync.round {
			w.onSyncScan(r)
		}
	case forSyncDescribe:
		if pc.gen == w.sync.round {
			w.onSyncDescribe(pc.key, r)
		}
	case forStart:
		w.onStartResult(pc, pc.op, r)
	case forPoll:
		w.onPoll(r)
	case forConfirm:
		w.onConfirm(pc.key, w.rows.current(pc.rs, pc.key), r)
	case forMonitor:
		w.onMonitor(r)
	case forAssignerPoll:
		w.onAssignerPoll(r)
	case forAssignerConfirm:
		w.onAssignerConfirm(pc.key, r)
	case forUntakenRead:
		w.onUntakenRead(pc.key, r)
	case forSession:
		w.onSessionRead(r)
	case forOrphanRead:
		w.onOrphanRead(pc.key, r)
	case forSessionPoll:
		w.onSessionPoll(pc.key, r)
	case forSessionFence:
		w.onSessionFence(pc.key, r)
	default:
		w.onFanOutResult(pc, r)
	}
}

// affect notes the row the current input concerns: rs, the row of key
// when the call was made (nil: look key up).
func (w *Worker) affect(rs *rowState, key string) {
	w.affected, w.affectedKey = rs, key
}

// advance takes every action that the input and time allow: it ticks the
// lease the input concerns and every lease that is due, then scans and
// syncs when their time has come.
func (w *Worker) advance() {
	now := w.now.Mono
	if rs := w.rows.current(w.affected, w.affectedKey); rs != nil && rs.held != nil {
		w.tick(rs.held)
	}
	for len(w.dueq) > 0 && w.dueq.firstDue() <= now {
		w.tick(w.dueq.first())
	}
	if w.retrying > 0 {
		w.retryWrites()
	}
	if w.shutdown {
		w.goodbye()
		if len(w.held) == 0 && len(w.writing) == 0 && w.fanOutDeregistered() {
			w.stopped = true
		}
		return
	}
	// A driver answers every call, but should a reply never come, do not
	// stop scanning for good.
	if w.scanInFlight && now-w.scanSentAt > 2*w.cfg.LeaseDuration {
		w.scanInFlight = false
	}
	if w.sync.inFlight() && now-w.sync.sentAt > 2*w.cfg.LeaseDuration {
		w.sync.waiting = 0
		w.sync.round++
	}
	if w.cfg.Consumer == FanOut && !w.tickFanOutRegistration() {
		return // no table work before the consumers are ACTIVE
	}
	if w.asg.on {
		w.advanceAssigned()
		return
	}
	if !w.sync.inFlight() && now >= w.sync.next {
		w.startSync()
	}
	if !w.scanInFlight && !w.sync.inFlight() && now >= w.nextScan {
		w.startScan()
	}
}

// retryWrites re-sends the resolving reads of takes, creates and deletes
// whose earlier read failed.
func (w *Worker) retryWrites() {
	var due []*rowState
	for _, rs := range w.writing {
		if wr := rs.write; wr.resolving && wr.id == 0 && w.now.Mono >= wr.retryAt {
			due = append(due, rs)
		}
	}
	slices.SortFunc(due, byRowKey)
	for _, rs := range due {
		w.resolve(rs.write)
	}
}

// wake returns the earliest time at which time alone will make the worker
// act.
func (w *Worker) wake() time.Duration {
	if w.stopped {
		return 0
	}
	t := time.Duration(1<<63 - 1)
	min := func(d time.Duration) {
		if d > w.now.Mono && d < t {
			t = d
		}
	}
	if !w.start.done {
		if w.start.waiting == 0 && w.start.failed {
			min(w.start.retryAt)
		}
	} else if !w.shutdown {
		if w.asg.on {
			w.wakeAssigned(min)
		} else {
			if !w.scanInFlight {
				min(w.nextScan)
			}
			if !w.sync.inFlight() {
				min(w.sync.next)
			}
		}
	}
	if len(w.dueq) > 0 {
		min(w.dueq.firstDue())
	}
	w.fanOutWake(min)
	if w.retrying > 0 {
		for _, rs := range w.writing {
			if wr := rs.write; wr.resolving && wr.id == 0 {
				min(wr.retryAt)
			}
		}
	}
	if t == time.Duration(1<<63-1) {
		// Nothing is due: wake at the next renew interval anyway, so a
		// driver that lost a result still makes progress.
		t = w.now.Mono + w.cfg.RenewInterval
	}
	return t
}

// call queues a call and remembers its purpose.
func (w *Worker) call(c Call, pc pendingCall) uint64 {
	w.nextID++
	c.ID = w.nextID
	pc.op = c.Op
	w.pending[c.ID] = pc
	w.rd.Calls = append(w.rd.Calls, c)
	return c.ID
}

func (w *Worker) notice(n Notice) {
	w.rd.Notices = append(w.rd.Notices, n)
}

func (w *Worker) batchID() uint64 {
	w.nextBatch++
	return w.nextBatch
}

func (w *Worker) emit(e TraceEvent) {
	if w.trace == nil {
		return
	}
	e.Mono = w.now.Mono
	e.Owner = w.cfg.Owner
	w.trace(e)
}

// jitter returns d plus or minus up to a tenth of it.
func (w *Worker) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	span := int64(d / 5)
	if span <= 0 {
		return d
	}
	return d - d/10 + time.Duration(w.rng.Int64N(span))
}

// tick does what is due for h, then requeues it at the next time it
// needs the worker, or drops it if it was released or lost.
func (w *Worker) tick(h *holding) {
	if !h.gone {
		w.tickHolding(h)
	}
	if h.gone {
		w.dropSubscription(h)
		w.dueq.remove(h)
		// whatever holds h.key now is dropped (h itself but in a step
		// that replaced it: see addHeld)
		if i, ok := slices.BinarySearchFunc(w.held, h.key, byHoldingKey); ok {
			w.held = slices.Delete(w.held, i, i+1)
		}
		if h.key == AssignerKey {
			w.asgHeld = nil
		}
		if h == w.sess.held {
			w.sess.held = nil
		}
		if rs := w.rows.get(h.key); rs != nil {
			rs.held = nil
			w.rows.tidy(rs)
		}
		if c := w.asgHeld; w.shutdown && c != nil && w.onlyControlLeft() {
			// The assigner row goes last, and now: its successor need
			// not wait for its next renewal (tickHolding).
			w.dueq.set(c, w.now.Mono)
		}
		if c := w.sess.held; w.shutdown && c != nil && len(w.held) == 1 {
			w.dueq.set(c, w.now.Mono) // and the session row after it
		}
		return
	}
	w.dueq.set(h, h.nextDue(w))
}

// addHeld starts holding h; it is ticked in the same step. A holding of
// the same key that was given up in this step and not yet removed is
// replaced.
func (w *Worker) addHeld(h *holding) {
	h.qidx = -1
	if i, found := slices.BinarySearchFunc(w.held, h.key, byHoldingKey); found {
		w.dueq.remove(w.held[i])
		w.held[i] = h
	} else {
		w.held = slices.Insert(w.held, i, h)
	}
	h.rs.held = h
	if h.key == AssignerKey {
		w.asgHeld = h
	}
	if h.key == w.sess.key && w.sess.key != "" {
		h.session = true
		w.sess.held = h
	}
	w.dueq.set(h, w.now.Mono)
}

func byHoldingKey(h *holding, key string) int { return strings.Compare(h.key, key) }

func byRowKey(a, b *rowState) int { return strings.Compare(a.key, b.key) }

// parseKey returns the shard a lease key names and whether it is a shard
// of a stream this worker consumes.
func (w *Worker) parseKey(key string) (ShardRef, bool) {
	ref, ok := w.keys.Parse(key)
	if ok {
		_, ok = w.streams[ref.Stream]
	}
	return ref, ok
}

// setWrite makes wr the write in flight on rs, a row not held.
func (w *Worker) setWrite(rs *rowState, wr *write) {
	if rs.write == nil {
		rs.writing = int32(len(w.writing))
		w.writing = append(w.writing, rs)
	}
	rs.write = wr
	wr.rs = rs
}

// clearWrite ends the write in flight on rs (a row not held), if any.
func (w *Worker) clearWrite(rs *rowState) {
	if rs == nil || rs.write == nil {
		return
	}
	i, last := int(rs.writing), len(w.writing)-1
	if i != last {
		w.writing[i] = w.writing[last]
		w.writing[i].writing = int32(i)
	}
	w.writing[last] = nil
	w.writing = w.writing[:last]
	rs.write, rs.writing = nil, -1
	w.rows.tidy(rs)
}

// writeOf returns the write in flight on key's row if the worker does not
// hold it, nil if none.
func (w *Worker) writeOf(key string) *write {
	if rs := w.rows.get(key); rs != nil {
		return rs.write
	}
	return nil
}

// writerOf returns the Lease.Writer of a worker seeded with seed: the seed
// mixed (splitmix64) so that nearby seeds give unrelated writers.
func writerOf(seed uint64) string {
	z := seed + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return strconv.FormatUint(z, 36)
}
