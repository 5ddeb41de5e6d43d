package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

var (
	errTimeout   = errors.New("sim: call timed out (unknown outcome)")
	errTransient = errors.New("sim: 500 internal server error (unknown outcome)")
	// errRetryThrottled: an SDK retry of a write that had applied was
	// throttled; the caller cannot tell whether the write applied.
	errRetryThrottled = errors.New("sim: throttled after a retried attempt that may have applied (unknown outcome)")
	errThrottled      = fmt.Errorf("sim: %w", engine.ErrThrottled)
	// errExpiredIter is the injected expired-iterator fault.
	errExpiredIter = fmt.Errorf("sim: injected: %w", engine.ErrExpiredIterator)
	// errUnfencedMissing fails an unconditional write (a planted bug) of
	// a row that does not exist: even without its condition, an update
	// needs the row.
	errUnfencedMissing = fmt.Errorf("sim: unconditional write of a missing row: %w", engine.ErrConditionFailed)
)

// network is the virtual network between the processes and the table and
// stream: the calls in flight, in numbered slots (the events name them).
// A burst of calls (every worker's shard sync at the start) grows the
// slots; the calls themselves are freed again, but for a few kept for
// reuse.
type network struct {
	rng   rng // latency, loss, and every per-call fault draw
	calls []*inflight
	free  []int       // free slots
	spare []*inflight // calls kept for reuse
}

// maxSpare is how many finished calls the network keeps for reuse.
const maxSpare = 1024

// inflight is one call on the virtual network.
type inflight struct {
	call    engine.Call
	proc    int32
	sent    time.Duration
	applied time.Duration
	// in is the input that delivers the call's result (in.Result) to
	// its process: built in place, never copied
	in       engine.Input
	answered bool
	pending  int
	reason   string
	fault    string
	retried  bool          // an SDK retry of the write was sent
	applyAt  time.Duration // when its (first) apply is scheduled
	late     bool          // its reply comes just under the timeout (boundary.go)
	lateAt   time.Duration // its reply comes at this time, if later (boundary.go)
	held     bool          // its apply was held back once (boundary.go)
	holdGen  uint32        // the generation of its held apply (boundary.go)
	lastAct  bool          // a page of records held for its process's last moment on a lease (boundary.go)
	// freshIndex: a pending-index read released by an assignment to its
	// reader reads the index fresh (boundary.go)
	freshIndex bool
	// learnt: the caller learnt the write's outcome (a reply it could read
	// as applied, not applied or throttled reached its live process)
	learnt bool
	// ops are the operations the write belongs to (ops.go), aim what an
	// aimed fault does to it (aim.go)
	ops     []uint32
	opsDone bool
	aim     aimMark
}

// link is one process's connection to the table or the stream.
type link struct {
	lat       Latency
	cutReq    bool
	cutRep    bool
	clogUntil time.Duration
	clogExtra time.Duration
}

// newCall puts a copy of c on the network and returns its slot.
func (n *network) newCall(c *engine.Call, p *proc, now time.Duration) int {
	var i int
	if k := len(n.free); k > 0 {
		i = n.free[k-1]
		n.free = n.free[:k-1]
	} else {
		n.calls = append(n.calls, nil)
		i = len(n.calls) - 1
	}
	var f *inflight
	if k := len(n.spare); k > 0 {
		f = n.spare[k-1]
		n.spare = n.spare[:k-1]
	} else {
		f = &inflight{}
	}
	f.call = *c
	if c.Op == engine.OpCreateLease || c.Op == engine.OpUpdateLease {
		f.call.Lease = c.Lease.Clone() // what was sent, whatever the engine does next
	}
	f.proc, f.sent, f.applied = p.id, now, -1
	n.calls[i] = f
	return i
}

// release frees call slot i once the call is answered and no event of it
// is pending. A store write whose outcome its caller never learnt ends
// with a trace.KindCallEnd: from now on it cannot reach the table.
func (s *simulator) release(i int) {
	n := &s.net
	f := n.calls[i]
	if f.pending != 0 || !f.answered {
		return
	}
	if len(f.ops) > 0 && !f.opsDone {
		s.opDone(s.cl.procs[f.proc], i, f, false)
	}
	if f.call.Op.IsWrite() && !f.learnt {
		r := trace.Record{Kind: trace.KindCallEnd, Key: leaseKey(&f.call), Call: f.call.ID, Op: f.call.Op, Sent: f.sent, Applied: f.applied,
			Reason: f.reason, Fault: f.fault}
		s.emit(s.procRec(s.cl.procs[f.proc], &r))
	}
	n.calls[i] = nil
	n.free = append(n.free, i)
	if len(n.spare) < maxSpare {
		*f = inflight{}
		n.spare = append(n.spare, f)
	}
}

func (s *simulator) schedCall(i int, at time.Duration, k evKind) {
	s.net.calls[i].pending++
	s.q.push(event{at: at, kind: k, a: uint64(i)})
}

func (s *simulator) linkOf(p *proc, op engine.Op) *link {
	sl := s.cl.slots[p.slot]
	if op.IsStore() {
		return &sl.table
	}
	return &sl.stream
}

func (s *simulator) latency(l *link) time.Duration {
	d := l.lat.draw(s.net.rng)
	if s.now < l.clogUntil {
		d += l.clogExtra
	}
	if d < 100*time.Microsecond {
		d = 100 * time.Microsecond
	}
	return d
}

// send puts a call of p on the network: it is lost (and times out), or
// reaches the table or stream after the link's latency.
func (s *simulator) send(p *proc, c *engine.Call) {
	i := s.net.newCall(c, p, s.now)
	f := s.net.calls[i]
	if c.Op.IsWrite() {
		f.reason = s.cl.writeClass(c)
		r := trace.Record{Kind: trace.KindSend, Key: leaseKey(c), Call: c.ID, Op: c.Op, Reason: f.reason,
			ExpOwner: c.Expect.Owner, ExpCounter: c.Expect.Counter, RowOwner: c.Lease.Owner, Counter: c.Lease.Counter, Checkpoint: c.Lease.Checkpoint}
		s.emit(s.procRec(p, &r))
		s.opSent(p, i, f)
		s.syncRaceSend(p, f) // syncrace.go
		s.strikeSend(p, f)   // strike.go
	}
	l := s.linkOf(p, c.Op)
	deadline := s.now + s.timeoutOf(c)
	if aimed := s.aimSend(p, f); aimed || l.cutReq || s.net.rng.chance(s.rate(s.w.Rates.RequestLoss)) {
		switch {
		case aimed:
			f.fault = f.aim.name("request-lost")
		case l.cutReq:
			f.fault = "partition"
		default:
			f.fault = "request-lost"
		}
		s.opCallFault(f)
		s.schedCall(i, deadline, evTimeout)
		return
	}
	at := s.now + s.latency(l)
	f.applyAt = at
	s.schedCall(i, at, evApply)
	if at > deadline {
		s.schedCall(i, deadline, evTimeout)
	}
}

// writeClass names the kind of a store write (trace.Write*): the reason
// the engine gave when it sent it (the first of stepSent with its key and
// counter), or one read from the write itself.
func (cl *cluster) writeClass(c *engine.Call) string {
	key, counter := c.Lease.Key, c.Lease.Counter
	if c.Op == engine.OpDeleteLease {
		key, counter = c.Key, 0
	}
	if sent := cl.stepSent; len(sent) <= 16 {
		for _, si := range sent {
			if si.key == key && si.counter == counter && si.reason != "" {
				return si.reason
			}
		}
	} else {
		if cl.sentBy == nil {
			cl.sentBy = make(map[sentKey]string, len(sent))
			for _, si := range sent {
				if _, ok := cl.sentBy[sentKey{si.key, si.counter}]; !ok && si.reason != "" {
					cl.sentBy[sentKey{si.key, si.counter}] = si.reason
				}
			}
		}
		if r, ok := cl.sentBy[sentKey{key, counter}]; ok {
			return r
		}
	}
	switch c.Op {
	case engine.OpCreateLease:
		return trace.WriteCreate
	case engine.OpDeleteLease:
		return trace.WriteDelete
	case engine.OpUpdateLease:
		if c.Lease.Owner != c.Expect.Owner {
			if c.Lease.Owner == "" {
				if c.Lease.Checkpoint.IsShardEnd() {
					return trace.WriteShardEnd
				}
				return trace.WriteRelease
			}
			return trace.WriteTake
		}
		return trace.WriteRenew
	}
	return ""
}

func leaseKey(c *engine.Call) string {
	switch c.Op {
	case engine.OpCreateLease, engine.OpUpdateLease:
		return c.Lease.Key
	case engine.OpDeleteLease, engine.OpGetLease:
		return c.Key
	case engine.OpGetIterator, engine.OpSubscribe, engine.OpNextEvent, engine.OpUnsubscribe:
		return c.Shard
	}
	return ""
}

func outcome(err error) string {
	if o, ok := trace.EngineOutcome(err); ok {
		return o
	}
	switch {
	case errors.Is(err, errTimeout):
		return trace.OutcomeTimeout
	case errors.Is(err, errTransient):
		return trace.OutcomeTransient
	}
	return trace.OutcomeError
}

// onReply delivers a call's result (or its timeout) to its process.
func (s *simulator) onReply(i int, timeout bool) {
	f := s.net.calls[i]
	f.pending--
	if f.answered {
		s.release(i)
		return
	}
	f.answered = true
	if timeout {
		f.in.Result = engine.Result{ID: f.call.ID, Err: errTimeout}
	}
	if timeout {
		s.opCallFault(f)
	}
	res := &f.in.Result
	p := s.cl.procs[f.proc]
	if p.alive {
		switch o := outcome(res.Err); {
		case o == trace.OutcomeOK:
			f.learnt = true
		case o == trace.OutcomeCondition || o == trace.OutcomeThrottled:
			f.learnt = !f.retried // a retry's failure may hide an applied attempt
		}
		if o := outcome(res.Err); o != trace.OutcomeOK && o != trace.OutcomeThrottled {
			s.noteUnknown(p, f) // the engine reads the row to resolve it
		}
		if f.call.Op == engine.OpListLeases && res.Err == nil {
			s.observed(p, &res.Listing)
		}
		if f.call.Op == engine.OpGetLease && res.Err == nil {
			s.readReplied(p, f) // boundary.go
		}
		r := trace.Record{Kind: trace.KindReply, Key: s.callKey(&f.call), Call: f.call.ID, Op: f.call.Op, Sent: f.sent, Applied: f.applied,
			Outcome: outcome(res.Err), Fault: f.fault, Reason: f.reason}
		switch f.call.Op {
		case engine.OpGetRecords:
			r.Count = len(res.Page.Records)
		case engine.OpNextEvent:
			r.Count = len(res.Event.Records)
		case engine.OpListPending:
			r.Count = len(res.Listing.Leases)
		case engine.OpGetLease:
			// the row the read returned, for the linearizability check
			// (linearizability.FromTrace)
			if res.Err == nil {
				r.RowOwner, r.Counter, r.Checkpoint = res.Lease.Owner, res.Lease.Counter, res.Lease.Checkpoint
			}
		case engine.OpListLeases:
			// the read mode and the row count (the rows are not recorded)
			r.Reason = "eventual"
			if f.call.Consistent {
				r.Reason = "consistent"
			}
			r.Count = len(res.Listing.Leases)
		}
		s.emit(s.procRec(p, &r))
		f.in.Kind = engine.InputResult
		s.syncRaceReply(f) // syncrace.go
		if r.Count == 0 || (f.call.Op != engine.OpGetRecords && f.call.Op != engine.OpNextEvent) || !s.pauseMidDelivery(p, f, &f.in) {
			s.deliver(p, &f.in)
		}
		if f.call.Op == engine.OpListLeases && f.call.Consistent && res.Err == nil {
			s.strikeAfterScan(p) // strike.go
		}
	}
	s.release(i)
}
