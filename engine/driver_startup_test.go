package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// checkedStore is a MemStore with a table check, and writes that can be
// made to fail (the table unreachable).
type checkedStore struct {
	*MemStore
	check error
	down  atomic.Bool
}

func (s *checkedStore) CheckTable(ctx context.Context) error { return s.check }

func (s *checkedStore) UpdateLease(ctx context.Context, expect Expect, l Lease) error {
	if s.down.Load() {
		return errors.New("connection refused")
	}
	return s.MemStore.UpdateLease(ctx, expect, l)
}

// missingStream is a stream that does not exist.
type missingStream struct{ *lockedStream }

func (*missingStream) DescribeStream(ctx context.Context, stream string) (StreamInfo, error) {
	return StreamInfo{}, fmt.Errorf("stream %s: %w", stream, ErrNotFound)
}

// runUntilReturn runs c until Run returns, moving the clock, and returns
// its error.
func runUntilReturn(t *testing.T, c *Consumer, clk *clock.Mock) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	for i := 0; i < 4000; i++ {
		select {
		case err := <-done:
			return err
		default:
			clk.Add(50 * time.Millisecond)
		}
	}
	t.Fatal("Run did not return")
	return nil
}

// Run returns a typed error at once for a missing table, a table of
// another schema, a missing stream and another stream's table, and writes
// nothing; it does not log an error every few seconds forever.
func TestConsumerStartupErrors(t *testing.T) {
	foreign := NewMemStore()
	if err := foreign.CreateLease(context.Background(), markerRow(MarkerPrefix, "arn:aws:kinesis:test:0:stream/bar-a@1")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		store  LeaseStore
		stream Stream
		want   error
	}{
		{"table missing", &checkedStore{MemStore: NewMemStore(), check: fmt.Errorf("no table T: %w", ErrTableMissing)}, &lockedStream{s: newTStream(1)}, ErrTableMissing},
		{"wrong key schema", &checkedStore{MemStore: NewMemStore(), check: fmt.Errorf("table T: %w", ErrTableSchema)}, &lockedStream{s: newTStream(1)}, ErrTableSchema},
		{"credentials rejected", &checkedStore{MemStore: NewMemStore(), check: fmt.Errorf("describe T: %w", ErrAccessDenied)}, &lockedStream{s: newTStream(1)}, ErrAccessDenied},
		{"stream missing", NewMemStore(), &missingStream{&lockedStream{s: newTStream(1)}}, ErrStreamMissing},
		{"another stream's table", foreign, &lockedStream{s: newTStream(1)}, ErrStreamMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewMock()
			c, err := NewConsumer(ConsumerOptions{
				Config: Config{Owner: "A", Streams: []StreamConfig{{Name: "s"}}},
				Store:  tc.store, Stream: tc.stream, Processor: newRecorder().factory, Clock: clk,
			})
			if err != nil {
				t.Fatal(err)
			}
			err = runUntilReturn(t, c, clk)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Run = %v, want %v", err, tc.want)
			}
			var mm *StreamMismatchError
			if errors.Is(tc.want, ErrStreamMismatch) && !errors.As(err, &mm) {
				t.Errorf("Run = %v, not a *StreamMismatchError", err)
			}
			l, _ := foreign.ListLeases(context.Background(), true)
			if len(l.Leases) != 1 {
				t.Errorf("another stream's table was written: %v", l.Leases)
			}
		})
	}
}

// A transient failure at start is retried, bounded by StartTimeout.
func TestConsumerStartTimeout(t *testing.T) {
	clk := clock.NewMock()
	store := &checkedStore{MemStore: NewMemStore()}
	c, err := NewConsumer(ConsumerOptions{
		Config: Config{Owner: "A", Streams: []StreamConfig{{Name: "s"}}},
		Store:  failingGets{store}, Stream: &lockedStream{s: newTStream(1)}, Processor: newRecorder().factory, Clock: clk,
		StartTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := runUntilReturn(t, c, clk); err == nil || errors.Is(err, ErrStreamMismatch) {
		t.Fatalf("Run = %v, want the start-up timeout", err)
	}
}

// failingGets is a store whose every read fails transiently.
type failingGets struct{ *checkedStore }

func (failingGets) GetLease(ctx context.Context, key string) (Lease, error) {
	return Lease{}, errors.New("connection reset")
}

// A shutdown that cannot write its releases (the table unreachable) says
// so: Run returns a ShutdownError naming the leases left to expire, and
// none as released.
func TestConsumerShutdownTellsTheTruth(t *testing.T) {
	clk := clock.NewMock()
	store := &checkedStore{MemStore: NewMemStore()}
	stream := &lockedStream{s: newTStream(2)}
	rec := newRecorder()
	c, err := NewConsumer(ConsumerOptions{
		Config: Config{Owner: "A", Streams: []StreamConfig{{Name: "s", InitialPosition: TrimHorizon}}},
		Store:  store, Stream: stream, Processor: rec.factory, Clock: clk, ShutdownTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	advance(t, clk, time.Minute, "both leases held", func() bool {
		l, _ := store.ListLeases(context.Background(), true)
		n := 0
		for _, r := range l.Leases {
			if r.Owner == "A" && !IsReserved(r.Key) {
				n++
			}
		}
		return n == 2
	})
	store.down.Store(true)
	cancel()
	var runErr error
	for i := 0; i < 4000 && runErr == nil; i++ {
		select {
		case runErr = <-done:
		default:
			clk.Add(50 * time.Millisecond)
		}
	}
	var se *ShutdownError
	if !errors.As(runErr, &se) {
		t.Fatalf("Run = %v, want a ShutdownError", runErr)
	}
	if len(se.Left) != 2 || len(se.Released) != 0 {
		t.Errorf("released %v, left %v; want none released and both left", se.Released, se.Left)
	}
}

// hangingCheck is a table check that answers only when its context ends
// (an unreachable table).
type hangingCheck struct{ *MemStore }

func (hangingCheck) CheckTable(ctx context.Context) error {
	<-ctx.Done()
	return fmt.Errorf("describe table: %w", ctx.Err())
}

// TestStopDuringTheTableCheck: a SIGTERM (Run's context cancelled) while
// the table is being checked stops Run cleanly: nil, an INFO line, no
// ERROR (nothing was taken, nothing is left to release).
func TestStopDuringTheTableCheck(t *testing.T) {
	logs := &syncBuffer{}
	c, err := NewConsumer(ConsumerOptions{
		Config:    Config{Owner: "A", Streams: []StreamConfig{{Name: "s"}}},
		Store:     hangingCheck{NewMemStore()},
		Stream:    &lockedStream{s: newTStream(1)},
		Processor: newRecorder().factory,
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if out := logs.String(); strings.Contains(out, "level=ERROR") || !strings.Contains(out, "stopped during the start-up checks, as asked") {
		t.Errorf("logs:\n%s", out)
	}
}
