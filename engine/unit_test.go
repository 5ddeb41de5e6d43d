package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// unit drives one Worker at the Step level, with exact times. Calls are
// executed at once against a MemStore and a tStream unless hold keeps them
// for the test to answer by hand (reply), or fault answers them. Every call
// and notice the worker hands out is logged with the time it was handed out.
//
// The processor is automatic unless told otherwise: Initialize, ShardEnded
// and ShutdownRequested are answered with Done at once, Records too unless
// holdRecords is set; kinds in holdNotices are left to the test.
type unit struct {
	t      *testing.T
	w      *Worker
	now    time.Duration
	wake   time.Duration
	store  *MemStore
	stream *tStream
	trace  []TraceEvent

	hold        func(Call) bool
	fault       func(Call) (Result, bool)
	holdRecords bool
	holdNotices map[NoticeKind]bool // kinds the test answers itself

	// testStart makes the start-up check's calls (forStart) go through
	// hold, fault and the log like any other; by default they are
	// answered by the store and the stream directly and not logged, so
	// that a test starts where the worker starts taking leases.
	testStart bool

	// afterStep, if set, runs after every Step
	afterStep func()

	out     []Call // calls held for reply, in order
	sent    []timedCall
	notices []timedNotice
	stopped bool
	inbox   []Input
	token   uint64
}

type timedCall struct {
	at time.Duration
	c  Call
}

type timedNotice struct {
	at time.Duration
	n  Notice
}

const me = "me"

// newUnit returns a worker "me" (unless cfg names an owner) consuming stream
// "s" from TRIM_HORIZON (unless cfg names streams), not yet stepped.
func newUnit(t *testing.T, cfg Config) *unit {
	t.Helper()
	u := &unit{t: t, store: NewMemStore(), stream: &tStream{recs: map[string][]Record{}}}
	if cfg.Owner == "" {
		cfg.Owner = me
	}
	if len(cfg.Streams) == 0 {
		cfg.Streams = []StreamConfig{{Name: "s", InitialPosition: TrimHorizon}}
	}
	if cfg.Assignment == "" {
		cfg.Assignment = AssignmentScan // the tests of the take rules; assigned mode has its own
	}
	cfg.Trace = func(e TraceEvent) { u.trace = append(u.trace, e) }
	plantFromEnv(&cfg)
	w, err := NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u.w = w
	return u
}

// put stores row in the table, and the stream markers a table written by
// this version of the engine has, if they are missing.
func (u *unit) put(row Lease) {
	u.t.Helper()
	ctx := context.Background()
	u.mark()
	if cur, err := u.store.GetLease(ctx, row.Key); err == nil {
		if err := u.store.UpdateLease(ctx, ExpectOf(cur), row); err != nil {
			u.t.Fatal(err)
		}
		return
	}
	if err := u.store.CreateLease(ctx, row); err != nil {
		u.t.Fatal(err)
	}
}

// mark writes the stream marker of each of the worker's streams, as the
// first worker on a table does, unless it is there.
func (u *unit) mark() {
	ctx := context.Background()
	for _, sc := range u.w.cfg.Streams {
		key := u.w.keys.MarkerKey(sc.Name)
		if _, err := u.store.GetLease(ctx, key); err == nil {
			continue
		}
		info, _ := u.stream.DescribeStream(ctx, sc.Name)
		if err := u.store.CreateLease(ctx, markerRow(key, info.Identity())); err != nil {
			u.t.Fatal(err)
		}
	}
}

func (u *unit) row(key string) Lease {
	u.t.Helper()
	l, err := u.store.GetLease(context.Background(), key)
	if err != nil {
		u.t.Fatalf("row %s: %v", key, err)
	}
	return l
}

// step feeds in at u.now, then every result and processor answer that
// follows from it.
func (u *unit) step(in Input) {
	u.inbox = append(u.inbox, in)
	for len(u.inbox) > 0 {
		in := u.inbox[0]
		u.inbox = u.inbox[1:]
		rd := u.w.Step(Now{Mono: u.now, Wall: time.Unix(1_700_000_000, 0).Add(u.now)}, in)
		u.wake = rd.WakeAt
		u.stopped = rd.Stopped
		if u.afterStep != nil {
			u.afterStep()
		}
		calls := slices.Clone(rd.Calls)
		notices := slices.Clone(rd.Notices)
		for _, c := range calls {
			if !u.testStart && u.w.pending[c.ID].purpose == forStart {
				// The start-up check runs against the store and the stream
				// as they are, unseen by the test (see testStart).
				u.inbox = append(u.inbox, Input{Kind: InputResult, Result: Execute(context.Background(), u.store, u.stream, c)})
				continue
			}
			u.sent = append(u.sent, timedCall{u.now, c})
			if u.hold != nil && u.hold(c) {
				u.out = append(u.out, c)
				continue
			}
			u.inbox = append(u.inbox, Input{Kind: InputResult, Result: u.exec(c)})
		}
		for _, n := range notices {
			u.notices = append(u.notices, timedNotice{u.now, n})
			if u.holdNotices[n.Kind] {
				continue
			}
			switch n.Kind {
			case NoticeInitialize, NoticeShardEnded, NoticeShutdownRequested:
				u.inbox = append(u.inbox, Input{Kind: InputDone, Key: n.Key, Batch: n.Batch})
			case NoticeRecords:
				if !u.holdRecords {
					u.inbox = append(u.inbox, Input{Kind: InputDone, Key: n.Key, Batch: n.Batch})
				}
			}
		}
	}
}

// exec answers c as the environment would: fault first, else the store and
// the stream.
func (u *unit) exec(c Call) Result {
	if u.fault != nil {
		if r, ok := u.fault(c); ok {
			r.ID = c.ID
			return r
		}
	}
	return Execute(context.Background(), u.store, u.stream, c)
}

func (u *unit) tick() { u.step(Input{Kind: InputTick}) }

// runTo steps the worker at every WakeAt up to t, then at t.
func (u *unit) runTo(t time.Duration) {
	u.t.Helper()
	if t < u.now {
		u.t.Fatalf("runTo(%v) at %v", t, u.now)
	}
	for !u.stopped && u.wake > u.now && u.wake <= t {
		u.now = u.wake
		u.tick()
	}
	u.now = t
	u.tick()
}

// pending returns the first held call of op (and key, if not empty).
func (u *unit) pending(op Op, key string) (Call, bool) {
	for _, c := range u.out {
		if c.Op == op && (key == "" || callKey(c) == key) {
			return c, true
		}
	}
	return Call{}, false
}

func (u *unit) mustPending(op Op, key string) Call {
	u.t.Helper()
	c, ok := u.pending(op, key)
	if !ok {
		u.t.Fatalf("at %v: no %s(%s) pending; pending: %v", u.now, op, key, u.out)
	}
	return c
}

// reply answers the held call c with r at u.now.
func (u *unit) reply(c Call, r Result) {
	u.t.Helper()
	i := slices.IndexFunc(u.out, func(o Call) bool { return o.ID == c.ID })
	if i < 0 {
		u.t.Fatalf("reply to %v, which is not pending", c)
	}
	u.out = slices.Delete(u.out, i, i+1)
	r.ID = c.ID
	u.step(Input{Kind: InputResult, Result: r})
}

// apply executes the held call c against the store now and returns its
// result without feeding it back (the reply can then be lost or delayed).
func (u *unit) apply(c Call) Result {
	return Execute(context.Background(), u.store, u.stream, c)
}

func callKey(c Call) string {
	switch c.Op {
	case OpCreateLease, OpUpdateLease:
		return c.Lease.Key
	case OpGetIterator, OpSubscribe, OpNextEvent, OpUnsubscribe:
		return c.Shard
	}
	return c.Key
}

// sentOf returns the calls of op (and key) sent in [from, to].
func (u *unit) sentOf(op Op, key string, from, to time.Duration) []timedCall {
	var out []timedCall
	for _, s := range u.sent {
		if s.c.Op == op && (key == "" || callKey(s.c) == key) && s.at >= from && s.at <= to {
			out = append(out, s)
		}
	}
	return out
}

// noticesOf returns the notices of kind (and key).
func (u *unit) noticesOf(kind NoticeKind, key string) []timedNotice {
	var out []timedNotice
	for _, n := range u.notices {
		if n.n.Kind == kind && (key == "" || n.n.Key == key) {
			out = append(out, n)
		}
	}
	return out
}

func (u *unit) traceOf(kind TraceKind, key string) []TraceEvent {
	var out []TraceEvent
	for _, e := range u.trace {
		if e.Kind == kind && (key == "" || e.Key == key) {
			out = append(out, e)
		}
	}
	return out
}

// checkpoint asks for cp on key and returns the CheckpointDone answer, if
// the worker answered at once.
func (u *unit) checkpoint(key string, cp Checkpoint) (Notice, bool) {
	u.t.Helper()
	u.token++
	token := u.token
	u.step(Input{Kind: InputCheckpoint, Key: key, Checkpoint: cp, Token: token})
	for _, n := range u.notices {
		if n.n.Kind == NoticeCheckpointDone && n.n.Token == token {
			return n.n, true
		}
	}
	return Notice{}, false
}

func (u *unit) dump() string {
	var b strings.Builder
	for _, e := range u.trace {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// holding starts u at time 0 on one unowned lease row (key, checkpoint cp)
// of a shard with the given records, and runs until the worker holds it,
// has initialized its processor and delivered the records. Every call is
// answered at once. It returns the key.
func (u *unit) holding(key string, cp Checkpoint, records int) string {
	u.t.Helper()
	u.stream.add(key)
	u.stream.put(key, records)
	u.put(Lease{Key: key, Checkpoint: cp})
	u.tick()
	if !u.w.Acting(key) {
		u.t.Fatalf("not acting on %s after the first step:\n%s", key, u.dump())
	}
	if records > 0 && len(u.noticesOf(NoticeRecords, key)) == 0 {
		u.t.Fatalf("no records delivered:\n%s", u.dump())
	}
	return key
}
