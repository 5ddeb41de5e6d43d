package history

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Observer receives what a Tap sees, for metrics. Its methods are called
// concurrently.
type Observer interface {
	// Trace gets every engine trace event.
	Trace(e engine.TraceEvent)
	// StoreCall gets every lease-table call: its op, the write class for
	// writes (take, renew, checkpoint, shard-end, release, create, delete;
	// "" for reads), how long it took and its outcome (trace.Outcome*).
	StoreCall(op engine.Op, class string, d time.Duration, outcome string)
	// Processed gets every batch a processor handled without error.
	Processed(shard engine.ShardRef, records int, millisBehind int64)
}

// Tap observes one worker: its engine trace, its lease-table calls (timed),
// its iterator requests and its record processors. It records them with a
// Recorder (if any) and reports them to an Observer (if any).
type Tap struct {
	rec *Recorder
	obs Observer
	now func() time.Time

	mu      sync.Mutex
	classes map[classKey][]string // write class by (key, counter written)
	calls   atomic.Uint64
}

type classKey struct {
	key     string
	counter int64
}

// NewTap returns a Tap recording to rec and reporting to obs; either may
// be nil.
func NewTap(rec *Recorder, obs Observer) *Tap {
	return &Tap{rec: rec, obs: obs, now: time.Now, classes: map[classKey][]string{}}
}

// Tracer returns the engine.Tracer to set as Config.Trace.
func (t *Tap) Tracer() engine.Tracer {
	return func(e engine.TraceEvent) {
		if e.Kind == engine.TraceCallSent {
			// The engine emits this inside Step, before the driver makes
			// the call: remember the write's class for Store to find.
			k := classKey{e.Key, e.Counter}
			t.mu.Lock()
			t.classes[k] = append(t.classes[k], e.Reason)
			t.mu.Unlock()
		}
		if t.obs != nil {
			t.obs.Trace(e)
		}
		if t.rec != nil {
			t.rec.Write(trace.Record{
				Kind: trace.FromEngine(e.Kind), Mono: e.Mono, Owner: e.Owner, Key: e.Key, Counter: e.Counter,
				Checkpoint: e.Checkpoint, First: e.First, Last: e.Last, FirstSub: int32(e.FirstSub), LastSub: int32(e.LastSub),
				Count: e.Count, Reason: e.Reason, Previous: e.Previous,
			})
		}
	}
}

// class returns the class of a write of key producing counter, as the
// engine named it, or one inferred from the call.
func (t *Tap) class(op engine.Op, key string, expect engine.Expect, l engine.Lease) string {
	k := classKey{key, l.Counter}
	t.mu.Lock()
	if cs := t.classes[k]; len(cs) > 0 {
		c := cs[0]
		if len(cs) == 1 {
			delete(t.classes, k)
		} else {
			t.classes[k] = cs[1:]
		}
		t.mu.Unlock()
		return c
	}
	t.mu.Unlock()
	switch {
	case op == engine.OpCreateLease:
		return trace.WriteCreate
	case op == engine.OpDeleteLease:
		return trace.WriteDelete
	case l.Checkpoint.IsShardEnd() && l.Owner == "":
		return "shard-end"
	case l.Owner == "":
		return trace.WriteRelease
	case l.Owner != expect.Owner:
		return trace.WriteTake
	}
	return trace.WriteRenew
}

// Outcome classifies a call's error as the trace format names it.
func Outcome(err error) string {
	if o, ok := trace.EngineOutcome(err); ok {
		return o
	}
	var apiErr smithy.APIError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return trace.OutcomeTimeout
	case errors.As(err, &apiErr) && apiErr.ErrorFault() == smithy.FaultServer:
		return trace.OutcomeTransient
	case errors.As(err, &netErr) && netErr.Timeout():
		return trace.OutcomeTimeout
	}
	return trace.OutcomeError
}

// Store returns s wrapped so that every call is timed, reported and
// recorded. A store that pushes what waits for a worker
// (engine.PendingWatcher) stays one; its watches are not recorded.
func (t *Tap) Store(s engine.LeaseStore) engine.LeaseStore {
	ts := &tapStore{t: t, next: s}
	if pw, ok := s.(engine.PendingWatcher); ok {
		return &tapWatching{tapStore: ts, pw: pw}
	}
	return ts
}

// tapWatching is the tap of a store that implements engine.PendingWatcher.
type tapWatching struct {
	*tapStore
	pw engine.PendingWatcher
}

// WatchPending starts a watch of the wrapped store.
func (s *tapWatching) WatchPending(ctx context.Context, who string) (engine.PendingWatch, error) {
	return s.pw.WatchPending(ctx, who)
}

type tapStore struct {
	t    *Tap
	next engine.LeaseStore
}

// begin records a write leaving and returns its call id and send time.
func (s *tapStore) begin(op engine.Op, key, class string, expect engine.Expect, l engine.Lease) (uint64, time.Time) {
	id := s.t.calls.Add(1)
	now := s.t.now()
	if s.t.rec != nil && op.IsWrite() {
		s.t.rec.Write(trace.Record{T: Stamp(now), Wall: now.UnixNano(), Kind: trace.KindSend, Call: id, Op: op, Key: key,
			Reason: class, Counter: l.Counter, Checkpoint: l.Checkpoint, RowOwner: l.Owner,
			ExpOwner: expect.Owner, ExpCounter: expect.Counter})
	}
	return id, now
}

// end records and reports a call's reply; fill adds the result's fields.
func (s *tapStore) end(id uint64, op engine.Op, key, class string, sent time.Time, err error, fill func(r *trace.Record)) {
	now := s.t.now()
	out := Outcome(err)
	if s.t.obs != nil {
		s.t.obs.StoreCall(op, class, now.Sub(sent), out)
	}
	if s.t.rec == nil {
		return
	}
	r := trace.Record{T: Stamp(now), Wall: now.UnixNano(), Kind: trace.KindReply, Call: id, Op: op, Key: key, Reason: class,
		Sent: Stamp(sent), Outcome: out}
	if err != nil && out != trace.OutcomeOK {
		r.Fault = truncate(err.Error(), 200)
	}
	if fill != nil && err == nil {
		fill(&r)
	}
	s.t.rec.Write(r)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (s *tapStore) ListLeases(ctx context.Context, consistent bool) (engine.Listing, error) {
	id, sent := s.begin(engine.OpListLeases, "", "", engine.Expect{}, engine.Lease{})
	l, err := s.next.ListLeases(ctx, consistent)
	s.end(id, engine.OpListLeases, "", "", sent, err, func(r *trace.Record) {
		r.Count = len(l.Leases)
		r.Reason = ScanEventual
		if consistent {
			// the rows, for the linearizability check (see EncodeScanRows)
			r.Reason, r.Previous = ScanConsistent, EncodeScanRows(l)
		}
	})
	return l, err
}

func (s *tapStore) GetLease(ctx context.Context, key string) (engine.Lease, error) {
	id, sent := s.begin(engine.OpGetLease, key, "", engine.Expect{}, engine.Lease{})
	l, err := s.next.GetLease(ctx, key)
	s.end(id, engine.OpGetLease, key, "", sent, err, func(r *trace.Record) {
		r.RowOwner, r.Counter, r.Checkpoint = l.Owner, l.Counter, l.Checkpoint
	})
	return l, err
}

func (s *tapStore) CreateLease(ctx context.Context, l engine.Lease) error {
	class := s.t.class(engine.OpCreateLease, l.Key, engine.Expect{}, l)
	id, sent := s.begin(engine.OpCreateLease, l.Key, class, engine.Expect{}, l)
	err := s.next.CreateLease(ctx, l)
	s.end(id, engine.OpCreateLease, l.Key, class, sent, err, nil)
	return err
}

func (s *tapStore) UpdateLease(ctx context.Context, expect engine.Expect, l engine.Lease) error {
	class := s.t.class(engine.OpUpdateLease, l.Key, expect, l)
	id, sent := s.begin(engine.OpUpdateLease, l.Key, class, expect, l)
	err := s.next.UpdateLease(ctx, expect, l)
	s.end(id, engine.OpUpdateLease, l.Key, class, sent, err, nil)
	return err
}

func (s *tapStore) DeleteLease(ctx context.Context, key string, expect engine.Expect) error {
	class := s.t.class(engine.OpDeleteLease, key, expect, engine.Lease{})
	id, sent := s.begin(engine.OpDeleteLease, key, class, expect, engine.Lease{})
	err := s.next.DeleteLease(ctx, key, expect)
	s.end(id, engine.OpDeleteLease, key, class, sent, err, nil)
	return err
}

// Stream returns s wrapped so that GetShardIterator replies are recorded
// (they say where a LATEST start began reading).
// A stream with enhanced fan-out stays one, and its SubscribeToShard
// replies are recorded too.
func (t *Tap) Stream(s engine.Stream) engine.Stream {
	ts := &tapStream{t: t, next: s}
	if fo, ok := s.(engine.FanOutStream); ok {
		return &tapFanOut{tapStream: ts, fo: fo}
	}
	return ts
}

type tapStream struct {
	t    *Tap
	next engine.Stream
}

func (s *tapStream) DescribeStream(ctx context.Context, stream string) (engine.StreamInfo, error) {
	return s.next.DescribeStream(ctx, stream)
}

func (s *tapStream) ListShards(ctx context.Context, stream string) ([]engine.Shard, error) {
	return s.next.ListShards(ctx, stream)
}

func (s *tapStream) GetShardIterator(ctx context.Context, stream, shard string, pos engine.Position) (string, error) {
	sent := s.t.now()
	it, err := s.next.GetShardIterator(ctx, stream, shard, pos)
	if s.t.rec != nil {
		now := s.t.now()
		s.t.rec.Write(trace.Record{T: Stamp(now), Wall: now.UnixNano(), Kind: trace.KindReply, Op: engine.OpGetIterator,
			Call: s.t.calls.Add(1), Key: shard, Reason: string(pos.Type), First: pos.Sequence, Sent: Stamp(sent), Outcome: Outcome(err)})
	}
	return it, err
}

func (s *tapStream) GetRecords(ctx context.Context, iterator string, limit int) (engine.RecordsPage, error) {
	return s.next.GetRecords(ctx, iterator, limit)
}

// Processors returns f wrapped so that what each processor sees is
// recorded and reported.
func (t *Tap) Processors(f engine.ProcessorFactory) engine.ProcessorFactory {
	return func(shard engine.ShardRef) engine.Processor {
		return &tapProc{t: t, next: f(shard), shard: shard}
	}
}

type tapProc struct {
	t     *Tap
	next  engine.Processor
	shard engine.ShardRef
	key   string
}

func (p *tapProc) Initialize(ctx context.Context, in engine.InitInput) error {
	p.key = in.Key
	p.t.rec.Write(trace.Record{Kind: trace.KindInitialized, Key: in.Key, Checkpoint: in.Start})
	return p.next.Initialize(ctx, in)
}

func (p *tapProc) ProcessRecords(ctx context.Context, in engine.RecordsInput) error {
	// positions are user records: (sequence, sub-sequence)
	first, last := "", ""
	var firstSub, lastSub int32
	if n := len(in.Records); n > 0 {
		first, last = in.Records[0].Sequence, in.Records[n-1].Sequence
		firstSub, lastSub = int32(in.Records[0].SubSequence), int32(in.Records[n-1].SubSequence)
	}
	p.t.rec.Write(trace.Record{Kind: trace.KindReceived, Key: p.key, First: first, Last: last, FirstSub: firstSub, LastSub: lastSub, Count: len(in.Records)})
	in.Checkpointer = tapCheckpointer{p: p, next: in.Checkpointer}
	err := p.next.ProcessRecords(ctx, in)
	done := trace.Record{Kind: trace.KindDone, Key: p.key, Reason: "ok", Count: len(in.Records)}
	if err != nil {
		done.Reason, done.First, done.Last, done.FirstSub, done.LastSub = "failed", first, last, firstSub, lastSub
	} else if p.t.obs != nil {
		p.t.obs.Processed(p.shard, len(in.Records), in.MillisBehind)
	}
	p.t.rec.Write(done)
	return err
}

func (p *tapProc) ShardEnded(ctx context.Context, in engine.ShardEndedInput) error {
	p.t.rec.Write(trace.Record{Kind: trace.KindNotice, Key: p.key, Reason: "ShardEnded"})
	in.Checkpointer = tapCheckpointer{p: p, next: in.Checkpointer}
	return p.next.ShardEnded(ctx, in)
}

func (p *tapProc) ShutdownRequested(ctx context.Context, in engine.ShutdownInput) error {
	p.t.rec.Write(trace.Record{Kind: trace.KindNotice, Key: p.key, Reason: "ShutdownRequested"})
	in.Checkpointer = tapCheckpointer{p: p, next: in.Checkpointer}
	return p.next.ShutdownRequested(ctx, in)
}

func (p *tapProc) LeaseLost(ctx context.Context, in engine.LeaseLostInput) {
	p.t.rec.Write(trace.Record{Kind: trace.KindNotice, Key: p.key, Reason: "LeaseLost"})
	p.next.LeaseLost(ctx, in)
}

type tapCheckpointer struct {
	p    *tapProc
	next engine.Checkpointer
}

func (c tapCheckpointer) Checkpoint(ctx context.Context, cp engine.Checkpoint) error {
	err := c.next.Checkpoint(ctx, cp)
	out := trace.OutcomeOK
	switch {
	case err == nil:
	case errors.Is(err, engine.ErrLeaseLost):
		out = "lease-lost"
	case errors.Is(err, engine.ErrCheckpointRejected):
		out = "rejected"
	default:
		out = Outcome(err)
	}
	c.p.t.rec.Write(trace.Record{Kind: trace.KindCheckpointAck, Key: c.p.key, Checkpoint: cp, Outcome: out})
	return err
}

// CheckTable passes the wrapped store's table check through (see
// engine.TableChecker), so that a tapped store is checked at start as the
// store itself would be.
func (s *tapStore) CheckTable(ctx context.Context) error {
	if tc, ok := s.next.(engine.TableChecker); ok {
		return tc.CheckTable(ctx)
	}
	return nil
}

// ListPending passes the wrapped store's pending index through (see
// engine.PendingIndex; engine.ErrNoIndex if it has none). The index is
// eventually consistent, so its reads are not part of the history the
// linearizability check reads.
func (s *tapStore) ListPending(ctx context.Context, who string) ([]engine.Lease, error) {
	if pi, ok := s.next.(engine.PendingIndex); ok {
		return pi.ListPending(ctx, who)
	}
	return nil, fmt.Errorf("list pending %s: %w", who, engine.ErrNoIndex)
}
