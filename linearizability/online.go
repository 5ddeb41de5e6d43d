package linearizability

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Online checks the lease-table history of a simulator trace as the trace
// is recorded, one key at a time, in windows: a key's calls are cut where
// none of them is in flight, and each window is checked from the states
// the key may be in after the windows before it (usually one). Its memory
// is the calls in flight and the open windows, not the history.
//
// The calls are taken from the records as FromTrace takes them, with one
// difference: a write whose outcome its caller never learnt is bounded by
// the trace.KindCallEnd record that the simulator writes once no attempt
// of it can reach the table any more. It may have applied anywhere between
// its send and then, or not at all; FromTrace lets it apply at any time
// after its send (a recorder above the network cannot know more). A write
// of unknown outcome with no KindCallEnd stays open until Finish.
//
// A read (GetLease) has no record before its reply, so a window is closed
// only when every read that could still be reported (sent within
// Config.ReadLag before the record being observed) would start after it.
//
// Each window is searched exhaustively for the states its linearizations
// may end in. A window whose search needs more than Config.Budget steps
// makes its key unknown (the check of that key stops there; it is not a
// pass). Zero Budget is DefaultBudget.
type Online struct {
	cfg   OnlineConfig
	calls map[callKey]*ocall
	keys  map[string]*okey
	now   time.Duration
	res   OnlineResult
	free  []*kop
	// freeCalls are finished calls kept for reuse
	freeCalls []*ocall
}

// OnlineConfig configures an Online.
type OnlineConfig struct {
	// ReadLag is the longest time from a read's send to its reply (the
	// call timeout): a reply later than that is a timeout, which observed
	// nothing.
	ReadLag time.Duration
	// Budget bounds the search of one window (0: DefaultBudget).
	Budget int
}

// DefaultBudget is the search budget of one window.
const DefaultBudget = 1 << 16

// OnlineResult is the verdict of an Online check.
type OnlineResult struct {
	// Illegal are the keys whose histories are not linearizable, sorted;
	// Windows[i] is the true-time window of the first window of Illegal[i]
	// found not linearizable.
	Illegal []string
	Windows [][2]time.Duration
	// TimedOut are the keys whose check ran out of budget, sorted: not a
	// pass.
	TimedOut []string
	// Ops is the number of calls checked, Keys the number of keys, Writes
	// of unknown outcome among the calls, Skipped the calls left out
	// (throttled); Checks the windows checked.
	Ops, Keys, UnknownWrites, Skipped, Checks int
}

// Ok reports whether every key is linearizable and none ran out of budget.
func (r OnlineResult) Ok() bool { return len(r.Illegal) == 0 && len(r.TimedOut) == 0 }

// ocall is a call in flight, as its records have told so far.
type ocall struct {
	op      *kop
	key     *okey
	applies int
	retried bool
	replied bool
}

// okey is one key's check.
type okey struct {
	name     string
	frontier []ostate // the states the key may be in after the windows checked
	spare    []ostate // the next frontier's storage
	open     []*kop   // calls not yet in a checked window, by call time
	counted  bool
	illegal  bool
	unknown  bool
}

// NewOnline returns an Online before the first record.
func NewOnline(cfg OnlineConfig) *Online {
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	return &Online{cfg: cfg, calls: map[callKey]*ocall{}, keys: map[string]*okey{}}
}

func (o *Online) key(name string) *okey {
	k := o.keys[name]
	if k == nil {
		k = &okey{name: name, frontier: []ostate{{}}}
		o.keys[name] = k
	}
	return k
}

// maxFree is how many finished calls an Online keeps for reuse (a burst of
// calls in flight, as at the start of a run, is freed again).
const maxFree = 1024

func (o *Online) recycle(op *kop) {
	if len(o.free) < maxFree {
		o.free = append(o.free, op)
	}
}

func (o *Online) newOp() *kop {
	if n := len(o.free); n > 0 {
		op := o.free[n-1]
		o.free = o.free[:n-1]
		*op = kop{}
		return op
	}
	return &kop{}
}

// Observe feeds one record; it keeps no reference to r.
func (o *Online) Observe(r *trace.Record) {
	switch r.Kind {
	case trace.KindSend, trace.KindApply, trace.KindReply, trace.KindCallEnd:
	default:
		return
	}
	if r.Op != engine.OpGetLease && !r.Op.IsWrite() {
		return // scans: the trace does not carry their rows
	}
	if engine.IsWorkerRow(r.Key) {
		return // workers' hello and leaving rows hold no lease (see FromTrace)
	}
	o.now = r.T
	ck := callKey{r.Proc, r.Call}
	c := o.calls[ck]
	switch r.Kind {
	case trace.KindSend:
		if c != nil || !r.Op.IsWrite() {
			return
		}
		c = o.write(r, int64(r.T))
		o.calls[ck] = c
	case trace.KindApply:
		if c == nil {
			// no KindSend (a history that records only what the table
			// saw): the apply carries the same call fields
			c = o.write(r, int64(r.Sent))
			o.calls[ck] = c
		}
		c.applies++
		if r.Fault == "sdk-retry" {
			c.retried = true
		}
	case trace.KindReply:
		if !r.Op.IsWrite() {
			o.read(r)
			return
		}
		if c == nil || c.replied {
			return
		}
		c.replied = true
		var out Outcome
		switch r.Outcome {
		case trace.OutcomeOK:
			out = OutcomeOK
		case trace.OutcomeCondition:
			out = OutcomeConditionFailed
		case trace.OutcomeThrottled:
			out = OutcomeThrottled
		default:
			out = OutcomeUnknown
		}
		if (c.retried || c.applies > 1) && out != OutcomeOK {
			out = OutcomeUnknown
		}
		k := c.key
		switch out {
		case OutcomeThrottled:
			// rejected before it applied: left out
			o.res.Skipped++
			o.drop(c)
			o.endCall(ck, c)
		case OutcomeUnknown:
			c.op.outcome = OutcomeUnknown // until its KindCallEnd
		default:
			c.op.outcome = out
			o.complete(c, int64(r.T))
			o.endCall(ck, c)
		}
		o.close(k)
	case trace.KindCallEnd:
		if c == nil {
			return
		}
		k := c.key
		c.op.outcome = OutcomeUnknown
		o.complete(c, int64(r.T))
		o.endCall(ck, c)
		o.close(k)
	}
}

// endCall forgets a call whose op is complete (or dropped).
func (o *Online) endCall(ck callKey, c *ocall) {
	delete(o.calls, ck)
	if len(o.freeCalls) < maxFree {
		*c = ocall{}
		o.freeCalls = append(o.freeCalls, c)
	}
}

// write starts the op of a write at call time t.
func (o *Online) write(r *trace.Record, t int64) *ocall {
	k := o.key(r.Key)
	op := o.newOp()
	op.call, op.ret = t, math.MaxInt64
	op.op, op.unconditional, op.outcome = r.Op, r.Unconditional, OutcomeUnknown
	if r.Op != engine.OpCreateLease {
		op.exp = engine.Expect{Owner: r.ExpOwner, Counter: r.ExpCounter}
	}
	if r.Op != engine.OpDeleteLease {
		op.row = trow{owner: r.RowOwner, counter: r.Counter, cp: r.Checkpoint}
	}
	o.insert(k, op)
	var c *ocall
	if n := len(o.freeCalls); n > 0 {
		c = o.freeCalls[n-1]
		o.freeCalls = o.freeCalls[:n-1]
	} else {
		c = &ocall{}
	}
	c.op, c.key = op, k
	return c
}

// read adds a GetLease that returned something.
func (o *Online) read(r *trace.Record) {
	var out Outcome
	switch r.Outcome {
	case trace.OutcomeOK:
		if r.Checkpoint.Sequence == "" {
			return // the record does not carry the row
		}
		out = OutcomeOK
	case trace.OutcomeNotFound:
		out = OutcomeNotFound
	default:
		return // observed nothing
	}
	k := o.key(r.Key)
	op := o.newOp()
	op.call, op.ret, op.done = int64(r.Sent), int64(r.T), true
	op.op, op.outcome = engine.OpGetLease, out
	if out == OutcomeOK {
		op.row = trow{owner: r.RowOwner, counter: r.Counter, cp: r.Checkpoint}
	}
	o.insert(k, op)
	o.close(k)
}

// insert adds op to k's open calls, in call-time order.
func (o *Online) insert(k *okey, op *kop) {
	if n := len(k.open); n == 0 || k.open[n-1].call <= op.call {
		k.open = append(k.open, op) // a write, sent now
		return
	}
	i := len(k.open)
	for i > 0 && k.open[i-1].call > op.call {
		i--
	}
	k.open = slices.Insert(k.open, i, op)
}

func (o *Online) complete(c *ocall, ret int64) {
	c.op.ret, c.op.done = ret, true
}

// drop removes a call left out of the check from its key.
func (o *Online) drop(c *ocall) {
	k := c.key
	if i := slices.Index(k.open, c.op); i >= 0 {
		k.open = slices.Delete(k.open, i, i+1)
	}
	o.recycle(c.op)
}

// close checks the windows of k that no call can join any more.
func (o *Online) close(k *okey) { o.closeUntil(k, int64(o.now-o.cfg.ReadLag), false) }

// closeUntil checks every window of k that ends before limit (every
// window, at the end).
func (o *Online) closeUntil(k *okey, limit int64, atEnd bool) {
	for len(k.open) > 0 {
		last := int64(math.MinInt64)
		j := 0
		for j < len(k.open) {
			op := k.open[j]
			if j > 0 && op.call > last {
				break
			}
			if !op.done {
				return // a call in flight
			}
			last = max(last, op.ret)
			j++
		}
		if !atEnd && last >= limit {
			return // a read not yet reported could still join it
		}
		o.check(k, k.open[:j])
		for _, op := range k.open[:j] {
			o.recycle(op)
		}
		n := copy(k.open, k.open[j:])
		clear(k.open[n:])
		k.open = k.open[:n]
	}
}

// check checks one window of k.
func (o *Online) check(k *okey, w []*kop) {
	if !k.counted {
		k.counted = true
		o.res.Keys++
	}
	o.res.Ops += len(w)
	for _, op := range w {
		if op.outcome == OutcomeUnknown {
			o.res.UnknownWrites++
		}
	}
	if k.illegal || k.unknown {
		return
	}
	o.res.Checks++
	next, ok := search(k.frontier, w, o.cfg.Budget, k.spare[:0])
	switch {
	case !ok || len(next) > maxFrontier:
		k.unknown = true
		k.frontier = nil
		o.res.TimedOut = insertSorted(o.res.TimedOut, k.name)
	case len(next) == 0:
		k.illegal = true
		k.frontier = nil
		from, to := w[0].call, w[0].call
		for _, op := range w {
			from = min(from, op.call)
			to = max(to, op.call)
			if op.ret != math.MaxInt64 {
				to = max(to, op.ret)
			}
		}
		i := sort.SearchStrings(o.res.Illegal, k.name)
		o.res.Illegal = slices.Insert(o.res.Illegal, i, k.name)
		o.res.Windows = slices.Insert(o.res.Windows, i, [2]time.Duration{time.Duration(from), time.Duration(to)})
	default:
		k.frontier, k.spare = next, k.frontier
	}
}

// maxFrontier is the most states a key may be in at once before its check
// gives up (unknown writes whose conditions held, none observed since).
const maxFrontier = 64

func insertSorted(s []string, v string) []string {
	i := sort.SearchStrings(s, v)
	return slices.Insert(s, i, v)
}

// Finish checks every open window (a write of unknown outcome still open
// may apply at any time after its send) and returns the verdict.
func (o *Online) Finish() OnlineResult {
	for _, c := range o.calls {
		o.complete(c, math.MaxInt64)
	}
	clear(o.calls)
	for _, name := range sortedNames(o.keys) {
		o.closeUntil(o.keys[name], math.MaxInt64, true)
	}
	return o.res
}

func sortedNames(m map[string]*okey) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
