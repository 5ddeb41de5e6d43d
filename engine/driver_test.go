package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// lockedStream makes a tStream safe for the driver's concurrent calls.
type lockedStream struct {
	mu sync.Mutex
	s  *tStream
}

func (l *lockedStream) DescribeStream(ctx context.Context, stream string) (StreamInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.DescribeStream(ctx, stream)
}

func (l *lockedStream) ListShards(ctx context.Context, stream string) ([]Shard, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.ListShards(ctx, stream)
}

func (l *lockedStream) GetShardIterator(ctx context.Context, stream, shard string, pos Position) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.GetShardIterator(ctx, stream, shard, pos)
}

func (l *lockedStream) GetRecords(ctx context.Context, it string, limit int) (RecordsPage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.GetRecords(ctx, it, limit)
}

func (l *lockedStream) put(shard string, n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.put(shard, n)
}

// recorder is a test processor: it records what it gets and checkpoints
// every batch. panics and block make it misbehave.
type recorder struct {
	mu      sync.Mutex
	got     map[string][]string // shard -> sequence numbers
	lost    int
	panics  int           // panic on this many batches first
	block   chan struct{} // if set, ProcessRecords waits on it
	cpErrs  []error
	ended   []string
	stopped []string
	why     []string // of each ShutdownRequested: its reason, and to whom
}

func newRecorder() *recorder { return &recorder{got: map[string][]string{}} }

func (r *recorder) factory(ShardRef) Processor { return &recProc{r: r} }

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.got {
		n += len(v)
	}
	return n
}

type recProc struct{ r *recorder }

func (p *recProc) Initialize(ctx context.Context, in InitInput) error { return nil }

func (p *recProc) ProcessRecords(ctx context.Context, in RecordsInput) error {
	r := p.r
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	if r.panics > 0 {
		r.panics--
		r.mu.Unlock()
		panic("processor bug")
	}
	for _, rec := range in.Records {
		r.got[in.Shard.Shard] = append(r.got[in.Shard.Shard], rec.Sequence)
	}
	r.mu.Unlock()
	err := in.Checkpointer.Checkpoint(ctx, SequenceCheckpoint(in.Records[len(in.Records)-1].Sequence))
	if err != nil {
		r.mu.Lock()
		r.cpErrs = append(r.cpErrs, err)
		r.mu.Unlock()
	}
	return nil
}

func (p *recProc) ShardEnded(ctx context.Context, in ShardEndedInput) error {
	p.r.mu.Lock()
	p.r.ended = append(p.r.ended, in.Shard.Shard)
	p.r.mu.Unlock()
	return nil
}

func (p *recProc) ShutdownRequested(ctx context.Context, in ShutdownInput) error {
	p.r.mu.Lock()
	p.r.stopped = append(p.r.stopped, in.Shard.Shard)
	p.r.why = append(p.r.why, strings.TrimSpace(in.Reason.String()+" "+in.To))
	p.r.mu.Unlock()
	return nil
}

func (p *recProc) LeaseLost(ctx context.Context, in LeaseLostInput) {
	p.r.mu.Lock()
	p.r.lost++
	p.r.mu.Unlock()
}

type running struct {
	cancel context.CancelFunc
	err    chan error
}

func startConsumer(t *testing.T, owner string, store LeaseStore, stream Stream, clk *clock.Mock, rec *recorder) *running {
	t.Helper()
	c, err := NewConsumer(ConsumerOptions{
		Config:    Config{Owner: owner, Streams: []StreamConfig{{Name: "s", InitialPosition: TrimHorizon}}},
		Store:     store,
		Stream:    stream,
		Processor: rec.factory,
		Clock:     clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, err: make(chan error, 1)}
	go func() { r.err <- c.Run(ctx) }()
	return r
}

// advance moves the mock clock in steps until cond holds; it fails after
// limit of virtual time. It never sleeps on real time itself.
func advance(t *testing.T, clk *clock.Mock, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for d := time.Duration(0); !cond(); d += 100 * time.Millisecond {
		if d > limit {
			t.Fatalf("%s: not after %v of virtual time", what, limit)
		}
		clk.Add(100 * time.Millisecond)
	}
}

// stop cancels a consumer and waits for Run to return, moving the clock
// meanwhile.
func (r *running) stop(t *testing.T, clk *clock.Mock) error {
	t.Helper()
	r.cancel()
	for i := 0; i < 2000; i++ {
		select {
		case err := <-r.err:
			return err
		default:
			clk.Add(50 * time.Millisecond)
		}
	}
	t.Fatal("Run did not return after cancel")
	return nil
}

func TestConsumerProcessesAndReleasesOnShutdown(t *testing.T) {
	clk := clock.NewMock()
	store := NewMemStore()
	stream := &lockedStream{s: newTStream(2)}
	stream.put(shardKey(0), 4)
	stream.put(shardKey(1), 4)
	rec := newRecorder()
	run := startConsumer(t, "A", store, stream, clk, rec)
	advance(t, clk, time.Minute, "all records processed", func() bool { return rec.total() == 8 })
	advance(t, clk, 10*time.Second, "checkpoints written", func() bool {
		l, _ := store.ListLeases(context.Background(), true)
		n := 0
		for _, row := range l.Leases {
			if IsReserved(row.Key) {
				continue
			}
			if row.Checkpoint.IsStart() {
				return false
			}
			n++
		}
		return n == 2
	})
	if err := run.stop(t, clk); err != nil {
		t.Fatalf("Run: %v", err)
	}
	l, _ := store.ListLeases(context.Background(), true)
	for _, row := range l.Leases {
		if row.Owner != "" {
			t.Errorf("%s still owned by %q after shutdown", row.Key, row.Owner)
		}
	}
	if len(rec.stopped) != 2 || rec.why[0] != "worker shutdown" || rec.why[1] != "worker shutdown" {
		t.Errorf("ShutdownRequested called for %v (%q), want both shards, for a worker shutdown", rec.stopped, rec.why)
	}
	if len(rec.cpErrs) != 0 {
		t.Errorf("checkpoint errors: %v", rec.cpErrs)
	}
}

func TestConsumersHandOverInOneProcess(t *testing.T) {
	clk := clock.NewMock()
	store := NewMemStore()
	stream := &lockedStream{s: newTStream(4)}
	for i := 0; i < 4; i++ {
		stream.put(shardKey(i), 3)
	}
	ra, rb := newRecorder(), newRecorder()
	a := startConsumer(t, "A", store, stream, clk, ra)
	advance(t, clk, time.Minute, "A processes all", func() bool { return ra.total() == 12 })
	b := startConsumer(t, "B", store, stream, clk, rb)
	advance(t, clk, 2*time.Minute, "B gets a share", func() bool {
		l, _ := store.ListLeases(context.Background(), true)
		n := 0
		for _, row := range l.Leases {
			if row.Owner == "B" && !IsReserved(row.Key) {
				n++
			}
		}
		return n == 2
	})
	ra.mu.Lock()
	handoffs := slices.Clone(ra.why)
	ra.mu.Unlock()
	if len(handoffs) != 2 || handoffs[0] != "handoff B" || handoffs[1] != "handoff B" {
		t.Errorf("A's processors were asked to let go for %q, want two handoffs to B", handoffs)
	}
	if err := a.stop(t, clk); err != nil {
		t.Fatalf("A: %v", err)
	}
	for i := 0; i < 4; i++ {
		stream.put(shardKey(i), 1)
	}
	advance(t, clk, time.Minute, "B processes the new records", func() bool { return rb.total() == 4 })
	clk.Add(5 * time.Second)
	if n := rb.total(); n != 4 {
		t.Errorf("B processed %d records, want exactly the 4 new ones (A checkpointed the rest)", n)
	}
	if err := b.stop(t, clk); err != nil {
		t.Fatalf("B: %v", err)
	}
}

func TestConsumerSurvivesPanickingAndSlowProcessor(t *testing.T) {
	clk := clock.NewMock()
	store := NewMemStore()
	stream := &lockedStream{s: newTStream(1)}
	stream.put(shardKey(0), 2)
	rec := newRecorder()
	rec.panics = 2
	run := startConsumer(t, "A", store, stream, clk, rec)
	advance(t, clk, time.Minute, "records processed after two panics", func() bool { return rec.total() == 2 })
	row0, _ := store.GetLease(context.Background(), shardKey(0))
	if row0.Owner != "A" {
		t.Fatalf("lease lost after processor panics: %v", row0)
	}
	// A processor stuck in ProcessRecords must not stop renewals: of the
	// lease's row, or in session renewal (the default) of the session row
	// it is bound to.
	renewed := shardKey(0)
	if row0.Session != "" {
		renewed = SessionKey("A")
	}
	block := make(chan struct{})
	rec.mu.Lock()
	rec.block = block
	rec.mu.Unlock()
	stream.put(shardKey(0), 1)
	before, _ := store.GetLease(context.Background(), renewed)
	advance(t, clk, time.Minute, "renewals while the processor is stuck", func() bool {
		now, _ := store.GetLease(context.Background(), renewed)
		lease, _ := store.GetLease(context.Background(), shardKey(0))
		return now.Owner == "A" && now.Counter >= before.Counter+5 && lease.Owner == "A"
	})
	close(block)
	advance(t, clk, time.Minute, "the stuck batch completes", func() bool { return rec.total() == 3 })
	if err := run.stop(t, clk); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestNewConsumerRejectsBadOptions(t *testing.T) {
	_, err := NewConsumer(ConsumerOptions{Config: Config{Owner: "A", Streams: []StreamConfig{{Name: "s"}}, LeaseDuration: time.Second, RenewInterval: time.Second}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"Stream is required", "Processor is required", "3 x RenewInterval"} {
		if !containsErr(err, want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func containsErr(err error, s string) bool { return strings.Contains(err.Error(), s) }

// TestRunnerHoldsBackRecordsPastActUntil: records handed to a processor
// after the lease's act-until time (the process was paused, or the runner
// goroutine was descheduled, between the Step that delivered them and the
// hand-off) are not given to the processor; the core is told to deliver
// them again. Before that time they are handed over.
func TestRunnerHoldsBackRecordsPastActUntil(t *testing.T) {
	clk := clock.NewMock()
	rec := newRecorder()
	c, err := NewConsumer(ConsumerOptions{
		Config:    Config{Owner: "w1", Streams: []StreamConfig{{Name: "s"}}},
		Stream:    &lockedStream{s: newTStream(1)},
		Processor: rec.factory,
		Clock:     clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.start = clk.Now()
	ref := ShardRef{Stream: "s", Shard: "shardId-000000000000"}
	r := &runner{c: c, key: "shardId-000000000000", shard: ref, proc: &nopProc{rec: rec}}
	r.until.Store(int64(5 * time.Second))
	batch := func(id uint64, seq string) Notice {
		return Notice{Kind: NoticeRecords, Key: r.key, Shard: ref, Batch: id, Records: []Record{{Sequence: seq}}}
	}
	done := func() Input {
		t.Helper()
		select {
		case in := <-c.results:
			return in
		default:
			t.Fatal("the runner fed no Done input")
			return Input{}
		}
	}

	clk.Add(5*time.Second - time.Nanosecond)
	r.handle(context.Background(), batch(1, "1"))
	if in := done(); in.Kind != InputDone || in.Batch != 1 || in.Failed {
		t.Fatalf("before act-until: got %+v, want Done of batch 1, not failed", in)
	}
	clk.Add(time.Nanosecond) // exactly at act-until: no longer
	r.handle(context.Background(), batch(2, "2"))
	if in := done(); in.Kind != InputDone || in.Batch != 2 || !in.Failed {
		t.Fatalf("at act-until: got %+v, want Done of batch 2, failed (deliver again)", in)
	}
	if got := rec.got[ref.Shard]; len(got) != 1 || got[0] != "1" {
		t.Fatalf("processor got %v, want only the batch handed over in time [1]", got)
	}
}

// nopProc records batches without checkpointing.
type nopProc struct{ rec *recorder }

func (p *nopProc) Initialize(context.Context, InitInput) error { return nil }
func (p *nopProc) ProcessRecords(_ context.Context, in RecordsInput) error {
	for _, x := range in.Records {
		p.rec.got[in.Shard.Shard] = append(p.rec.got[in.Shard.Shard], x.Sequence)
	}
	return nil
}
func (p *nopProc) ShardEnded(context.Context, ShardEndedInput) error { return nil }
func (p *nopProc) ShutdownRequested(context.Context, ShutdownInput) error {
	return nil
}
func (p *nopProc) LeaseLost(context.Context, LeaseLostInput) {}

// TestConsumerDrawsASeed: two consumers built with Seed 0 (as a process
// restarted under the same owner id would be) write as different writers.
func TestConsumerDrawsASeed(t *testing.T) {
	mk := func() *Consumer {
		c, err := NewConsumer(ConsumerOptions{
			Config:    Config{Owner: "w1", Streams: []StreamConfig{{Name: "s"}}},
			Stream:    &lockedStream{s: newTStream(1)},
			Processor: newRecorder().factory,
			Clock:     clock.NewMock(),
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := mk(), mk()
	if a.worker.writer == "" || a.worker.writer == b.worker.writer {
		t.Fatalf("writers %q and %q: want two different ones", a.worker.writer, b.worker.writer)
	}
	if a.worker.Config().Seed == 0 {
		t.Fatal("the consumer kept seed 0")
	}
}

func TestShutdownBound(t *testing.T) {
	for _, c := range []struct {
		o    ConsumerOptions
		want time.Duration
	}{
		{ConsumerOptions{}, DefaultLeaseDuration},
		{ConsumerOptions{Config: Config{LeaseDuration: 30 * time.Second}}, 30 * time.Second},
		{ConsumerOptions{Config: Config{LeaseDuration: 30 * time.Second}, ShutdownTimeout: 5 * time.Second}, 5 * time.Second},
	} {
		if got := c.o.ShutdownBound(); got != c.want {
			t.Errorf("ShutdownBound(%+v) = %v, want %v", c.o, got, c.want)
		}
	}
}
