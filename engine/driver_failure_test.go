package engine

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// poisonProc fails every batch that holds the record poison; it records
// the other records it processed and checkpoints after each batch.
type poisonProc struct {
	mu       sync.Mutex
	poison   string
	got      []string
	attempts int
}

func (p *poisonProc) factory(ShardRef) Processor { return p }

func (p *poisonProc) Initialize(context.Context, InitInput) error { return nil }
func (p *poisonProc) ProcessRecords(ctx context.Context, in RecordsInput) error {
	p.mu.Lock()
	for _, r := range in.Records {
		if r.Sequence == p.poison {
			p.attempts++
			p.mu.Unlock()
			return errors.New("cannot parse record " + r.Sequence)
		}
	}
	for _, r := range in.Records {
		p.got = append(p.got, r.Sequence)
	}
	p.mu.Unlock()
	return in.Checkpointer.Checkpoint(ctx, SequenceCheckpoint(in.Records[len(in.Records)-1].Sequence))
}
func (p *poisonProc) ShardEnded(context.Context, ShardEndedInput) error { return nil }
func (p *poisonProc) ShutdownRequested(context.Context, ShutdownInput) error {
	return nil
}
func (p *poisonProc) LeaseLost(context.Context, LeaseLostInput) {}

func (p *poisonProc) state() (got []string, attempts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...), p.attempts
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startPoison(t *testing.T, clk *clock.Mock, stream Stream, store LeaseStore, p *poisonProc, policy *FailurePolicy, logs *syncBuffer) *running {
	t.Helper()
	c, err := NewConsumer(ConsumerOptions{
		Config:        Config{Owner: "A", Streams: []StreamConfig{{Name: "s", InitialPosition: TrimHorizon}}, GetRecordsLimit: 2},
		Store:         store,
		Stream:        stream,
		Processor:     p.factory,
		Clock:         clk,
		FailurePolicy: policy,
		Logger:        slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, err: make(chan error, 1)}
	go func() { r.err <- c.Run(ctx) }()
	return r
}

// TestPoisonBatchRetriedForeverByDefault: without a policy a batch that
// always fails is delivered again and again, each failure logged at WARN
// with the number of failed deliveries in a row; nothing after it is
// processed.
func TestPoisonBatchRetriedForeverByDefault(t *testing.T) {
	clk := clock.NewMock()
	stream := &lockedStream{s: newTStream(1)}
	seqs := stream.put(shardKey(0), 6)
	p := &poisonProc{poison: seqs[2]} // the second batch of two
	logs := &syncBuffer{}
	run := startPoison(t, clk, stream, NewMemStore(), p, nil, logs)
	advance(t, clk, 5*time.Minute, "ten failed attempts", func() bool { _, n := p.state(); return n >= 10 })
	if err := run.stop(t, clk); err != nil {
		t.Fatal(err)
	}
	got, _ := p.state()
	if strings.Join(got, ",") != strings.Join(seqs[:2], ",") {
		t.Errorf("processed %v, want only the batch before the poison %v", got, seqs[:2])
	}
	out := logs.String()
	for _, want := range []string{"consecutive_failures=1 ", "consecutive_failures=2 ", "consecutive_failures=10 "} {
		if !strings.Contains(out, "level=WARN msg=\"record processor failed; the batch will be delivered again\"") || !strings.Contains(out, want) {
			t.Errorf("the WARN lines lack %s:\n%s", want, out)
		}
	}
}

// TestPoisonBatchHandedOffAfterMaxAttempts: a policy asked at the third
// failed delivery hands the batch to a dead-letter list and the consumer
// moves on to the records after it.
func TestPoisonBatchHandedOffAfterMaxAttempts(t *testing.T) {
	clk := clock.NewMock()
	stream := &lockedStream{s: newTStream(1)}
	seqs := stream.put(shardKey(0), 6)
	p := &poisonProc{poison: seqs[2]}
	var mu sync.Mutex
	var asked []int
	var dead []string
	policy := &FailurePolicy{MaxAttempts: 3, Decide: func(_ context.Context, b FailedBatch) FailureDecision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, b.Attempts)
		if b.Err == nil || b.Shard.Shard != shardKey(0) {
			t.Errorf("FailedBatch %+v: want the error and the shard", b)
		}
		for _, r := range b.Records {
			dead = append(dead, r.Sequence)
		}
		return HandedOff
	}}
	logs := &syncBuffer{}
	store := NewMemStore()
	run := startPoison(t, clk, stream, store, p, policy, logs)
	advance(t, clk, 5*time.Minute, "the records after the poison batch", func() bool { got, _ := p.state(); return len(got) == 4 })
	if err := run.stop(t, clk); err != nil {
		t.Fatal(err)
	}
	got, attempts := p.state()
	if want := append(append([]string(nil), seqs[:2]...), seqs[4:]...); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("processed %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts != 3 || len(asked) != 1 || asked[0] != 3 {
		t.Errorf("%d failed attempts, policy asked at %v; want 3 attempts, asked once at the third", attempts, asked)
	}
	if strings.Join(dead, ",") != strings.Join(seqs[2:4], ",") {
		t.Errorf("dead letters %v, want the poison batch %v", dead, seqs[2:4])
	}
	if !strings.Contains(logs.String(), "decision=handed-off consecutive_failures=3") {
		t.Errorf("no WARN line for the hand-off:\n%s", logs.String())
	}
	row, _ := store.GetLease(context.Background(), shardKey(0))
	if row.Checkpoint.Sequence != seqs[5] {
		t.Errorf("checkpoint %v, want the processor's last %s", row.Checkpoint, seqs[5])
	}
}

// TestRunnerAsksThePolicyWhenDue: the policy is asked from the
// MaxAttempts-th failed delivery on, its answer becomes the Done input, and
// a panicking or unknown answer means retry.
func TestRunnerAsksThePolicyWhenDue(t *testing.T) {
	clk := clock.NewMock()
	var answer FailureDecision
	panics := false
	calls := 0
	c, err := NewConsumer(ConsumerOptions{
		Config:    Config{Owner: "w1", Streams: []StreamConfig{{Name: "s"}}},
		Stream:    &lockedStream{s: newTStream(1)},
		Processor: (&poisonProc{poison: "1"}).factory,
		Clock:     clk,
		Logger:    slog.New(slog.NewTextHandler(&syncBuffer{}, nil)),
		FailurePolicy: &FailurePolicy{MaxAttempts: 2, Decide: func(context.Context, FailedBatch) FailureDecision {
			calls++
			if panics {
				panic("policy bug")
			}
			return answer
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.start = clk.Now()
	ref := ShardRef{Stream: "s", Shard: "shardId-000000000000"}
	r := &runner{c: c, key: ref.Shard, shard: ref, proc: &poisonProc{poison: "1"}}
	r.until.Store(int64(time.Hour))
	try := func(attempt int) Input {
		t.Helper()
		r.handle(context.Background(), Notice{Kind: NoticeRecords, Key: r.key, Shard: ref, Batch: uint64(attempt), Attempt: attempt, Records: []Record{{Sequence: "1"}}})
		select {
		case in := <-c.results:
			return in
		default:
			t.Fatal("the runner fed no Done input")
			return Input{}
		}
	}
	answer = SkipBatch
	if in := try(1); !in.Failed || in.Skipped || calls != 0 {
		t.Fatalf("attempt 1: %+v after %d policy calls, want a plain failure and no call", in, calls)
	}
	answer = RetryBatch
	if in := try(2); !in.Failed || in.Skipped || calls != 1 {
		t.Fatalf("attempt 2, retry: %+v after %d calls", in, calls)
	}
	answer = SkipBatch
	if in := try(3); !in.Failed || !in.Skipped || in.Reason != "skipped" || calls != 2 {
		t.Fatalf("attempt 3, skip: %+v after %d calls", in, calls)
	}
	answer = FailureDecision(9)
	if in := try(4); in.Skipped {
		t.Fatalf("an unknown decision skipped: %+v", in)
	}
	panics = true
	if in := try(5); in.Skipped || !in.Failed {
		t.Fatalf("a panicking policy: %+v, want a retry", in)
	}
}

func TestNewConsumerRejectsABadFailurePolicy(t *testing.T) {
	for _, p := range []*FailurePolicy{{MaxAttempts: 0, Decide: func(context.Context, FailedBatch) FailureDecision { return SkipBatch }}, {MaxAttempts: 3}} {
		_, err := NewConsumer(ConsumerOptions{Config: Config{Owner: "A", Streams: []StreamConfig{{Name: "s"}}},
			Stream: &lockedStream{s: newTStream(1)}, Processor: newRecorder().factory, FailurePolicy: p})
		if err == nil || !strings.Contains(err.Error(), "FailurePolicy needs MaxAttempts") {
			t.Errorf("policy %+v: err %v", p, err)
		}
	}
}
