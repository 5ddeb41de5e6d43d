package driversim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Errors of injected faults. None wraps an engine sentinel: to the engine
// each is a failure of unknown outcome, as a 5xx or a broken connection
// is.
var (
	errTransient = errors.New("driversim: 500 internal server error (injected)")
	errConn      = errors.New("driversim: connection refused (a partition)")
)

// fateKind is what happens to one call.
type fateKind uint8

const (
	fateOK          fateKind = iota
	fateThrottle             // refused at once: ErrThrottled, not applied
	fateCutFail              // a partition: fails at once, not applied
	fateLost                 // the request is lost: hangs until its deadline, not applied
	fateHangAfter            // applied, then the reply never comes: hangs until its deadline
	fateLostReply            // applied, then the reply is an error
	fateCrashedNode          // the caller has crashed: hangs until its deadline, not applied
)

var fateNames = [...]string{"", "throttled", "partition", "request-lost", "reply-lost", "reply-error", "crashed"}

// fate is the draw of one call: its latency each way and what happens.
type fate struct {
	kind     fateKind
	req, rep time.Duration
	// jitter separates the replies of calls that would reach the consumer
	// at one instant (two calls of one Step that both time out, replies
	// held by a pause): goroutines woken at one instant of the bubble's
	// time run in an order the seed does not fix
	jitter time.Duration
}

// drawFate draws the fate of a call of op by the node; the caller holds
// w.mu.
func (n *node) drawFate(op engine.Op, key string) fate {
	w := n.w
	if n.dead {
		return fate{kind: fateCrashedNode}
	}
	// each call draws from its own stream, named by the node, the call's
	// op and key and how many such calls came before it: two calls that
	// reach the store in either order draw the same
	ck := callKey{op, key}
	n.keyCalls[ck]++
	r := newRNG(n.seed^splitmix(uint64(op)<<32|uint64(n.keyCalls[ck])), hashString(key))
	f := fate{req: 200*time.Microsecond + r.exp(time.Millisecond), rep: 200*time.Microsecond + r.exp(time.Millisecond),
		jitter: time.Duration(1 + r.IntN(100_000))}
	if w.healed {
		return f
	}
	now := time.Now()
	cut := n.cutStream
	if op.IsStore() {
		cut = n.cutStore
	}
	rt := w.w.Rates
	switch {
	case now.Before(cut):
		f.kind = fateCutFail
		if n.cutHang {
			f.kind = fateLost
		}
	case r.chance(rt.Throttle):
		f.kind = fateThrottle
		w.stats.Throttled++
	case r.chance(rt.Timeout):
		f.kind = fateLost
		if op.IsWrite() && r.chance(0.5) {
			f.kind = fateHangAfter
		}
		w.stats.Timeouts++
	case op.IsWrite() && r.chance(rt.LostReply):
		f.kind = fateLostReply
		w.stats.LostReplies++
	}
	if r.chance(rt.SlowCall) {
		// a slow call: either way, up to past the call timeout
		extra := r.between(0, w.w.CallTimeout*3/2)
		if r.chance(0.5) {
			f.req += extra
		} else {
			f.rep += extra
		}
		w.stats.SlowCalls++
	}
	return f
}

// travel waits d, or until ctx is done; it reports whether the call is
// still on time.
func travel(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// callSpec describes a call for the history.
type callSpec struct {
	op     engine.Op
	key    string
	expect engine.Expect
	lease  engine.Lease
	draw   string // names the call's draws, if not key (GetRecords: the iterator)
	// park, if set, holds the call at the service once it has arrived,
	// before it is applied (a NextEvent with nothing to push)
	park func(context.Context)
}

// call runs one call of the node through the network to the fakes: the
// request travels, do runs against the fake under the world's lock (for
// writes a KindApply records its outcome), the reply travels back and is
// read once the node is not paused. fill adds a successful reply's fields
// to its record. Sends, applies and replies are recorded in true time
// (GetRecords and NextEvent replies are not: the checkers do not read
// them).
func (n *node) call(ctx context.Context, c *callSpec, do func(context.Context) error, fill func(*trace.Record)) error {
	w := n.w
	w.mu.Lock()
	w.calls++
	t := callTrace{id: w.calls, applied: -1}
	if c.op.IsWrite() && !n.dead {
		t.class = n.class(c.op, c.key, c.expect, c.lease)
		n.recordSend(c, &t)
		t.sendRecorded = true
	}
	draw := c.draw
	if draw == "" {
		draw = c.key
	}
	f := n.drawFate(c.op, draw)
	t.sent = w.now()
	w.mu.Unlock()

	err := n.travelAndApply(ctx, c, &f, &t, do)
	if t.sendRecorded && !definite(err) {
		// no attempt of the write can reach the table any more, and its
		// caller will not learn whether it applied
		n.recordCallEnd(c, &t, f.kind)
	}
	// a paused process reads its reply when it wakes
	n.waitThawed()
	time.Sleep(f.jitter)
	if c.op != engine.OpGetRecords && c.op != engine.OpNextEvent {
		n.recordReply(c, &t, f.kind, err, fill)
	}
	return err
}

// callTrace is what the records of one call share.
type callTrace struct {
	id      uint64
	class   string
	sent    time.Duration
	applied time.Duration // -1: not applied
	// sendRecorded: the write's KindSend is in the history (a crashed
	// node's writes have none)
	sendRecorded bool
}

// travelAndApply carries one call to the fake and back as its fate says.
func (n *node) travelAndApply(ctx context.Context, c *callSpec, f *fate, t *callTrace, do func(context.Context) error) error {
	if !travel(ctx, f.req) {
		return ctx.Err()
	}
	switch f.kind {
	case fateThrottle:
		travel(ctx, f.rep)
		return fmt.Errorf("driversim: %s: %w (injected)", c.op, engine.ErrThrottled)
	case fateCutFail:
		return errConn
	case fateLost:
		<-ctx.Done()
		return ctx.Err()
	case fateCrashedNode:
		<-ctx.Done()
		return errCrashed
	}
	if c.park != nil {
		c.park(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	w := n.w
	w.mu.Lock()
	err := do(ctx)
	if c.op.IsWrite() {
		if err == nil {
			t.applied = w.now()
		}
		n.recordApply(c, t, f.kind, err)
	}
	w.mu.Unlock()
	switch f.kind {
	case fateHangAfter:
		<-ctx.Done()
		return ctx.Err()
	case fateLostReply:
		travel(ctx, f.rep)
		return errTransient
	}
	if !travel(ctx, f.rep) {
		return ctx.Err()
	}
	return err
}

// recordSend records a write leaving the node; the caller holds w.mu.
func (n *node) recordSend(c *callSpec, t *callTrace) {
	n.emit(&trace.Record{Kind: trace.KindSend, Key: c.key, Call: t.id, Op: c.op, Reason: t.class,
		ExpOwner: c.expect.Owner, ExpCounter: c.expect.Counter, RowOwner: c.lease.Owner, Counter: c.lease.Counter, Checkpoint: c.lease.Checkpoint})
}

// recordApply records a write reaching the table; the caller holds w.mu.
func (n *node) recordApply(c *callSpec, t *callTrace, k fateKind, err error) {
	n.emit(&trace.Record{Kind: trace.KindApply, Key: c.key, Call: t.id, Op: c.op, Reason: t.class, Sent: t.sent, Applied: t.applied,
		ExpOwner: c.expect.Owner, ExpCounter: c.expect.Counter, RowOwner: c.lease.Owner, Counter: c.lease.Counter,
		Checkpoint: c.lease.Checkpoint, Outcome: outcome(err), Fault: fateNames[k]})
}

// recordReply records a call's reply reaching the node.
func (n *node) recordReply(c *callSpec, t *callTrace, k fateKind, err error, fill func(*trace.Record)) {
	n.w.mu.Lock()
	defer n.w.mu.Unlock()
	if n.dead {
		if t.sendRecorded && definite(err) {
			// the process died before it read the reply: the call is over
			// all the same (one of unknown outcome had its KindCallEnd)
			n.emitCallEnd(c, t, k)
		}
		return
	}
	r := trace.Record{Kind: trace.KindReply, Key: c.key, Call: t.id, Op: c.op, Reason: t.class, Sent: t.sent, Applied: t.applied,
		Outcome: outcome(err), Fault: fateNames[k]}
	if err == nil && fill != nil {
		fill(&r)
	}
	n.emit(&r)
}

// recordCallEnd records that a write can no longer reach the table
// (trace.KindCallEnd), as the simulator does for a write whose outcome
// its caller never learns: the linearizability check then knows the write
// took effect, if at all, before now.
func (n *node) recordCallEnd(c *callSpec, t *callTrace, k fateKind) {
	n.w.mu.Lock()
	defer n.w.mu.Unlock()
	n.emitCallEnd(c, t, k)
}

// emitCallEnd is recordCallEnd with w.mu held.
func (n *node) emitCallEnd(c *callSpec, t *callTrace, k fateKind) {
	n.emit(&trace.Record{Kind: trace.KindCallEnd, Key: c.key, Call: t.id, Op: c.op, Reason: t.class, Sent: t.sent, Applied: t.applied,
		Fault: fateNames[k]})
}

// definite reports whether a call that ended with err tells its caller
// whether it applied: it did (nil), or it did not (a failed condition, a
// throttled call, a missing row). Timeouts, 5xx and broken connections
// leave it unknown.
func definite(err error) bool {
	switch outcome(err) {
	case trace.OutcomeOK, trace.OutcomeCondition, trace.OutcomeThrottled, trace.OutcomeNotFound:
		return true
	}
	return false
}

// outcome names the outcome of a call's error as the history does.
func outcome(err error) string {
	if o, ok := trace.EngineOutcome(err); ok {
		return o
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, errCrashed):
		return trace.OutcomeTimeout
	case errors.Is(err, errTransient):
		return trace.OutcomeTransient
	}
	return trace.OutcomeError
}

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
