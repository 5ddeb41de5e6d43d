package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func wantHealth(t *testing.T, h Health, live, ready bool, liveHas, readyHas string) {
	t.Helper()
	if h.Live != live || !strings.Contains(h.LiveReason, liveHas) {
		t.Errorf("Live = %v %q, want %v containing %q", h.Live, h.LiveReason, live, liveHas)
	}
	if h.Ready != ready || !strings.Contains(h.ReadyReason, readyHas) {
		t.Errorf("Ready = %v %q, want %v containing %q", h.Ready, h.ReadyReason, ready, readyHas)
	}
	prefix := map[bool]string{true: "ok: ", false: "not live: "}[h.Live]
	if !strings.HasPrefix(h.LiveReason, prefix) {
		t.Errorf("LiveReason %q does not start with %q", h.LiveReason, prefix)
	}
	prefix = map[bool]string{true: "ok: ", false: "not ready: "}[h.Ready]
	if !strings.HasPrefix(h.ReadyReason, prefix) {
		t.Errorf("ReadyReason %q does not start with %q", h.ReadyReason, prefix)
	}
}

// TestHealthStates walks the health state through start-up, an outage of
// the table, an idle stream, a hung loop and a shutdown, at exact times.
func TestHealthStates(t *testing.T) {
	const lease = 10 * time.Second
	h := newHealth(lease, 5*time.Second)
	wantHealth(t, h.report(at(0)), false, false, "Run has not started", "Run has not started")

	// before the loop's first step (Run checks the table): live for the
	// lease duration plus the start timeout
	h.run(at(0))
	wantHealth(t, h.report(at(15*time.Second)), true, false, "ok: starting since 2026-01-02T03:04:05.000Z", "not ready: starting")
	wantHealth(t, h.report(at(15*time.Second+time.Millisecond)), false, false, "not live: Run started at 2026-01-02T03:04:05.000Z and its engine loop has not stepped yet", "not ready: ")
	h.stepped(at(0), at(time.Second), 0)
	denied := errors.New("UnrecognizedClientException: The security token included in the request is invalid")
	h.call(OpListLeases, denied, at(100*time.Millisecond))
	h.call(OpListShards, nil, at(100*time.Millisecond))
	wantHealth(t, h.report(at(time.Second)), true, false, "ok: ",
		"not ready: starting: the start-up checks (the table, the stream, the table's stream marker) have not passed yet (lease table failing since 2026-01-02T03:04:05.100Z: error)")
	if r := h.report(at(time.Second)); strings.Contains(r.ReadyReason, "UnrecognizedClientException") || r.TableErr != denied {
		t.Errorf("ReadyReason %q holds the error's text, or TableErr = %v", r.ReadyReason, r.TableErr)
	}
	// the stream answered: only the table's failure is named
	if r := h.report(at(time.Second)).ReadyReason; strings.Contains(r, "stream failing") {
		t.Errorf("ReadyReason %q names the stream", r)
	}
	h.call(OpListLeases, nil, at(2*time.Second))
	wantHealth(t, h.report(at(2*time.Second)), true, false, "ok: ", "not ready: starting: the start-up checks (the table, the stream, the table's stream marker) have not passed yet")
	h.started()
	h.stepped(at(2*time.Second), at(3*time.Second), 2)
	wantHealth(t, h.report(at(2*time.Second)), true, true, "ok: the engine loop last stepped at 2026-01-02T03:04:07.000Z", "ok: 2 leases held; lease table answered 0s ago, stream 1.9s ago")

	// the table fails from 3s: still ready until a lease duration after
	// its last answer (2s), then not
	timeout := fmt.Errorf("update lease: %w", context.DeadlineExceeded)
	h.call(OpUpdateLease, timeout, at(3*time.Second))
	h.call(OpUpdateLease, timeout, at(6*time.Second))
	h.stepped(at(11*time.Second), at(12*time.Second), 2)
	wantHealth(t, h.report(at(12*time.Second)), true, true, "ok: ", "ok: ")
	wantHealth(t, h.report(at(12*time.Second+time.Millisecond)), true, false, "ok: ",
		"not ready: lease table unreachable since 2026-01-02T03:04:08.000Z (last answer 10.001s ago; bound: the lease duration 10s): timeout")
	// a failed condition is an answer
	h.call(OpUpdateLease, fmt.Errorf("renew: %w", ErrConditionFailed), at(13*time.Second))
	h.stepped(at(13*time.Second), at(14*time.Second), 1)
	wantHealth(t, h.report(at(13*time.Second)), true, true, "ok: ", "ok: 1 leases held")

	// the stream's last call (a shard listing, long ago) was answered: an
	// idle stream is no reason to be unready; a missing stream is
	wantHealth(t, h.report(at(14*time.Second)), true, true, "", "stream 13.9s ago")
	h.call(OpListShards, fmt.Errorf("list shards: %w", ErrNotFound), at(14*time.Second))
	wantHealth(t, h.report(at(14*time.Second)), true, false, "", "stream unreachable since 2026-01-02T03:04:19.000Z")
	h.call(OpGetIterator, fmt.Errorf("shard: %w", ErrNotFound), at(15*time.Second)) // a shard, not the stream
	wantHealth(t, h.report(at(15*time.Second)), true, true, "", "ok: ")

	// the loop hangs: a step due at 14s has not happened by 24s
	wantHealth(t, h.report(at(24*time.Second)), true, true, "ok: ", "ok: ")
	wantHealth(t, h.report(at(24*time.Second+time.Millisecond)), false, false,
		"not live: the engine loop has not stepped since 2026-01-02T03:04:18.000Z (a step due at 2026-01-02T03:04:19.000Z is 10.001s late",
		"not ready: the engine loop is not stepping")

	// shutdown, then stop
	h.stepped(at(25*time.Second), at(26*time.Second), 1)
	h.call(OpListLeases, nil, at(25*time.Second))
	h.call(OpListShards, nil, at(25*time.Second))
	h.shuttingDown(at(25 * time.Second))
	wantHealth(t, h.report(at(25*time.Second)), true, false, "ok: ", "not ready: shutting down since 2026-01-02T03:04:30.000Z")
	h.stop(at(26 * time.Second))
	wantHealth(t, h.report(at(26*time.Second)), false, false, "not live: stopped at 2026-01-02T03:04:31.000Z", "not ready: stopped")
}

// switchStore fails every call with err while failing is set, and adds a
// malformed row to every listing.
type switchStore struct {
	LeaseStore
	mu      sync.Mutex
	failing bool
	err     error
	scans   int
}

func (s *switchStore) fail(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = on
}

func (s *switchStore) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		return s.err
	}
	return nil
}

func (s *switchStore) ListLeases(ctx context.Context, consistent bool) (Listing, error) {
	if err := s.check(); err != nil {
		return Listing{}, err
	}
	l, err := s.LeaseStore.ListLeases(ctx, consistent)
	l.Malformed = append(l.Malformed, MalformedRow{Key: "bad-row", Reason: "attribute leaseCounter: want type N, got S"})
	s.mu.Lock()
	s.scans++
	s.mu.Unlock()
	return l, err
}
func (s *switchStore) GetLease(ctx context.Context, key string) (Lease, error) {
	if err := s.check(); err != nil {
		return Lease{}, err
	}
	return s.LeaseStore.GetLease(ctx, key)
}
func (s *switchStore) CreateLease(ctx context.Context, l Lease) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.LeaseStore.CreateLease(ctx, l)
}
func (s *switchStore) UpdateLease(ctx context.Context, e Expect, l Lease) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.LeaseStore.UpdateLease(ctx, e, l)
}
func (s *switchStore) DeleteLease(ctx context.Context, key string, e Expect) error {
	if err := s.check(); err != nil {
		return err
	}
	return s.LeaseStore.DeleteLease(ctx, key, e)
}

// TestConsumerHealthFollowsATableOutage: a consumer on a mock clock
// becomes ready once the table and the stream answered, goes unready a
// lease duration into a table outage (and says so), ready again when the
// table is back, and is neither live nor ready once Run has returned. A
// malformed row in every scan is logged once at WARN.
func TestConsumerHealthFollowsATableOutage(t *testing.T) {
	clk := clock.NewMock()
	store := &switchStore{LeaseStore: NewMemStore(), err: errors.New("dial tcp 10.0.0.1:443: connect: connection refused")}
	stream := &lockedStream{s: newTStream(2)}
	logs := &syncBuffer{}
	c, err := NewConsumer(ConsumerOptions{
		Config:    Config{Owner: "A", Streams: []StreamConfig{{Name: "s", InitialPosition: TrimHorizon}}},
		Store:     store,
		Stream:    stream,
		Processor: newRecorder().factory,
		Clock:     clk,
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantHealth(t, c.Health(), false, false, "Run has not started", "Run has not started")
	ctx, cancel := context.WithCancel(context.Background())
	run := &running{cancel: cancel, err: make(chan error, 1)}
	go func() { run.err <- c.Run(ctx) }()

	advance(t, clk, time.Minute, "ready with both leases", func() bool { h := c.Health(); return h.Ready && h.Held == 2 })
	wantHealth(t, c.Health(), true, true, "ok: ", "ok: 2 leases held")

	store.fail(true)
	advance(t, clk, time.Minute, "unready in the outage", func() bool { return !c.Health().Ready })
	h := c.Health()
	wantHealth(t, h, true, false, "ok: ", "not ready: lease table unreachable since")
	if strings.Contains(h.ReadyReason, "connection refused") || h.TableErr == nil || !strings.Contains(h.TableErr.Error(), "connection refused") {
		t.Errorf("ReadyReason %q gives the error's text, or TableErr %v is not the last error", h.ReadyReason, h.TableErr)
	}
	if gap := clk.Now().Sub(h.TableAnswered); gap <= 10*time.Second || gap > 11*time.Second {
		t.Errorf("unready %v after the last answer: want just past the lease duration (10s)", gap)
	}

	// a minute more of the outage: logged once when it began and in a
	// summary every OutageSummaryEvery, never per call
	failedAt := clk.Now().Add(-11 * time.Second)
	advance(t, clk, 2*time.Minute, "a minute into the outage", func() bool { return clk.Now().Sub(failedAt) >= 70*time.Second })
	store.fail(false)
	advance(t, clk, time.Minute, "ready after the outage", func() bool { return c.Health().Ready })
	advance(t, clk, time.Minute, "the table's return logged", func() bool { return strings.Contains(logs.String(), "lease table reachable again") })
	out := logs.String()
	for line, want := range map[string][2]int{
		`level=WARN msg="lease table unreachable: calls fail; retrying`: {1, 1},
		`level=WARN msg="lease table still unreachable"`:                {2, 3},
		`level=INFO msg="lease table reachable again"`:                  {1, 1},
		`level=WARN msg="call failed"`:                                  {0, 0},
		`level=WARN msg="lease lost"`:                                   {1, 2},
	} {
		if n := strings.Count(out, line); n < want[0] || n > want[1] {
			t.Errorf("%d lines %s, want %d to %d:\n%s", n, line, want[0], want[1], out)
		}
	}
	if !strings.Contains(out, `msg="lease lost" owner=A lease=`) || !strings.Contains(out, "cause=\"expired") {
		t.Errorf("a lease lost in the outage is not logged at WARN with its cause:\n%s", out)
	}
	if err := run.stop(t, clk); err != nil {
		t.Logf("Run: %v", err) // the leases may have been lost in the outage
	}
	wantHealth(t, c.Health(), false, false, "not live: stopped", "not ready: stopped")

	store.mu.Lock()
	scans := store.scans
	store.mu.Unlock()
	if n := strings.Count(logs.String(), `level=WARN msg="malformed lease row skipped: fix or delete it by hand" owner=A key=bad-row reason="attribute leaseCounter: want type N, got S"`); n != 1 || scans < 3 {
		t.Errorf("the malformed row was logged %d times over %d scans, want once:\n%s", n, scans, logs.String())
	}
}

func TestErrorClass(t *testing.T) {
	for err, want := range map[error]string{
		nil: "", fmt.Errorf("x: %w", ErrThrottled): "throttled", fmt.Errorf("x: %w: %w", ErrAccessDenied, errors.New("token")): "access denied",
		fmt.Errorf("x: %w", context.DeadlineExceeded): "timeout", fmt.Errorf("x: %w", ErrTableMissing): "not found",
		&net.OpError{Op: "dial", Err: errors.New("connection refused")}: "network error", errors.New("boom"): "error",
	} {
		if got := ErrorClass(err); got != want {
			t.Errorf("ErrorClass(%v) = %q, want %q", err, got, want)
		}
	}
}
