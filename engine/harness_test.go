package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tStream is a tiny in-test Kinesis: shards with records, closing, and
// iterators "shard|index". The full fake lives in fakes/; this one keeps
// engine tests free of other packages.
type tStream struct {
	shards []Shard
	recs   map[string][]Record
	seq    int
	// childShards makes GetRecords report children at shard end.
	childShards bool
	// fo holds consumers and subscriptions (see fanout_harness_test.go).
	fo *tFanOut
	// generation is added to the stream's creation time: a test bumps it
	// to re-create the stream.
	generation int64
}

func newTStream(n int) *tStream {
	s := &tStream{recs: map[string][]Record{}}
	for i := 0; i < n; i++ {
		s.add(fmt.Sprintf("shardId-%012d", i))
	}
	return s
}

func (s *tStream) add(id string, parents ...string) {
	sh := Shard{ID: id}
	if len(parents) > 0 {
		sh.Parent = parents[0]
	}
	if len(parents) > 1 {
		sh.AdjacentParent = parents[1]
	}
	s.shards = append(s.shards, sh)
}

func (s *tStream) put(shard string, n int) []string {
	var seqs []string
	for i := 0; i < n; i++ {
		s.seq++
		seq := fmt.Sprintf("4959%052d", s.seq)
		s.recs[shard] = append(s.recs[shard], Record{Sequence: seq, PartitionKey: strconv.Itoa(s.seq)})
		seqs = append(seqs, seq)
	}
	return seqs
}

func (s *tStream) close(id string) {
	for i := range s.shards {
		if s.shards[i].ID == id {
			s.shards[i].EndingSequence = "99"
		}
	}
}

// split closes parent and adds two children.
func (s *tStream) split(parent, a, b string) {
	s.close(parent)
	s.add(a, parent)
	s.add(b, parent)
}

func (s *tStream) merge(p1, p2, child string) {
	s.close(p1)
	s.close(p2)
	s.add(child, p1, p2)
}

func (s *tStream) shard(id string) *Shard {
	for i := range s.shards {
		if s.shards[i].ID == id {
			return &s.shards[i]
		}
	}
	return nil
}

// DescribeStream names the stream; identity lets a test re-create it.
func (s *tStream) DescribeStream(ctx context.Context, stream string) (StreamInfo, error) {
	return StreamInfo{Name: stream, ARN: "arn:aws:kinesis:test:0:stream/" + stream, Created: time.Unix(1_600_000_000+s.generation, 0)}, nil
}

func (s *tStream) ListShards(ctx context.Context, stream string) ([]Shard, error) {
	return slices.Clone(s.shards), nil
}

func (s *tStream) GetShardIterator(ctx context.Context, stream, shard string, pos Position) (string, error) {
	if s.shard(shard) == nil {
		return "", fmt.Errorf("shard %s: %w", shard, ErrNotFound)
	}
	recs := s.recs[shard]
	i := 0
	switch pos.Type {
	case IterTrimHorizon:
	case IterLatest:
		i = len(recs)
	case IterAfterSequenceNumber, IterAtSequenceNumber:
		for i < len(recs) && CompareSequences(recs[i].Sequence, pos.Sequence) < 0 {
			i++
		}
		if pos.Type == IterAfterSequenceNumber && i < len(recs) && recs[i].Sequence == pos.Sequence {
			i++
		}
	default:
		return "", fmt.Errorf("iterator type %s not supported by tStream", pos.Type)
	}
	return fmt.Sprintf("%s|%d", shard, i), nil
}

func (s *tStream) GetRecords(ctx context.Context, it string, limit int) (RecordsPage, error) {
	shard, idx, _ := strings.Cut(it, "|")
	i, _ := strconv.Atoi(idx)
	recs := s.recs[shard]
	if i > len(recs) {
		return RecordsPage{}, fmt.Errorf("iterator %s: %w", it, ErrExpiredIterator) // the shard was re-created
	}
	j := min(len(recs), i+limit)
	page := RecordsPage{Records: slices.Clone(recs[i:j]), NextIterator: fmt.Sprintf("%s|%d", shard, j)}
	if sh := s.shard(shard); sh.Closed() && j == len(recs) {
		page.NextIterator = ""
		if s.childShards {
			for _, c := range s.shards {
				if c.Parent == shard || c.AdjacentParent == shard {
					page.ChildShards = append(page.ChildShards, c)
				}
			}
		}
	}
	return page, nil
}

// tWorker is one worker of a test cluster with an auto-answering
// processor.
type tWorker struct {
	id    string
	w     *Worker
	wake  time.Duration
	down  bool // crashed or paused: not stepped
	inbox []Input
	// delivered sequence numbers per lease key, in order
	got map[string][]string
	// delivered records per lease key, in order
	recs map[string][]Record
	// checkpointEvery: checkpoint after each batch (the default)
	noCheckpoint bool
	token        uint64
	cpResults    []Notice
	lost         []string
	stopped      bool
}

// cluster runs workers against one MemStore and one tStream in virtual
// time, stepping every tick and executing calls at once (unless intercept
// answers them).
type cluster struct {
	t         *testing.T
	now       time.Duration
	store     *MemStore
	stream    *tStream
	streams   tStreams // if set, one tStream per stream name instead of stream
	workers   []*tWorker
	trace     []TraceEvent
	cfg       Config
	intercept func(tw *tWorker, c Call) (Result, bool)
	steps     int // Steps taken, for benchmarks
	// push, if set, keeps the workers' pending watches (watch_test.go)
	push *pushHub
	// hold, if set, holds back the reply of each call it returns true for
	// (a slow link): the call applies at once, its reply reaches the
	// worker when the test releases it (releaseHeld)
	hold        func(tw *tWorker, c Call) bool
	heldReplies []heldReply
}

// heldReply is the reply of a call that hold held back.
type heldReply struct {
	tw   *tWorker
	call Call
	r    Result
}

// releaseHeld delivers the held replies that match, in the order they
// were held.
func (c *cluster) releaseHeld(match func(call Call) bool) {
	var keep []heldReply
	for _, h := range c.heldReplies {
		if !match(h.call) {
			keep = append(keep, h)
			continue
		}
		h.tw.inbox = append(h.tw.inbox, Input{Kind: InputResult, Result: h.r})
	}
	c.heldReplies = keep
}

func newCluster(t *testing.T, shards int, cfg Config) *cluster {
	c := &cluster{t: t, store: NewMemStore(), stream: newTStream(shards), cfg: cfg}
	return c
}

func (c *cluster) start(id string) *tWorker {
	cfg := c.cfg
	cfg.Owner = id
	if len(cfg.Streams) == 0 {
		cfg.Streams = []StreamConfig{{Name: "s", InitialPosition: TrimHorizon}}
	}
	if cfg.Assignment == "" {
		cfg.Assignment = AssignmentScan // the tests of the take rules; assigned mode has its own
	}
	cfg.Seed = uint64(len(c.workers) + 1)
	cfg.Trace = func(e TraceEvent) { c.trace = append(c.trace, e) }
	plantFromEnv(&cfg) // TestTestsCatchPlantedBugs's child runs
	w, err := NewWorker(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	tw := &tWorker{id: id, w: w, got: map[string][]string{}, recs: map[string][]Record{}}
	c.workers = append(c.workers, tw)
	c.step(tw, Input{Kind: InputTick})
	return tw
}

func (c *cluster) worker(id string) *tWorker {
	for i := len(c.workers) - 1; i >= 0; i-- {
		if c.workers[i].id == id {
			return c.workers[i]
		}
	}
	return nil
}

func (c *cluster) nowFor(tw *tWorker) Now {
	return Now{Mono: c.now, Wall: time.Unix(1_700_000_000, 0).Add(c.now)}
}

// step feeds one input and carries out the effects, feeding results back
// until the worker is quiet.
func (c *cluster) step(tw *tWorker, in Input) {
	tw.inbox = append(tw.inbox, in)
	for len(tw.inbox) > 0 && !tw.down {
		in := tw.inbox[0]
		tw.inbox = tw.inbox[1:]
		rd := tw.w.Step(c.nowFor(tw), in)
		c.steps++
		tw.wake = rd.WakeAt
		tw.stopped = rd.Stopped
		calls := slices.Clone(rd.Calls)
		notices := slices.Clone(rd.Notices)
		for _, call := range calls {
			var r Result
			handled := false
			if c.intercept != nil && tw.w.pending[call.ID].purpose != forStart {
				r, handled = c.intercept(tw, call)
			}
			if !handled {
				r = Execute(context.Background(), c.store, c.streamAPI(), call)
			}
			r.ID = call.ID
			if c.hold != nil && c.hold(tw, call) {
				c.heldReplies = append(c.heldReplies, heldReply{tw: tw, call: call, r: r})
			} else {
				tw.inbox = append(tw.inbox, Input{Kind: InputResult, Result: r})
			}
			if c.push != nil {
				c.push.applied(c, call, r)
			}
		}
		if c.push != nil {
			c.push.keep(tw, rd.Watch)
		}
		for _, n := range notices {
			c.process(tw, n)
		}
	}
}

// streamAPI returns the Stream the cluster's calls go to.
func (c *cluster) streamAPI() Stream {
	if c.streams != nil {
		return c.streams
	}
	return c.stream
}

// tStreams routes calls to one tStream per stream name. Its iterators are
// "stream#" followed by the tStream's own.
type tStreams map[string]*tStream

func (m tStreams) get(stream string) (*tStream, error) {
	if s := m[stream]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("stream %s: %w", stream, ErrNotFound)
}

func (m tStreams) DescribeStream(ctx context.Context, stream string) (StreamInfo, error) {
	s, err := m.get(stream)
	if err != nil {
		return StreamInfo{}, err
	}
	return s.DescribeStream(ctx, stream)
}

func (m tStreams) ListShards(ctx context.Context, stream string) ([]Shard, error) {
	s, err := m.get(stream)
	if err != nil {
		return nil, err
	}
	return s.ListShards(ctx, stream)
}

func (m tStreams) GetShardIterator(ctx context.Context, stream, shard string, pos Position) (string, error) {
	s, err := m.get(stream)
	if err != nil {
		return "", err
	}
	it, err := s.GetShardIterator(ctx, stream, shard, pos)
	if err != nil {
		return "", err
	}
	return stream + "#" + it, nil
}

func (m tStreams) GetRecords(ctx context.Context, it string, limit int) (RecordsPage, error) {
	stream, rest, _ := strings.Cut(it, "#")
	s, err := m.get(stream)
	if err != nil {
		return RecordsPage{}, err
	}
	page, err := s.GetRecords(ctx, rest, limit)
	if page.NextIterator != "" {
		page.NextIterator = stream + "#" + page.NextIterator
	}
	return page, err
}

func (c *cluster) process(tw *tWorker, n Notice) {
	switch n.Kind {
	case NoticeRecords:
		for _, r := range n.Records {
			tw.got[n.Key] = append(tw.got[n.Key], r.Sequence)
		}
		tw.recs[n.Key] = append(tw.recs[n.Key], n.Records...)
		tw.inbox = append(tw.inbox, Input{Kind: InputDone, Key: n.Key, Batch: n.Batch})
		if !tw.noCheckpoint {
			tw.token++
			last := n.Records[len(n.Records)-1]
			tw.inbox = append(tw.inbox, Input{Kind: InputCheckpoint, Key: n.Key, Checkpoint: Checkpoint{Sequence: last.Sequence, SubSequence: last.SubSequence}, Token: tw.token})
		}
	case NoticeInitialize, NoticeShardEnded, NoticeShutdownRequested:
		tw.inbox = append(tw.inbox, Input{Kind: InputDone, Key: n.Key, Batch: n.Batch})
	case NoticeCheckpointDone:
		tw.cpResults = append(tw.cpResults, n)
	case NoticeLeaseLost:
		tw.lost = append(tw.lost, n.Key)
	}
}

// run advances virtual time by d in ticks of 100 ms.
func (c *cluster) run(d time.Duration) {
	end := c.now + d
	for c.now < end {
		c.now += 100 * time.Millisecond
		for _, tw := range c.workers {
			if !tw.down && !tw.stopped && (c.now >= tw.wake || len(tw.inbox) > 0) {
				c.step(tw, Input{Kind: InputTick})
			}
		}
	}
}

// runUntil runs until cond holds, failing after limit.
func (c *cluster) runUntil(limit time.Duration, what string, cond func() bool) {
	c.t.Helper()
	end := c.now + limit
	for !cond() {
		if c.now >= end {
			c.t.Fatalf("after %v: %s never happened\ntable:\n%s", limit, what, c.table())
		}
		c.run(100 * time.Millisecond)
	}
}

func (c *cluster) table() string {
	l, _ := c.store.ListLeases(context.Background(), true)
	var b strings.Builder
	for _, r := range l.Leases {
		fmt.Fprintln(&b, r)
	}
	return b.String()
}

func (c *cluster) row(key string) Lease {
	l, err := c.store.GetLease(context.Background(), key)
	if err != nil {
		c.t.Fatalf("row %s: %v", key, err)
	}
	return l
}

func (c *cluster) traceOf(kind TraceKind, owner, key string) []TraceEvent {
	var out []TraceEvent
	for _, e := range c.trace {
		if e.Kind == kind && (owner == "" || e.Owner == owner) && (key == "" || e.Key == key) {
			out = append(out, e)
		}
	}
	return out
}

func (c *cluster) held(id string) []string { return c.worker(id).w.Held() }

func shardKey(i int) string { return fmt.Sprintf("shardId-%012d", i) }

var errTimeout = errors.New("timeout: no reply")

// expire removes a shard from the stream, as retention does to a closed
// shard: it is no longer listed and its iterators are not found.
func (s *tStream) expire(id string) {
	s.shards = slices.DeleteFunc(s.shards, func(sh Shard) bool { return sh.ID == id })
	delete(s.recs, id)
}
