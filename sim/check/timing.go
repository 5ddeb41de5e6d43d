package check

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// The latency invariants: the availability the README promises, checked
// on every handoff whose path the trace shows undisturbed.
const (
	T1 = "T1" // an unplanned failover ends within its derived bound
	T2 = "T2" // a planned move ends within its derived bound
	T3 = "T3" // a dead assigner is replaced within its derived bound
)

// Timing is what the latency invariants (T1-T3) and the balance invariant
// (B1) need to know of a world: its lease timing, the intervals of the
// assignment and the drift of its clocks. A nil Options.Timing leaves
// them unchecked (cmd/live, whose histories carry no configuration).
//
// Each bound is derived from these figures and from the round trips of
// the calls on the handoff's path as the trace shows them (see
// docs/claims.md, "Latency bounds"); a handoff whose path the trace shows
// disturbed (a failed or faulty call, a pause, a crash of a process on the
// path, a second assignment, a change of assigner, a cut of the watch the
// new owner is told by) is not checked.
type Timing struct {
	LeaseDuration        time.Duration
	RenewInterval        time.Duration
	AssignerScanInterval time.Duration
	PendingPollInterval  time.Duration
	TakeInterval         time.Duration
	// IndexLag is how far the pending index may lag the table.
	IndexLag time.Duration
	// WatchResume bounds how long a cut watch stream (workers told by a
	// watch: an etcd world) takes to resume once nothing holds it back (a
	// cut link, an election); 0: unknown (a cut lasts until the watch
	// reports again). See timing_watch.go.
	WatchResume time.Duration
	// SafetyMargin is the holders' safety margin (engine.Config): a
	// renewal of the assigner row, or of a session row, whose reply comes
	// later than the lease duration less the margin and a renew interval
	// after it was sent leaves its process not acting on that row for a
	// while, which disturbs the paths of its process (see lapsed); 0:
	// unknown (not checked so).
	SafetyMargin time.Duration
	// Drift bounds the rate drift of every clock (|drift| ≤ Drift): a
	// wait of d on a worker's monotonic clock lasts at most d/(1-Drift)
	// of true time.
	Drift float64
	// Assigner and Scan say which ways of handing leases out the fleet's
	// workers use (both: a mixed fleet).
	Assigner, Scan bool
	// Capped: MaxLeasesForWorker is set, so a failover may wait for a
	// worker with room (T1 is not checked).
	Capped bool
	// FanOut: the workers read with enhanced fan-out (a restart registers
	// its consumer first: the resume bound is not checked).
	FanOut bool
	// BalanceByCount: the assigner balances lease counts (B1's role rule
	// holds only then).
	BalanceByCount bool
}

// timingSlack is what a bound allows beyond its derived terms: the steps
// of one true instant, rounding of the jitter.
const timingSlack = 50 * time.Millisecond

// jit is the longest true time of an interval d that a worker jitters (up
// to a tenth more) and times on its own clock.
func (tm *Timing) jit(d time.Duration) time.Duration { return tm.wait(d + d/10) }

// wait is the longest true time of a wait of d on a worker's clock.
func (tm *Timing) wait(d time.Duration) time.Duration {
	return time.Duration(float64(d) / (1 - tm.Drift))
}

// settle is how long after a change of the fleet (a process started or
// stopped, a fault) the assigner's member list may still change: a member
// drops out once it has not renewed for two renew intervals and a scan,
// or said hello within one and a half lease durations; its hello takes a
// poll and the index's lag to be read.
func (tm *Timing) settle() time.Duration {
	return max(2*tm.RenewInterval+tm.jit(tm.AssignerScanInterval), tm.wait(3*tm.LeaseDuration/2)) +
		tm.jit(tm.PendingPollInterval) + tm.IndexLag + time.Second
}

// untakenWait is the longest true time the assigner lets an assignment
// it wrote, which its receiver has not taken, stand before it gives the
// lease to another member (engine: untakenWait, for a lease not given
// away untaken since it was last taken): three poll intervals on its own
// clock, doubled for each of the earlier assignments (slow) that the
// same receiver let stand, never more than the lease duration.
func (tm *Timing) untakenWait(slow int) time.Duration {
	w := 3 * tm.PendingPollInterval
	for ; slow > 0 && w < tm.LeaseDuration; slow-- {
		w *= 2
	}
	return tm.wait(min(w, tm.LeaseDuration))
}

// slowCount counts the assignments that the assigner process p, in its
// holding of the assigner row since from, gave to another member because
// their receiver to had not taken them, whose trace came before t.
func (p *tproc) slowCount(to string, from, t time.Duration) int {
	n := 0
	for _, g := range p.gaveUp {
		if g.from == to && g.t >= from && g.t < t {
			n++
		}
	}
	return n
}

// interval is a stretch of true time.
type interval struct{ from, to time.Duration }

func (i interval) overlaps(from, to time.Duration) bool { return i.from <= to && i.to >= from }

// rttBuckets is how many seconds of round trips a process keeps: longer
// than any bound (a gap beyond it is a violation whatever its round trips).
const rttBuckets = 256

// tproc is what the timing checker keeps of one process.
type tproc struct {
	slot  int32
	owner string
	start time.Duration
	alive bool
	stop  time.Duration // when it stopped (once !alive)
	dist  [16]interval  // its latest disturbances (a ring)
	ndist int
	// asg: its latest disturbances of the calls on the assigner row, and
	// its pauses (T3 asks only how its reads of that row went)
	asg     [8]interval
	nasg    int
	rtt     [rttBuckets]rttBucket
	renewed time.Duration // its last applied write of the assigner row
	// asgSent, sessSent: the send of its last write of the assigner row,
	// of its session row, that was answered ok (see lapsed)
	asgSent, sessSent time.Duration
	// releasedRow: when its release of the assigner row applied
	releasedRow time.Duration
	cuts        watchCuts // cuts of its watch streams
	// registered: when the last call of its start-up's registration of
	// its consumers (a FanOut worker, before its first scan or poll) was
	// answered; scanned: it has sent its first scan or poll
	registered time.Duration
	scanned    bool
	scannedAt  time.Duration // when it sent its first scan, poll or read of the assigner row
	// down: when its graceful shutdown began (0: never); see lastChance
	down time.Duration
	// gaveUp: its latest assignments, as the assigner, of leases whose
	// receiver had not taken them (the latest 64)
	gaveUp []gaveUp
	// session: its latest applied writes of its session row (session
	// renewal: every lease it holds is bound to it)
	session []conflict
}

type rttBucket struct {
	sec int64
	max time.Duration
}

// disturb records a disturbance of the process over i.
func (p *tproc) disturb(i interval) {
	p.dist[p.ndist%len(p.dist)] = i
	p.ndist++
}

// disturbed reports whether the process was disturbed in [from, to]; a
// ring too short to tell counts as disturbed.
func (p *tproc) disturbed(from, to time.Duration) bool {
	return inRing(p.dist[:], p.ndist, from, to)
}

// asgDisturbed reports whether a call of the process on the assigner row
// failed, or the process was paused, in [from, to].
func (p *tproc) asgDisturbed(from, to time.Duration) bool {
	return inRing(p.asg[:], p.nasg, from, to)
}

// inRing reports whether an interval of the ring (n of them written)
// overlaps [from, to]; a ring too short to tell counts as overlapping.
func inRing(ring []interval, n int, from, to time.Duration) bool {
	k := min(n, len(ring))
	oldest := interval{from: -1}
	for i := 0; i < k; i++ {
		d := ring[i]
		if d.overlaps(from, to) {
			return true
		}
		if oldest.from < 0 || d.from < oldest.from {
			oldest = d
		}
	}
	return n > len(ring) && oldest.from > from
}

func (p *tproc) asgDisturb(i interval) {
	p.asg[p.nasg%len(p.asg)] = i
	p.nasg++
}

// noteRTT records a call of the process answered at t after rtt.
func (p *tproc) noteRTT(t, rtt time.Duration) {
	sec := int64(t / time.Second)
	b := &p.rtt[sec%rttBuckets]
	if b.sec != sec {
		*b = rttBucket{sec: sec}
	}
	b.max = max(b.max, rtt)
}

// maxRTT returns the longest round trip of the process's calls answered
// in [from, to] (and the second before).
func (p *tproc) maxRTT(from, to time.Duration) time.Duration {
	var m time.Duration
	lo, hi := int64(from/time.Second)-1, int64(to/time.Second)
	if hi-lo >= rttBuckets {
		lo = hi - rttBuckets + 1
	}
	for s := lo; s <= hi; s++ {
		if s < 0 {
			continue
		}
		if b := &p.rtt[s%rttBuckets]; b.sec == s {
			m = max(m, b.max)
		}
	}
	return m
}

// tkey is what the timing checker keeps of one key.
type tkey struct {
	acqProc   int32
	acqReason string
	acqT      time.Duration
	assigns   []assignRec // the latest assignments (TraceAssigned), oldest first
	// conflicts: condition failures of writes on the key (by process);
	// fails: its calls that failed (by process); writes: the writes that
	// applied on it (by process)
	conflicts []conflict
	fails     []conflict
	writes    []conflict
	// handing: the process handing the lease over, since handAt (-1:
	// none)
	handing int32
	handAt  time.Duration
	// marked: the row carries a handoff mark (timing_marks.go); acqMarked:
	// the mark its latest taker read; actingProc acts on it since actingT
	// (-1: none since that take)
	marked, acqMarked bool
	actingProc        int32
	actingT           time.Duration
	// lostProc lost the lease (in its own view: LeaseLost) at lostAt,
	// the latest loss of the key (lostProc -1: none)
	lostProc int32
	lostAt   time.Duration
	// requested: when the latest handoff request (an assigner's write
	// that keeps the owner) applied on the key (0: none)
	requested time.Duration
	// handedProc released the lease to handedTo at handedAt: the latest
	// release of the key that named a receiver
	handedProc int32
	handedTo   string
	handedAt   time.Duration
}

// assignRec is an assignment of a key: it applied at t, written by
// process by, naming to (once the assigner's trace said so; "" before).
type assignRec struct {
	t   time.Duration
	by  int32
	to  string
	why string // what the assigner's trace gave as its reason ("expired", "not taken by w3", ...)
}

// gaveUp is an assignment that the assigner gave to another member
// because its receiver had not taken it (its trace's reason "not taken
// by" from): the engine's wait for that receiver's next ones doubles.
type gaveUp struct {
	t    time.Duration
	from string
}

type conflict struct {
	t    time.Duration
	proc int32
	sent time.Duration // of a write that applied (tkey.writes): when it was sent
	take bool          // (tkey.writes) a take
}

// asgTenure is one holding of the assigner row.
type asgTenure struct {
	proc     int32
	from, to time.Duration // to: 0 while held
	prev     int32         // the holder before it (-1: none)
}

// timingChecker checks T1, T2 and T3 (see Timing).
type timingChecker struct {
	o     Options
	tm    *Timing
	keys  *keyTable
	procs []*tproc         // by process id
	slots map[int32]int32  // slot -> its live process
	live  map[string]int32 // owner -> its live process
	// global holds the disturbances no process is known for (a pause of
	// an unnamed worker), and every disturbance, process start and stop
	// of the fleet for T3's steadiness (a ring)
	unnamed []interval
	fleet   [256]fleetEvent
	nfleet  int
	asg     []asgTenure // the assigner row's holdings, oldest first (the latest few)
	// asgWrites: the latest applied writes of the assigner row (a ring)
	asgWrites [8]conflict
	nAsgWrite int
	out       []Violation
	// bounded counts the handoffs checked against a bound: failovers (T1),
	// planned moves (T2), assigner takeovers (T3)
	bounded [3]int
	// electionEnd: when the latest election of the store (an etcd leader
	// change) ends
	electionEnd time.Duration
	// deferred: violations that wait for the end of the history (judge)
	deferred []deferredV
}

type fleetEvent struct {
	proc int32
	i    interval
	// member: a process started or stopped (the member list changes), not
	// a disturbance of a call or a pause; struck: a pause of the process
	// or a cut of its table link (not a failed call)
	member, struck bool
}

func newTiming(o Options, keys *keyTable) *timingChecker {
	return &timingChecker{o: o, tm: o.Timing, keys: keys, slots: map[int32]int32{}, live: map[string]int32{}}
}

func (c *timingChecker) proc(id int32) *tproc {
	if id < 0 {
		return nil
	}
	for int(id) >= len(c.procs) {
		c.procs = append(c.procs, nil)
	}
	p := c.procs[id]
	if p == nil {
		p = &tproc{slot: -1}
		c.procs[id] = p
	}
	return p
}

func (c *timingChecker) fleetEvent(proc int32, i interval) {
	c.fleet[c.nfleet%len(c.fleet)] = fleetEvent{proc: proc, i: i}
	c.nfleet++
}

// fleetStrike records a pause of proc, or a cut of its table link, over i.
func (c *timingChecker) fleetStrike(proc int32, i interval) {
	c.fleet[c.nfleet%len(c.fleet)] = fleetEvent{proc: proc, i: i, struck: true}
	c.nfleet++
}

// othersStruck reports whether a process other than except was paused or
// cut off the table in [from, to]; a pause of an unnamed worker, or a
// ring too short to tell, counts as one.
func (c *timingChecker) othersStruck(from, to time.Duration, except ...int32) bool {
	struck := false
	unknown := c.fleetIn(from, to, func(e fleetEvent) {
		struck = struck || e.struck && !slices.Contains(except, e.proc)
	})
	return struck || unknown
}

// othersShuttingDown reports whether a process other than except was in
// a graceful shutdown at some time in [from, to]: until it exits, the
// rows it still holds make it count among the workers whose fair share a
// worker taking leases itself keeps to.
func (c *timingChecker) othersShuttingDown(from, to time.Duration, except ...int32) bool {
	for id, p := range c.procs {
		if p != nil && p.down > 0 && p.down <= to && (p.alive || p.stop >= from) && !slices.Contains(except, int32(id)) {
			return true
		}
	}
	return false
}

// fleetIn calls f with every event of the fleet ring that overlaps
// [from, to], and reports whether the ring cannot tell everything of that
// window: it is too short (it no longer holds the events of its start) or
// an unnamed worker's pause overlaps it.
func (c *timingChecker) fleetIn(from, to time.Duration, f func(e fleetEvent)) (unknown bool) {
	n := min(c.nfleet, len(c.fleet))
	oldest := time.Duration(-1)
	for i := 0; i < n; i++ {
		e := c.fleet[i]
		if e.i.overlaps(from, to) {
			f(e)
		}
		if oldest < 0 || e.i.from < oldest {
			oldest = e.i.from
		}
	}
	if c.nfleet > len(c.fleet) && oldest > from {
		return true
	}
	for _, u := range c.unnamed {
		if u.overlaps(from, to) {
			return true
		}
	}
	return false
}

func (c *timingChecker) memberEvent(proc int32, t time.Duration) {
	c.fleet[c.nfleet%len(c.fleet)] = fleetEvent{proc: proc, i: interval{t, t}, member: true}
	c.nfleet++
}

// fleetChanges counts the processes other than except that started or
// stopped in [from, to] (each may change the member list); a pause of an
// unnamed worker overlapping it, or a ring too short to tell, counts as
// many.
func (c *timingChecker) fleetChanges(from, to time.Duration, except int32) int {
	changes := 0
	if c.fleetIn(from, to, func(e fleetEvent) {
		if e.member && e.proc != except {
			changes++
		}
	}) {
		return 1 << 20
	}
	return changes
}

func (c *timingChecker) key(ks *keyState) *tkey {
	if ks.tk == nil {
		ks.tk = &tkey{acqProc: -1, handing: -1, actingProc: -1, lostProc: -1, handedProc: -1}
	}
	return ks.tk
}

// pathOp reports whether a call of op can be on a handoff's path: the
// table calls, and the stream calls of shard sync (a scan waits for the
// sync round in flight).
func pathOp(op engine.Op) bool {
	return op.IsStore() || op == engine.OpListShards || op == engine.OpDescribeStream
}

// lapsed reports whether r is the reply to a renewal of the assigner row
// or of a session row that came too late to keep its process acting on
// the row: more than the lease duration less the safety margin and a
// renew interval (a tenth more for its jitter) after it was sent. The
// process's previous renewal, sent a renew interval before, kept it
// acting until a lease duration less the margin after its own send, so
// in between the process was past its margin: an assigner that hands
// out nothing, a worker that takes nothing, for a while, on a path that
// looks undisturbed otherwise (swarm seed 899 with -renewal session: the
// assigner's renewals answered 4.1 s late in a world of an 8.1 s lease,
// a 2.47 s margin and 2.02 s renewals, the assigner lapsing for 20 s).
//
// The validity the renewal extends runs from the send of the process's
// previous write of the row, a renew interval (jittered) before this one's
// send, or earlier: a take of the assigner row answered late is renewed
// only once its reply comes, and a renewal answered within the bound may
// still come past the margin of the take (soak seed 11358 of 1b4e506: a
// take and its first renewal each answered 2.2 s late in a world of a
// 5.2 s lease; the new assigner dropped the scan that came in between).
func (c *timingChecker) lapsed(r *trace.Record, p *tproc) bool {
	tm := c.tm
	if tm == nil || tm.SafetyMargin <= 0 || r.Op != engine.OpUpdateLease || r.Reason != trace.WriteRenew ||
		(r.Key != engine.AssignerKey && !engine.IsSessionRow(r.Key)) {
		return false
	}
	prev := r.Sent - tm.RenewInterval*11/10
	if last := p.rowSent(r.Key); last > 0 && last < prev {
		prev = last
	}
	return r.T-prev > tm.LeaseDuration-tm.SafetyMargin
}

// rowSent returns the send of p's last write of key (the assigner row or
// a session row) that was answered ok, 0 if none.
func (p *tproc) rowSent(key string) time.Duration {
	if key == engine.AssignerKey {
		return p.asgSent
	}
	return p.sessSent
}

// noteRowWrite records the reply r of p's write of the assigner row or a
// session row.
func (p *tproc) noteRowWrite(r *trace.Record) {
	if r.Op != engine.OpUpdateLease && r.Op != engine.OpCreateLease || r.Outcome != trace.OutcomeOK {
		return
	}
	switch {
	case r.Key == engine.AssignerKey:
		p.asgSent = r.Sent
	case r.Key == engine.SessionKey(p.owner):
		p.sessSent = r.Sent
	}
}

// failedOutcome reports whether a call's outcome delayed its caller (the
// call must be made again, or was answered only at its timeout).
func failedOutcome(o string) bool {
	switch o {
	case trace.OutcomeOK, trace.OutcomeCondition, trace.OutcomeNotFound:
		return false
	}
	return true
}

// observe feeds the records the timing checker reads.
func (c *timingChecker) observe(r *trace.Record) {
	switch r.Kind {
	case trace.KindProcStart:
		p := c.proc(r.Proc)
		p.slot, p.owner, p.start, p.alive = r.Worker, r.Owner, r.T, true
		c.slots[r.Worker] = r.Proc
		c.live[r.Owner] = r.Proc
		c.memberEvent(r.Proc, r.T)
	case trace.KindProcStop:
		p := c.proc(r.Proc)
		p.alive, p.stop = false, r.T
		if c.live[r.Owner] == r.Proc {
			delete(c.live, r.Owner)
		}
		c.memberEvent(r.Proc, r.T)
		c.asgEnd(r.Proc, r.T)
	case trace.KindSend:
		if p := c.proc(r.Proc); r.Proc >= 0 && (r.Op == engine.OpListLeases || r.Op == engine.OpListPending) && !p.scanned {
			p.scanned, p.scannedAt = true, r.T
		}
		// A live worker that writes its hello again, later than right
		// after its start, is one the assigner's member list no longer
		// names: the list, and so who the deputies are, changed.
		if r.Proc >= 0 && r.Op == engine.OpCreateLease && engine.IsWorkerRow(r.Key) {
			if p := c.proc(r.Proc); r.T-p.start > c.tm.settle() {
				c.memberEvent(r.Proc, r.T)
			}
		}
	case trace.KindReply:
		if r.Proc >= 0 && r.Op == engine.OpGetLease && len(c.deferred) > 0 && (r.Fault != "" || failedOutcome(r.Outcome)) {
			c.voidDeferred(readKey{r.Proc, r.Key}, r.Sent)
		}
		if r.Proc >= 0 && (r.Op == engine.OpDescribeConsumer || r.Op == engine.OpRegisterConsumer) {
			if p := c.proc(r.Proc); !p.scanned {
				p.registered = r.T
			}
		}
		if r.Proc < 0 || !pathOp(r.Op) {
			return
		}
		p := c.proc(r.Proc)
		if r.Op == engine.OpGetLease && r.Key == engine.AssignerKey && !p.scanned {
			p.scanned, p.scannedAt = true, r.Sent // it reads the assigner row: its start-up is over
		}
		p.noteRTT(r.T, r.T-r.Sent)
		failed := r.Fault != "" || failedOutcome(r.Outcome) || c.lapsed(r, p)
		p.noteRowWrite(r)
		switch {
		case !failed:
		case r.Key == "" || engine.IsReserved(r.Key):
			// a scan, a poll of the index, a listing of shards, or a call on
			// a reserved row (the assigner row, the stream's marker read by
			// the start-up checks, a hello): what the process's handing out
			// and taking of any lease waits for
			i := interval{r.Sent, r.T}
			p.disturb(i)
			c.fleetEvent(r.Proc, i)
			if r.Key == engine.AssignerKey {
				p.asgDisturb(i)
			}
		default:
			// a call on one lease's row delays that lease only
			tk := c.key(c.keys.get(r.Key))
			tk.fails = appendRecent(tk.fails, conflict{t: r.T, proc: r.Proc}, r.T)
		}
		if r.Outcome == trace.OutcomeCondition && r.Key != "" {
			tk := c.key(c.keys.get(r.Key))
			tk.conflicts = appendRecent(tk.conflicts, conflict{t: r.T, proc: r.Proc}, r.T)
		}
	case trace.KindWatch:
		c.watchReported(r)
	case trace.KindFault:
		if c.watchFault(r) {
			return
		}
		if slot, ok := shutdownFault(r); ok {
			if pid, ok := c.slots[slot]; ok {
				if p := c.proc(pid); p.alive && p.down == 0 {
					p.down = r.T
				}
			}
			return
		}
		if slot, d, ok := boundaryCut(r.Reason); ok {
			// boundary seeking's cut of one worker's table link (after
			// its renewal, as its lease is taken, after its read): a
			// strike as a partition is (soak seed 44767 of 01b4227, scan
			// mode: a worker cut as its lease was taken held back the
			// fair share of the worker taking another's expired lease)
			if pid, ok := c.slots[slot]; ok {
				i := interval{r.T, r.T + d}
				c.fleetStrike(pid, i)
			}
			return
		}
		if slots, d, ok := linkFault(r.Reason); ok {
			// A partition or clog of workers' table links: a worker that makes
			// no call meanwhile (an idle one, told of its assignments by a
			// watch that the cut link holds back) fails none, yet learns
			// nothing until the link heals.
			i := interval{r.T, r.T + d}
			for _, slot := range slots {
				if pid, ok := c.slots[slot]; ok {
					c.proc(pid).disturb(i)
					c.proc(pid).asgDisturb(i)
					c.fleetEvent(pid, i)
					c.fleetStrike(pid, i)
					c.proc(pid).cuts.hold(i.to, r.T, c.resumeBy)
				}
			}
			return
		}
		if !strings.Contains(r.Reason, "pause") {
			return
		}
		d := pauseFor(r.Reason)
		i := interval{r.T, r.T + d}
		slot := r.Worker
		if slot < 0 && strings.Contains(r.Reason, "in the middle of a delivery") {
			slot = pausedSlot(r.Reason)
		}
		if pid, ok := c.slots[slot]; ok && slot >= 0 {
			c.proc(pid).disturb(i)
			c.proc(pid).asgDisturb(i)
			c.fleetEvent(pid, i)
			c.fleetStrike(pid, i)
			return
		}
		c.unnamed = append(c.unnamed, i)
	case trace.KindApply:
		if r.Outcome != trace.OutcomeOK || r.Proc < 0 {
			return
		}
		if r.Key == engine.AssignerKey {
			c.asgWrites[c.nAsgWrite%len(c.asgWrites)] = conflict{t: r.T, proc: r.Proc, sent: r.Sent}
			c.nAsgWrite++
			p := c.proc(r.Proc)
			p.renewed = r.T
			if r.Reason == trace.WriteRelease {
				p.releasedRow = r.T
			}
			return
		}
		if engine.IsSessionRow(r.Key) && r.Reason != trace.WriteAssign {
			p := c.proc(r.Proc)
			p.session = appendRecent(p.session, conflict{t: r.T, proc: r.Proc, sent: r.Sent, take: r.Reason == trace.WriteTake}, r.T)
			return
		}
		if r.Key != "" && !engine.IsReserved(r.Key) {
			tk := c.key(c.keys.get(r.Key))
			tk.writes = appendRecent(tk.writes, conflict{t: r.T, proc: r.Proc, sent: r.Sent, take: r.Reason == trace.WriteTake}, r.T)
			tk.markApplied(r)
			if r.Reason == trace.WriteAssign && r.RowOwner == "" {
				// an assignment (not a handoff request, which keeps the
				// owner): timed at its apply, since its assignee may take
				// the row before the assigner hears back
				tk.assigns = appendRecent(tk.assigns, assignRec{t: r.T, by: r.Proc}, r.T)
			} else if r.Reason == trace.WriteAssign {
				tk.requested = r.T
			}
		}
	case trace.LeaseAcquired:
		if r.Key == engine.AssignerKey {
			c.asgAcquired(r)
			return
		}
		tk := c.key(c.keys.get(r.Key))
		tk.acqProc, tk.acqReason, tk.acqT = r.Proc, r.Reason, r.T
		tk.markAcquired(r)
	case trace.LeaseLost, trace.LeaseReleased:
		if r.Key == engine.AssignerKey {
			c.asgEnd(r.Proc, r.T)
			return
		}
		tk := c.key(c.keys.get(r.Key))
		if tk.handing == r.Proc {
			tk.handing = -1
		}
		if r.Kind == trace.LeaseLost {
			tk.lostProc, tk.lostAt = r.Proc, r.T
		}
		if to := HandedTo(r.Reason); r.Kind == trace.LeaseReleased && to != "" {
			tk.handedProc, tk.handedTo, tk.handedAt = r.Proc, to, r.T
		}
	case trace.Acting:
		if r.Key != "" && !engine.IsReserved(r.Key) {
			c.key(c.keys.get(r.Key)).markActing(r)
		}
	case trace.HandingOver:
		tk := c.key(c.keys.get(r.Key))
		tk.handing, tk.handAt = r.Proc, r.T
	case trace.CallSent:
		if r.Reason == trace.WriteRelease {
			c.handedOver(r)
		}
	case trace.Assigned:
		// the assigner heard its assignment applied: name its assignee
		to, ok := strings.CutPrefix(r.Reason, "to ")
		if !ok {
			return
		}
		to, why, _ := strings.Cut(to, ":")
		why = strings.TrimSpace(why)
		tk := c.key(c.keys.get(r.Key))
		for i := len(tk.assigns) - 1; i >= 0; i-- {
			if x := &tk.assigns[i]; x.by == r.Proc && x.to == "" {
				x.to, x.why = to, why
				break
			}
		}
		if from, ok := strings.CutPrefix(why, "not taken by "); ok {
			p := c.proc(r.Proc)
			if len(p.gaveUp) >= 64 {
				p.gaveUp = append(p.gaveUp[:0], p.gaveUp[1:]...)
			}
			p.gaveUp = append(p.gaveUp, gaveUp{t: r.T, from: from})
		}
	}
}

// appendRecent appends x to s and drops the entries older than 10
// minutes before now (s is in time order); it keeps at most 32.
func appendRecent[T assignRec | conflict](s []T, x T, now time.Duration) []T {
	s = append(s, x)
	drop := 0
	for drop < len(s)-1 && (len(s)-drop > 32 || timeOf(s[drop]) < now-10*time.Minute) {
		drop++
	}
	if drop > 0 {
		s = append(s[:0], s[drop:]...)
	}
	return s
}

func timeOf[T assignRec | conflict](x T) time.Duration {
	switch v := any(x).(type) {
	case assignRec:
		return v.t
	case conflict:
		return v.t
	}
	return 0
}

// pauseFor returns the length of a pause fault ("... for 2.305s ...").
func pauseFor(reason string) time.Duration {
	_, rest, ok := strings.Cut(reason, " for ")
	if !ok {
		return time.Hour // unknown: as long as it may be
	}
	f, _, _ := strings.Cut(rest, " ")
	d, err := time.ParseDuration(f)
	if err != nil {
		return time.Hour
	}
	return d
}

// linkFault parses the description of a partition or a clog of workers'
// links to the table ("partition workers=[4 5] target=both dir=request
// for 2.6s"): the workers' slots and how long it lasts. A fault of the
// stream links alone is not one: the lease path does not cross them.
func linkFault(reason string) (slots []int32, d time.Duration, ok bool) {
	f := strings.Fields(reason)
	if len(f) < 3 || (f[1] != "partition" && f[1] != "clog") || !strings.HasPrefix(f[2], "workers=[") {
		return nil, 0, false
	}
	if !strings.Contains(reason, " target=table") && !strings.Contains(reason, " target=both") {
		return nil, 0, false
	}
	list, _, _ := strings.Cut(strings.TrimPrefix(reason[strings.Index(reason, "workers=[")+len("workers=["):], " "), "]")
	for _, w := range strings.Fields(list) {
		n, err := strconv.Atoi(w)
		if err != nil {
			return nil, 0, false
		}
		slots = append(slots, int32(n))
	}
	return slots, pauseFor(reason), true
}

// boundaryCut parses the description of boundary seeking's cut of one
// worker's table link ("cut w3 from the table after its renewal of K, for
// 2.1s"): the worker's slot and how long it lasts.
func boundaryCut(reason string) (slot int32, d time.Duration, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(reason), "cut w")
	if !ok || !strings.Contains(rest, " from the table ") {
		return 0, 0, false
	}
	num, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0, 0, false
	}
	return int32(n), pauseFor(reason), true
}

// pausedSlot returns N of "pause wN ...", or -1.
func pausedSlot(reason string) int32 {
	_, rest, ok := strings.Cut(reason, "pause w")
	if !ok {
		return -1
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil {
		return -1
	}
	return int32(n)
}

func (c *timingChecker) asgAcquired(r *trace.Record) {
	prev := int32(-1)
	if n := len(c.asg); n > 0 {
		prev = c.asg[n-1].proc
		if c.asg[n-1].to == 0 {
			c.asg[n-1].to = r.T
		}
	}
	if len(c.asg) >= 16 {
		c.asg = append(c.asg[:0], c.asg[1:]...)
	}
	c.asg = append(c.asg, asgTenure{proc: r.Proc, from: r.T, prev: prev})
	if prev >= 0 && prev != r.Proc {
		c.takeover(c.asg[len(c.asg)-2], r)
	}
}

func (c *timingChecker) asgEnd(proc int32, t time.Duration) {
	if n := len(c.asg); n > 0 && c.asg[n-1].proc == proc && c.asg[n-1].to == 0 {
		c.asg[n-1].to = t
	}
}

// asgHeld returns the holding of the assigner row by proc that spans
// [from, to], if any.
func (c *timingChecker) asgHeld(proc int32, from, to time.Duration) (asgTenure, bool) {
	for _, a := range c.asg {
		if a.proc == proc && a.from <= from && (a.to == 0 || a.to >= to) {
			return a, true
		}
	}
	return asgTenure{}, false
}

// inheritedGone reports whether a process other than the previous
// holder of the assigner row stopped in the settling time before old took
// the row over: the member list old inherited may still name it, and old
// counts it out only once it has stood still long enough (the previous
// holder itself, old counts out at once).
func (c *timingChecker) inheritedGone(old asgTenure) bool {
	for id, p := range c.procs {
		if p != nil && int32(id) != old.prev && int32(id) != old.proc && !p.alive && p.stop <= old.from && p.stop >= old.from-c.tm.settle() {
			return true
		}
	}
	return false
}

// isAssignerAt reports whether proc held the assigner row at t.
func (c *timingChecker) isAssignerAt(proc int32, t time.Duration) bool {
	_, ok := c.asgHeld(proc, t, t)
	return ok
}

// asgChanges counts the holdings of the assigner row that began in
// (from, to].
func (c *timingChecker) asgChanges(from, to time.Duration) int {
	n := 0
	for _, a := range c.asg {
		if a.from > from && a.from < to {
			n++
		}
	}
	return n
}

// asgBegan returns the latest holding of the assigner row by proc that
// began in (from, to], if any: the one an act of proc at to was made
// under. An earlier holding of proc in the window that it lost (a take
// whose reply came too late to act on: swarm seed 449) is a change of
// the assigner like any other.
func (c *timingChecker) asgBegan(proc int32, from, to time.Duration) (asgTenure, bool) {
	var out asgTenure
	ok := false
	for _, a := range c.asg {
		if a.proc == proc && a.from > from && a.from <= to && (!ok || a.from > out.from) {
			out, ok = a, true
		}
	}
	return out, ok
}

// pathClean reports whether none of procs (nil entries skipped) was
// disturbed in [from, to] (a pause, or a failed scan, poll, listing or
// call on the assigner row), none of their calls on the key failed, no
// pause of an unnamed worker overlaps it, no write on the key but one of
// except's failed its condition, and no process but except and procs
// wrote the key (a take by a third process that never acted, another
// failover stacked on this one).
func (c *timingChecker) pathClean(tk *tkey, from, to time.Duration, except int32, procs ...*tproc) bool {
	for _, p := range procs {
		if p != nil && p.disturbed(from, to) {
			return false
		}
	}
	for _, x := range tk.writes {
		if x.t <= from || x.t > to || x.proc == except {
			continue
		}
		onPath := false
		for _, p := range procs {
			onPath = onPath || (p != nil && c.proc(x.proc) == p)
		}
		if !onPath {
			return false
		}
	}
	for _, u := range c.unnamed {
		if u.overlaps(from, to) {
			return false
		}
	}
	for _, x := range tk.conflicts {
		if x.proc != except && x.t >= from && x.t <= to {
			return false
		}
	}
	for _, x := range tk.fails {
		if x.proc == except || x.t < from || x.t > to {
			continue
		}
		for _, p := range procs {
			if p != nil && c.proc(x.proc) == p {
				return false // a call of the path on the key failed
			}
		}
	}
	return true
}

// started is tenure t starting after prev on its key. A handoff whose old
// tenure is still open but released (its release's reply not in yet) is
// checked when that tenure ends, which says whether it was planned.
func (c *timingChecker) started(prev, t *tenure) {
	if prev == nil || prev.Proc == t.Proc {
		return
	}
	if prev.Open && prev.Released > 0 {
		prev.tnext = t
		return
	}
	c.handoff(&prev.Tenure, &t.Tenure, t.kt.ks)
}

// closedTenure is tenure t ending: a handoff waiting for it is checked.
func (c *timingChecker) closedTenure(t *tenure) {
	if n := t.tnext; n != nil {
		t.tnext = nil
		c.handoff(&t.Tenure, &n.Tenure, t.kt.ks)
	}
}

// handoff is tenure b starting after tenure a on their key, in another
// process: a failover (T1) or a planned move (T2), checked if its path
// was undisturbed.
func (c *timingChecker) handoff(a, b *Tenure, ks *keyState) {
	if len(c.out) >= c.o.max() || ks == nil || engine.IsReserved(b.Key) {
		return
	}
	gap, planned, ok := HandoffGap(a, b)
	if !ok {
		return
	}
	tk := c.key(ks)
	if tk.acqProc != b.Proc {
		return // acted on without a take the trace shows
	}
	B := c.proc(b.Proc)
	switch {
	case planned:
		c.plannedMove(a, b, tk, gap, B)
	case !c.tm.Capped:
		c.failover(a, b, tk, ks, gap, B)
	}
}

// lateApply returns when the last write of the key by proc that was sent
// by sentBy (the end of the old owner's tenure: a renewal sent while it
// held the lease) applied, if in (from, to]; else from.
func (c *timingChecker) lateApply(tk *tkey, proc int32, sentBy, from, to time.Duration) time.Duration {
	at := from
	for _, x := range tk.writes {
		if x.proc == proc && x.sent <= sentBy && x.t > at && x.t <= to {
			at = x.t
		}
	}
	return at
}

// assigneeRestarted reports whether B, which took the lease asg assigned
// to its owner id, started after asg applied, and the process of that id
// that was running then (if any) had no undisturbed chance to take it: it
// stopped within the index's lag, a poll interval and three round trips of
// the assignment, or was disturbed (a link cut or clogged, a failed scan
// or poll, a pause) until it stopped. Then the lease waited for the
// restart. A predecessor that had its chance and let it pass is no excuse.
func (c *timingChecker) assigneeRestarted(asg assignRec, B *tproc) bool {
	if B.start <= asg.t {
		return false
	}
	var prev *tproc
	for _, p := range c.procs {
		if p != nil && p != B && p.owner == B.owner && !p.alive && p.start <= asg.t && p.stop > asg.t &&
			(prev == nil || p.start > prev.start) {
			prev = p
		}
	}
	if prev == nil {
		return true // no process of the assignee's id was running
	}
	tm := c.tm
	chance := tm.IndexLag + tm.jit(tm.PendingPollInterval) + 3*prev.maxRTT(asg.t, prev.stop) + timingSlack
	return prev.stop-asg.t <= chance || prev.disturbed(asg.t, prev.stop)
}

// assignment returns the latest assignment of the key that applied in
// (from, to], and how many did.
func (tk *tkey) assignment(from, to time.Duration) (assignRec, int) {
	var last assignRec
	n := 0
	for _, x := range tk.assigns {
		if x.t > from && x.t <= to {
			last = x
			n++
		}
	}
	return last, n
}

// sessionTaken returns when p's latest take of its own session row in
// (from, to] applied.
func (p *tproc) sessionTaken(from, to time.Duration) (time.Duration, bool) {
	var at time.Duration
	ok := false
	for _, x := range p.session {
		if x.take && x.t > from && x.t <= to {
			at, ok = max(at, x.t), true
		}
	}
	return at, ok
}

// ownerStopped reports whether a process of owner stopped in [from, to].
func (c *timingChecker) ownerStopped(owner string, from, to time.Duration) bool {
	for _, p := range c.procs {
		if p != nil && p.owner == owner && !p.alive && p.stop >= from && p.stop <= to {
			return true
		}
	}
	return false
}

// assignedElsewhere reports whether an assignment of the key that
// applied in (from, to] named a worker other than owner (or none yet).
func (tk *tkey) assignedElsewhere(from, to time.Duration, owner string) bool {
	for _, x := range tk.assigns {
		if x.t > from && x.t <= to && x.to != owner {
			return true
		}
	}
	return false
}

// firstAssignment returns the earliest assignment of the key that applied
// in (from, to].
func (tk *tkey) firstAssignment(from, to time.Duration) assignRec {
	for _, x := range tk.assigns {
		if x.t > from && x.t <= to {
			return x
		}
	}
	return assignRec{}
}

func (c *timingChecker) failover(a, b *Tenure, tk *tkey, ks *keyState, gap time.Duration, B *tproc) {
	tm := c.tm
	from, to := a.Idle(), b.Start
	// the receiver a's release named: on its tenure, or, for a release
	// that applied after a stopped acting (its margin passed while the
	// release was throttled), on the release itself, which still handed
	// the lease to that receiver (soak seed 12202 of d8f57de: released to
	// a worker that then left)
	handedTo := a.HandedTo
	if handedTo == "" && tk.handedTo != "" && tk.handedProc == a.Proc && tk.handedAt >= a.EndT && tk.handedAt <= to {
		handedTo = tk.handedTo
	}
	if handedTo != "" && handedTo != b.Owner && c.ownerStopped(handedTo, a.Start, to) {
		// handed over to a receiver whose process stopped (before or
		// after the release) before it took the lease: the lease waits
		// for that receiver until the assigner counts it out of its
		// members (a crash of a process on the path; swarm seeds 125 and
		// 3243 with -renewal session)
		return
	}
	// The lease duration runs from the row's last change, which the old
	// owner's last write makes when it applies: a write in flight at its
	// last act that lands late (a clogged or slow link) starts it then.
	// A holder that stopped acting (its safety margin) still holds the
	// lease until its own view of expiry, and may renew until then: a
	// renewal it sent in that margin that applies restarts every taker's
	// timing as well (swarm seed 91 of h-untaken: a renewal sent 0.4 s
	// after it stopped acting, 1 ms before it lost the lease).
	sentBy := max(from, a.EndT)
	if a.EndedBy == trace.StoppedActing && tk.lostProc == a.Proc && tk.lostAt > sentBy && tk.lostAt <= to {
		sentBy = tk.lostAt
	}
	late := c.lateApply(tk, a.Proc, sentBy, from, to) - from
	// A later process of the old owner's id whose take of the row applied
	// but that never acted on it (its outcome unknown to it: an SDK retry,
	// then a cut) changed the row too: every taker times the lease from
	// that version (swarm seed 11818: a restart's take landed 5 s after
	// the crash of the process it replaced).
	// So did the old process itself with a take it sent after its tenure
	// ended (of its own expired row, as it came back from a pause) that
	// it never acted on, a second pause coming first (soak seed 35807 of
	// d8f57de, scan mode); a renewal sent then is no excuse (see sentBy).
	for _, x := range tk.writes {
		if x.proc == a.Proc && x.take && x.sent > sentBy && x.t > from+late && x.t <= to {
			late = x.t - from
			continue
		}
		if x.proc != a.Proc && x.proc != b.Proc && x.t > from+late && x.t <= to {
			if X := c.proc(x.proc); X != nil && X.owner == c.proc(a.Proc).owner && X.start > a.Start {
				late = x.t - from
			}
		}
	}
	// A lease bound to its holder's session runs its lease duration from
	// the session row's last change instead, when later; and the assigner
	// ends the session (one more write) before it assigns the lease.
	P := c.proc(a.Proc)
	session := len(P.session) > 0
	for _, x := range P.session {
		if x.sent <= sentBy && x.t > from+late && x.t <= to {
			late = x.t - from
		}
	}
	var bound time.Duration
	var how string
	restarted := false // the assignee's process stopped; its restart took the lease
	// an assignment the first receiver did not take (see below): when the
	// two assignments applied, to whom the first went, and the bound of
	// the time between them (0: none)
	var firstAt, secondAt, untakenBound time.Duration
	var firstTo string
	untakenBy := int32(-1) // the assigner that gave it twice
	direct := false
	var asgProc *tproc // the assigner that gave the lease to its new owner (nil: none)
	switch tk.acqReason {
	case "assigned":
		asg, n := tk.assignment(from, tk.acqT)
		direct = n == 0 // the assigner took it itself
		// untaken: the lease was assigned twice by one holding of the
		// assigner row, first (as expired, or its old assigner's) to a
		// worker that never took it, then to the new owner. The assigner
		// gives an assignment it wrote away once it has stood still for a
		// few of its receiver's polls (Timing.untakenWait), not a lease
		// duration: the bound is the first assignment's plus that wait and
		// the round trips of the assigner's reply to the first assignment,
		// its read of the row and its second assignment.
		// Nothing else in the bound stands for the first receiver: before,
		// such failovers were not checked at all (the assigner waited a
		// lease duration, or until the receiver left the member list).
		var untaken time.Duration
		second := asg
		switch {
		case direct:
			asg = assignRec{t: tk.acqT, by: b.Proc, to: b.Owner}
		case n == 2:
			first := tk.firstAssignment(from, tk.acqT)
			// (a lease its old owner released went to a receiver of its
			// choosing, which did not take it: the first assignment is
			// then already one of a lease given away untaken, whose
			// next waits twice as long)
			if a.Graceful || first.by != second.by || first.to == "" || first.to == b.Owner || second.to != b.Owner ||
				(first.why != "expired" && first.why != "held by the previous assigner") {
				return // the first one handed out a lease that was not held (its wait is not the first)
			}
			held, ok := c.asgHeld(first.by, first.t, second.t)
			if !ok {
				return // the assigner changed between the two
			}
			G := c.proc(first.by)
			if len(G.gaveUp) >= 64 {
				return // too many to tell how long its wait for this receiver was
			}
			asg = first
			untaken = tm.untakenWait(G.slowCount(first.to, held.from, second.t)) + 3*G.maxRTT(from, to)
			firstAt, secondAt, firstTo, untakenBy = first.t, second.t, first.to, first.by
			untakenBound = untaken + timingSlack
		case n != 1 || (asg.to != "" && asg.to != b.Owner):
			return // assigned more times, or to another worker that never took it
		case asg.to == "" && asg.by != b.Proc && c.isAssignerAt(b.Proc, tk.acqT):
			// an assigner that stopped before its trace named the
			// assignee (it crashed with its write in flight), the lease
			// then taken by a later assigner for itself: the assignment
			// went to another member, which never took it, and the later
			// assigner gave it away after waiting for that member (soak
			// seed 5920 of 1b4e506). Whom it waited for, the trace does not
			// say.
			return
		}
		for _, x := range tk.writes {
			if !direct && x.t > second.t && x.t < to && x.proc != b.Proc {
				// another write landed after the assignment (its assigner
				// took the lease itself, then died: swarm seed 207): the
				// new owner's take comes from a later decision
				return
			}
		}
		if restarted = !direct && c.assigneeRestarted(second, B); restarted && tm.FanOut {
			return // a restart registers its consumer first (as "resumed")
		}
		G := c.proc(asg.by)
		asgProc = G
		// after the assigner's decision: its assignment's round trip, the
		// index's lag, the new owner's poll, read and take (or, taken
		// directly, the assigner's take)
		after := func(rg, rb time.Duration) time.Duration {
			end := time.Duration(0)
			if session {
				end = rg
			}
			if direct {
				return end + 3*rb
			}
			return end + 3*rg + tm.IndexLag + tm.jit(tm.PendingPollInterval) + 3*rb
		}
		afterHow := "the index lag, a poll interval and the round trips of the assigner's scan and assignment and of the new owner's poll, read and take"
		if direct {
			afterHow = "the round trips of the assigner's scan and take"
		}
		if session {
			afterHow += " (and of the assigner's end of the old owner's session)"
		}
		if _, ok := c.asgHeld(asg.by, from, asg.t); ok {
			// a cut of the watch the new owner is told by (an etcd
			// world) across the assignment hides it until the stream
			// resumes, as for a planned move (T2)
			if !c.pathClean(tk, from, to, a.Proc, G, B) || B.cuts.cut(b.Owner, asg.t, to) {
				return
			}
			bound = late + tm.jit(tm.AssignerScanInterval) + tm.wait(tm.LeaseDuration) + after(G.maxRTT(from, to), B.maxRTT(from, to))
			how = "the assigner's scan interval (jittered), the lease duration, " + afterHow
			if c.procOwner(a.Proc) == G.owner {
				// the assigner's own lease, lost in its own view: it is
				// assigned at the assigner's next scan, not at its expiry
				bound += tm.jit(tm.AssignerScanInterval)
				how += ", and one more scan interval (the assigner's own lease is reassigned at its next scan)"
			}
			if untaken > 0 {
				bound += untaken
				how += ", and the wait for an assignment its receiver did not take (three poll intervals) with the round trips of the assigner's read and second assignment"
			}
			break
		}
		// The assigner changed once: the new one, from the moment it took
		// the row over (checked by T3), scans at once and times the lease
		// from then, or hands the leases of the old assigner, if that was
		// the old owner, out at once. The holding is the one the
		// assignment was made under; a holding before it in the window,
		// even of the same process (one it lost before it could act, its
		// take's reply too late: swarm seed 449), is another change.
		began, ok := c.asgBegan(asg.by, from, asg.t)
		if !ok || c.procOwner(began.prev) == G.owner || c.asgChanges(from, began.from) > 0 {
			// a restart under the same id resumes its predecessor's
			// leases; more changes are not accounted for
			return
		}
		if !c.pathClean(tk, began.from, to, a.Proc, G, B) || B.cuts.cut(b.Owner, asg.t, to) {
			return
		}
		rest := after(G.maxRTT(began.from, to), B.maxRTT(began.from, to))
		wait := tm.wait(tm.LeaseDuration)
		how = "the time until the assigner row was taken over, the lease duration, " + afterHow
		if P := c.proc(a.Proc); began.prev == a.Proc && (P.releasedRow == 0 || P.releasedRow < P.renewed) {
			// the old assigner's row expired: its leases went with it.
			// One that released its row (its shutdown ended with leases
			// still held) leaves them to be timed out like any other.
			wait = 0
			how = "the time until the assigner row was taken over, " + afterHow
		}
		bound = (max(began.from, from+late) - from) + wait + rest
		// the lease's last version may have come after the takeover
		bound = max(bound, late+tm.jit(tm.AssignerScanInterval)+tm.wait(tm.LeaseDuration)+rest)
		if wait > 0 && c.procOwner(a.Proc) == G.owner {
			// the new assigner's own lease, lost in its own view, as
			// above: reassigned at its next scan, not at its expiry (soak
			// seed 31231 of d8f57de)
			bound += tm.jit(tm.AssignerScanInterval)
			how += ", and one more scan interval (the assigner's own lease is reassigned at its next scan)"
		}
		if untaken > 0 {
			bound += untaken
			how += ", and the wait for an assignment its receiver did not take (three poll intervals) with the round trips of the assigner's read and second assignment"
		}
	case "expired", "stolen":
		if !c.pathClean(tk, from, to, a.Proc, B) {
			return
		}
		if c.othersStruck(from, to, a.Proc, b.Proc) || c.othersShuttingDown(from, to, a.Proc, b.Proc) {
			// A worker that takes leases itself takes expired ones only
			// up to its fair share, ceil(leases / workers), and every
			// worker whose rows still stand counts: one paused or cut off
			// the table, below its share, keeps the share out of the
			// others' reach until its own rows expire (swarm seed 69: the
			// new owner at its share for 3.5 s after the lease expired); so
			// does one in a graceful shutdown until it exits (soak seed 17654
			// of 1b4e506: a worker that released its last lease late)
			return
		}
		rb := B.maxRTT(from, to)
		bound = late + 2*tm.jit(tm.TakeInterval) + tm.wait(tm.LeaseDuration) + 5*rb
		how = "two take intervals (jittered), the lease duration and the round trips of the new owner's scans and take"
		if B.start > from {
			// a worker started since: it first saw the lease at its
			// first scan, at once; reading with fan-out, it scans only
			// once its consumers are registered and active, which the
			// trace shows it waited for (swarm seed 748: a registration
			// timed out, then in use, 9.6 s after the start)
			ready := B.start
			if tm.FanOut {
				ready = max(ready, B.registered)
			}
			bound = max(bound, (max(ready, from+late)-from)+tm.jit(tm.TakeInterval)+tm.wait(tm.LeaseDuration)+8*rb)
			how += " (or, as the new owner started after, the time until it started"
			if ready > B.start {
				how += " and its consumer registration ended"
			}
			how += ", a take interval, the lease duration and the round trips of its start-up checks, scans and take)"
		}
	case "resumed":
		// a restart under the same owner id resumes its own lease at once
		if c.procOwner(a.Proc) != b.Owner || B.start <= from || tm.FanOut {
			return
		}
		if !c.pathClean(tk, B.start, to, a.Proc, B) {
			return
		}
		rb := B.maxRTT(B.start, to)
		bound = (B.start - from) + 8*rb
		how = "the time until the process restarted and the round trips of its start-up checks, scan and take"
		if len(B.session) > 0 {
			// in session renewal it reads and takes its session row over
			// before its scan
			bound += 3 * rb
			how += ", and of its read and take of its session row"
		}
		if len(B.session) > 0 || tk.requested >= a.Start && tk.requested <= B.start {
			// a row that waits for it (a handoff request the assigner
			// wrote on it) is resumed from its first poll instead of its
			// scan (engine: resumeOwn), in either renewal (swarm seed
			// 9119: a request written while the old process was down)
			bound += tm.IndexLag + tm.jit(tm.PendingPollInterval) + 3*rb
			how += ", and the index lag, a poll interval and the round trips of its poll, read and take (a row with a handoff request waits for its poll)"
		}
		if tk.acqMarked && tm.Scan && !tm.Assigner {
			// the row still carried the mark of a steal whose thief (the
			// old owner) never wrote it again once it acted: whoever takes
			// it cannot tell how old the mark is, and waits the lease
			// duration from its read for the previous owner to stop
			// (explorer world t1-seed11)
			bound += tm.wait(tm.LeaseDuration)
			how += ", and the lease duration (the row still carried the mark of the old owner's steal)"
		}
	default:
		return
	}
	if restarted {
		// the assignee's process stopped before it could take the lease,
		// which waited for its restart under the same owner id: from the
		// restart, as a resume
		restart := 8 * B.maxRTT(B.start, to)
		if len(B.session) > 0 {
			restart += 3 * B.maxRTT(B.start, to) // its read and take of its session row first
		}
		bound = max(bound, (B.start-from)+restart)
		how += " (or, as the assignee's process stopped before it could take the lease, the time until its restart and the round trips of its start-up checks, session row, poll, read and take)"
	}
	if direct {
		// an assigner in session renewal takes no lease while it holds no
		// session row: one whose session was lost takes it again (its end
		// of the lost one, a read and a take), and takes leases from its
		// next scan after that (soak seed 31099 of d8f57de: the new
		// assigner's own session had expired under throttling)
		if at, ok := B.sessionTaken(from, to); ok {
			if sb := at - from + tm.jit(tm.AssignerScanInterval) + 3*B.maxRTT(from, to); sb > bound {
				bound = sb
				how += " (or, as the assigner took its own session row again first, the time until it did, its scan interval (jittered) and the round trips of its scan and take)"
			}
		}
		// the assigner's own leases are bound to its assigner row: one
		// it took while that row's renewal was late (past its margin)
		// waits for the row's next renewal to act (session-strike seed
		// 88, soak seed 2985)
		if G := c.proc(b.Proc); G.renewed > tk.acqT && G.renewed <= to {
			bound = max(bound, G.renewed-from+G.maxRTT(from, to))
			how += " (or, as the assigner took it while its own row's renewal was late, the time until that renewal applied)"
		}
	}
	if handedTo != "" && handedTo != b.Owner && tk.acqReason == "assigned" && untakenBound == 0 && asgProc != nil {
		// the old owner handed the lease to a receiver that never took it
		// (its release names the receiver; no assignment of the assigner
		// did): the assigner gives it away once it has stood untaken for
		// a lease duration in its view, the wait of a planned move's
		// release (docs/lease-rules.md), not the few polls of its own
		// assignments (swarm seed 18676; soak seed 34212 of d8f57de: a
		// new assigner, a receiver cut off whose session renewal applied
		// late)
		bound += tm.wait(tm.LeaseDuration) + 3*asgProc.maxRTT(from, to)
		how += ", and the wait for a handoff its receiver did not take (a lease duration) with the round trips of the assigner's read and assignment"
	}
	if pe, ok := ks.parentsEnd(); ok && pe > from {
		// A child shard is acted on only once its parents finished (S5):
		// a new owner that holds it rereads the parents every renew
		// interval, and the assigner (or a taker) hands it out only once
		// a scan shows them at SHARD_END; the failover waits for the last
		// parent to finish (swarm seed 18910: a restart resumed a child
		// whose parent's holder was paused 9 s)
		rtt := B.maxRTT(from, to)
		if asgProc != nil {
			rtt = max(rtt, asgProc.maxRTT(from, to))
		}
		learn := max(tm.jit(tm.RenewInterval), tm.jit(tm.TakeInterval), tm.jit(tm.AssignerScanInterval)+tm.IndexLag+tm.jit(tm.PendingPollInterval))
		if pb := pe - from + learn + 8*rtt; pb > bound {
			bound = pb
			how += " (or, as a parent shard finished after, the time until it did, the longest of the renew interval, the take interval and the assigner's scan with the index lag and a poll (jittered), and the round trips of the reads of the parents, the assignment and the take)"
		}
	}
	bound += timingSlack
	c.bounded[0]++
	if untakenBound > 0 {
		// the assignment the first receiver did not take stood no longer
		// than the wait for it and the round trips after it: the part of
		// the failover the receiver's lease duration used to stand for,
		// checked by itself (the rest of the bound is loose by a scan's
		// phase, which would hide a wait longer than it)
		c.bounded[0]++
		if stood := secondAt - firstAt; stood > untakenBound {
			c.judge(readKey{untakenBy, b.Key}, firstAt, secondAt, Violation{Invariant: T1, Key: b.Key, Workers: []string{b.who(), a.who()}, From: firstAt, To: secondAt,
				Seqs: []uint64{a.LastSeq, b.FirstSeq},
				Detail: "an assignment to " + firstTo + " that it did not take stood " + stood.String() + " (" + ratioD(stood, tm.LeaseDuration) + ") before the assigner gave the lease to " + b.Owner +
					", beyond its bound " + untakenBound.String() + " (three poll intervals and the round trips of the assigner's reply, read and second assignment)"})
			return
		}
	}
	if gap > bound {
		c.out = append(c.out, Violation{Invariant: T1, Key: b.Key, Workers: []string{b.who(), a.who()}, From: from, To: to,
			Seqs: []uint64{a.LastSeq, b.FirstSeq},
			Detail: "failover took " + gap.String() + " (" + ratioD(gap, tm.LeaseDuration) + "), beyond its bound " + bound.String() + " (" + ratioD(bound, tm.LeaseDuration) + ": " + how + "): " +
				a.who() + " last held the lease at " + from.String() + ", " + b.who() + " acted at " + to.String() + " (" + tk.acqReason + ")"})
	}
}

func (c *timingChecker) plannedMove(a, b *Tenure, tk *tkey, gap time.Duration, B *tproc) {
	tm := c.tm
	if !tm.Assigner || tm.Scan || tk.acqReason != "assigned" {
		return // scan-mode workers take released leases at their next scan
	}
	from, to := max(a.End, a.Released), b.Start
	A := c.proc(a.Proc)
	ra, rb := A.maxRTT(from, to), B.maxRTT(from, to)
	var bound time.Duration
	var how string
	asg, n := tk.assignment(from, tk.acqT)
	switch {
	case a.HandedTo != "":
		// released to the receiver: no assignment is needed (one that
		// names another worker means the receiver did not take it, even
		// if a later one gave the lease back to it: an index that lags
		// more than the assigner's wait for an untaken assignment)
		if (n != 0 && tk.assignedElsewhere(from, tk.acqT, b.Owner)) || B.cuts.cut(b.Owner, from, to) {
			return
		}
		bound = ra + tm.IndexLag + tm.jit(tm.PendingPollInterval) + 3*rb
		how = "the round trip of the release, the index lag, a poll interval and the round trips of the receiver's poll, read and take"
		if B.start > from {
			// The receiver's process stopped before it took the lease, or
			// was down when the lease was let go (seeds 703, 787), and a
			// new process under its owner id took it, from the rows that
			// wait for it that it reads at its start: from its restart,
			// its start-up checks, read of the index and take. A receiver
			// that lived undisturbed past the bound is held to the bound.
			R := c.procAt(b.Owner, from, b.Proc)
			// One that began a graceful shutdown takes no new lease: its
			// chance ended then (explorer world t2-seed23).
			// Its chance begins once a cut of its watch across the release
			// is over (soak seed 52235 of 01b4227: the receiver's watch was
			// cut just before the release, and the process crashed before
			// the watch resumed).
			if R == nil || R.lastChance()-max(from, R.cuts.cutEnd(b.Owner, from, R.lastChance())) <= bound+timingSlack || !c.pathClean(tk, from, R.lastChance(), -1, A, R) {
				if tm.FanOut {
					return // a restart registers its consumer first
				}
				bound = max(bound, (B.start-from)+8*B.maxRTT(B.start, to))
				how = "the time until the receiver restarted and the round trips of its start-up checks, read of the index and take"
			}
		}
		if !c.pathClean(tk, from, to, -1, A, B) {
			return
		}
	default:
		// a shutdown: released to the assigner, which hands it out
		if n != 1 || (asg.to != "" && asg.to != b.Owner) {
			return
		}
		G := c.proc(asg.by)
		if _, ok := c.asgHeld(asg.by, from, asg.t); !ok || asg.by == a.Proc {
			return // the assigner changed, or is the one shutting down
		}
		if !c.pathClean(tk, from, to, -1, A, G, B) || G.cuts.cut(engine.AssignerPending, from, to) || B.cuts.cut(b.Owner, from, to) {
			return
		}
		rg := G.maxRTT(from, to)
		bound = ra + tm.IndexLag + tm.jit(tm.PendingPollInterval) + 3*rg
		how = "the round trip of the release, the index lag, a poll interval and the round trips of the assigner's poll, read and assignment"
		if asg.by != b.Proc {
			bound += tm.IndexLag + tm.jit(tm.PendingPollInterval) + 3*rb
			how += ", and again for the new owner's poll, read and take"
		}
	}
	bound += timingSlack
	c.bounded[1]++
	if gap > bound {
		c.out = append(c.out, Violation{Invariant: T2, Key: b.Key, Workers: []string{b.who(), a.who()}, From: from, To: to,
			Seqs: []uint64{a.LastSeq, b.FirstSeq},
			Detail: "planned move took " + gap.String() + " (" + ratioD(gap, tm.LeaseDuration) + "), beyond its bound " + bound.String() + " (" + ratioD(bound, tm.LeaseDuration) + ": " + how + "): " +
				a.who() + " let the lease go at " + from.String() + ", " + b.who() + " acted at " + to.String()})
	}
}

// handedOver is r.Proc sending the release of a lease: a handoff under
// way ends within half a lease duration of its start (the holder releases
// then whatever its processor does), and a write of the lease in flight
// at that deadline.
func (c *timingChecker) handedOver(r *trace.Record) {
	tk := c.key(c.keys.get(r.Key))
	if tk.handing != r.Proc || len(c.out) >= c.o.max() {
		return
	}
	tm := c.tm
	from := tk.handAt
	tk.handing = -1
	P := c.proc(r.Proc)
	if !c.pathClean(tk, from, r.T, -1, P) {
		return
	}
	bound := tm.wait(tm.LeaseDuration/2) + 2*P.maxRTT(from, r.T) + timingSlack
	c.bounded[1]++
	if gap := r.T - from; gap > bound {
		c.out = append(c.out, Violation{Invariant: T2, Key: r.Key, Workers: []string{who(r)}, From: from, To: r.T, Seqs: []uint64{r.Seq},
			Detail: who(r) + " released the lease " + gap.String() + " (" + ratioD(gap, tm.LeaseDuration) + ") after it began handing it over, beyond half a lease duration and a write's round trip (" + bound.String() + "): the lease stayed being handed over"})
	}
}

// takeover is the assigner row taken by r.Proc after old held it: T3, if
// the fleet was steady and a deputy of old was alive and undisturbed.
func (c *timingChecker) takeover(old asgTenure, r *trace.Record) {
	tm := c.tm
	if !tm.Assigner || tm.Scan || len(c.out) >= c.o.max() {
		return
	}
	G := c.proc(old.proc)
	from := G.renewed
	how := "a poll interval (jittered), the lease duration and the round trips of the new assigner's reads and take"
	wait := tm.jit(tm.PendingPollInterval) + tm.wait(tm.LeaseDuration)
	if G.releasedRow > 0 && G.releasedRow >= G.renewed {
		from = G.releasedRow // released: taken at the next read
		wait = tm.jit(tm.PendingPollInterval)
		how = "a poll interval (jittered) and the round trips of the new assigner's read and take"
	}
	to := r.T
	if from <= 0 || from < old.from {
		return
	}
	// A take of the row by a third process that applied but never became
	// a holding (the process crashed before the reply) changed the row:
	// the deputies wait a lease duration from that version (swarm seed
	// 2767: a new assigner crashed 8 ms after its take landed).
	for i := 0; i < min(c.nAsgWrite, len(c.asgWrites)); i++ {
		x := c.asgWrites[i]
		if x.proc != old.proc && x.proc != r.Proc && x.t > from && x.t < to {
			from = x.t
			wait = tm.jit(tm.PendingPollInterval) + tm.wait(tm.LeaseDuration)
			how = "a poll interval (jittered), the lease duration from the take of a process that never acted on it, and the round trips of the new assigner's reads and take"
		}
	}
	if old.prev >= 0 && c.procOwner(old.prev) != G.owner && (from-old.from < tm.jit(2*tm.LeaseDuration)+tm.jit(tm.PendingPollInterval) ||
		from-old.from < 3*tm.RenewInterval+tm.jit(tm.AssignerScanInterval)+tm.jit(2*tm.LeaseDuration)+tm.jit(tm.PendingPollInterval) && c.inheritedGone(old)) {
		// old took the row over from another worker: a worker that was
		// no deputy of that one reads the row every two lease durations,
		// and learns that it is a deputy of old only at that read (swarm
		// seed 240 with session renewal: the deputy's read came 4.6 s
		// after the row's last write). The list it learns that from is
		// old's own only once old has counted out the members it
		// inherited that are gone (two renew intervals and a scan) and
		// renewed the row with it, when a member other than the previous
		// holder stopped shortly before the takeover (soak seed 22359 of
		// 548bb91: a dead member inherited from the previous assigner
		// stood before the deputy in the list for 7 s, and the deputy's
		// next read came 11.5 s after the one that showed it)
		return
	}
	// The deputies: the two live owners after the old assigner's in the
	// sorted list, which is the assigner's member list when no worker but
	// it started or stopped since long enough for that list to settle.
	// With one such change the list may still name one worker the live
	// fleet does not (or lack one it does), which displaces at most one
	// of the two: both must then be up to the job, else one suffices. Up
	// to the job: alive meanwhile, not paused, every read of the assigner
	// row answered.
	win := from - tm.settle()
	changes := c.fleetChanges(win, to, old.proc)
	if changes > 1 {
		return
	}
	N := c.proc(r.Proc)
	var rtt time.Duration
	able := 0
	deps := c.deputies(G.owner)
	for _, d := range deps {
		// (a deputy reads the assigner row only once its start-up is
		// over: from its first poll of the index or read of the row on;
		// one still starting,
		// its stream calls throttled, takes nothing over: swarm seed 2131
		// with -renewal session)
		// (nor one that began a graceful shutdown before the row was
		// taken over: it takes nothing more; swarm seed 5608)
		if p := c.proc(d); p.alive && p.start < win && p.scanned && p.scannedAt < from && !p.asgDisturbed(win, to) && (p.down == 0 || p.down >= to) {
			able++
			rtt = max(rtt, p.maxRTT(from, to))
		}
	}
	if able == 0 || (changes == 1 && able < len(deps)) {
		return
	}
	rtt = max(rtt, N.maxRTT(from, to))
	bound := wait + 3*rtt + timingSlack
	c.bounded[2]++
	if gap := to - from; gap > bound {
		c.out = append(c.out, Violation{Invariant: T3, Key: engine.AssignerKey, Workers: []string{who(r), G.owner + "#" + itoa(int(old.proc))}, From: from, To: to,
			Seqs:   []uint64{r.Seq},
			Detail: "the assigner row was taken over " + gap.String() + " (" + ratioD(gap, tm.LeaseDuration) + ") after its holder last wrote it, beyond the bound " + bound.String() + " (" + how + ")"})
	}
}

// deputies returns the live processes of the (at most) two owners that
// follow owner in the sorted list of live owners: the assigner's deputies
// in a fleet whose member list is its live workers.
func (c *timingChecker) deputies(owner string) []int32 {
	var owners []string
	for o := range c.live {
		if o != owner {
			owners = append(owners, o)
		}
	}
	slices.Sort(owners)
	// the two after owner, wrapping around
	i := 0
	for i < len(owners) && owners[i] < owner {
		i++
	}
	var out []int32
	for k := 0; k < engine.Deputies && k < len(owners); k++ {
		out = append(out, c.live[owners[(i+k)%len(owners)]])
	}
	return out
}

// procAt returns the latest process of owner but except that was alive at
// t, if any.
func (c *timingChecker) procAt(owner string, t time.Duration, except int32) *tproc {
	var out *tproc
	for id, p := range c.procs {
		if p != nil && int32(id) != except && p.owner == owner && p.start <= t && (p.alive || p.stop >= t) &&
			(out == nil || p.start > out.start) {
			out = p
		}
	}
	return out
}

func (c *timingChecker) procOwner(proc int32) string {
	if p := c.proc(proc); p != nil {
		return p.owner
	}
	return ""
}

// ratioD renders d in lease durations.
func ratioD(d, lease time.Duration) string {
	if lease <= 0 {
		return "?"
	}
	return strconv.FormatFloat(float64(d)/float64(lease), 'f', 2, 64) + " D"
}
