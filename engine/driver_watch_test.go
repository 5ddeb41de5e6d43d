package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// pushMemStore is a MemStore that pushes what waits for a worker
// (PendingWatcher): every create or update that leaves a row waiting is
// reported to the open watches of its Pending. It counts what the driver
// asks of it, and every change it records wakes waitFor.
type pushMemStore struct {
	*MemStore
	mu          sync.Mutex
	rev         int64
	watches     map[*memWatch]bool
	attempts    map[string]int // WatchPending calls per who
	opened      map[string]int // watches opened per who
	polls       map[string]int // ListPending calls per who
	pollsAtOpen map[string]int // polls[who] when its latest watch opened
	deleted     []string       // keys deleted, in order
	failStarts  bool           // WatchPending fails
	changed     chan struct{}  // closed and replaced on every change
}

type memWatch struct {
	s    *pushMemStore
	who  string
	ch   chan PendingChange
	gone chan struct{} // closed by lose
	err  error         // what Next returns once gone is closed
}

func newPushMemStore() *pushMemStore {
	return &pushMemStore{
		MemStore: NewMemStore(),
		watches:  map[*memWatch]bool{},
		attempts: map[string]int{}, opened: map[string]int{}, polls: map[string]int{}, pollsAtOpen: map[string]int{},
		changed: make(chan struct{}),
	}
}

// bump wakes waitFor; s.mu is held.
func (s *pushMemStore) bump() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitGuard only turns a hang into a failure: the tests wait for events
// on channels and no assertion depends on how long anything takes.
const waitGuard = 2 * time.Minute

// waitFor waits, without moving the clock, until cond holds (cond runs
// with s.mu held, after every change the store records).
func (s *pushMemStore) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	guard := time.NewTimer(waitGuard)
	defer guard.Stop()
	check := func() (bool, chan struct{}) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond(), s.changed
	}
	for {
		ok, ch := check()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-guard.C:
			t.Fatalf("%s: not within %v of real time, the clock stopped", what, waitGuard)
		}
	}
}

// get returns what the store holds (s.mu held or not).
func (s *pushMemStore) get(t *testing.T, key string) Lease {
	t.Helper()
	l, err := s.MemStore.GetLease(context.Background(), key)
	if err != nil {
		t.Fatalf("GetLease %s: %v", key, err)
	}
	return l
}

// open counts the open watches of who; s.mu is held.
func (s *pushMemStore) open(who string) int {
	n := 0
	for w := range s.watches {
		if w.who == who {
			n++
		}
	}
	return n
}

// lose makes every open watch of who fail with err, at its next Next and
// every later one.
func (s *pushMemStore) lose(who string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watches {
		if w.who == who && w.err == nil {
			w.err = err
			close(w.gone)
		}
	}
}

func (s *pushMemStore) setFailStarts(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failStarts = fail
}

// count reads one of the counters.
func (s *pushMemStore) count(m map[string]int, who string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return m[who]
}

func (s *pushMemStore) WatchPending(ctx context.Context, who string) (PendingWatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.bump()
	s.attempts[who]++
	if s.failStarts {
		return nil, errors.New("etcd: connection refused")
	}
	w := &memWatch{s: s, who: who, ch: make(chan PendingChange, 1024), gone: make(chan struct{})}
	s.watches[w] = true
	s.opened[who]++
	s.pollsAtOpen[who] = s.polls[who]
	return w, nil
}

func (s *pushMemStore) ListPending(ctx context.Context, who string) ([]Lease, error) {
	s.mu.Lock()
	s.polls[who]++
	s.bump()
	s.mu.Unlock()
	return s.MemStore.ListPending(ctx, who)
}

// publish reports a write that succeeded to the watches of its Pending.
func (s *pushMemStore) publish(l Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.bump()
	if l.Pending == "" {
		return
	}
	s.rev++
	for w := range s.watches {
		if w.who == l.Pending {
			w.ch <- PendingChange{Key: l.Key, Revision: s.rev}
		}
	}
}

func (s *pushMemStore) CreateLease(ctx context.Context, l Lease) error {
	err := s.MemStore.CreateLease(ctx, l)
	if err == nil {
		s.publish(l)
	}
	return err
}

func (s *pushMemStore) UpdateLease(ctx context.Context, e Expect, l Lease) error {
	err := s.MemStore.UpdateLease(ctx, e, l)
	if err == nil {
		s.publish(l)
	}
	return err
}

func (s *pushMemStore) DeleteLease(ctx context.Context, key string, e Expect) error {
	err := s.MemStore.DeleteLease(ctx, key, e)
	if err == nil {
		s.mu.Lock()
		s.deleted = append(s.deleted, key)
		s.bump()
		s.mu.Unlock()
	}
	return err
}

func (w *memWatch) Next(ctx context.Context) ([]PendingChange, error) {
	select {
	case <-w.gone:
		return nil, w.err
	case c := <-w.ch:
		return []PendingChange{c}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (w *memWatch) Close() error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	delete(w.s.watches, w)
	w.s.bump()
	return nil
}

// startPushed starts a Consumer on store, whose logs go to logs (shown
// when the test fails).
func startPushed(t *testing.T, owner string, store *pushMemStore, stream Stream, clk *clock.Mock, rec *recorder, logs *syncBuffer) *running {
	t.Helper()
	c, err := NewConsumer(ConsumerOptions{
		Config:    Config{Owner: owner, Streams: []StreamConfig{{Name: "s", InitialPosition: TrimHorizon}}},
		Store:     store,
		Stream:    stream,
		Processor: rec.factory,
		Clock:     clk,
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		// the longest deadline allowed: the test counts the index reads
		// exactly, and a call whose deadline the mock clock passes before
		// the consumer's goroutine sends it fails and is read again (the
		// clock steps 100 ms at a time, each yielding only briefly: with
		// the default of a renew interval, 30 steps on a loaded machine
		// could outrun a call; CI failed so twice)
		CallTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.worker.Config().WatchPending {
		t.Fatal("NewConsumer did not set Config.WatchPending for a store that implements PendingWatcher")
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, err: make(chan error, 1)}
	go func() { r.err <- c.Run(ctx) }()
	return r
}

// handOverTo writes, as the assigner would, a request that the owner of
// one of its leases hand it over to to, and returns the lease's key. A
// renewal in flight may beat the write: it is then tried again on the
// new version.
func handOverTo(t *testing.T, store *pushMemStore, from, to string) string {
	t.Helper()
	for range 100 {
		l, _ := store.MemStore.ListLeases(context.Background(), true)
		i := slices.IndexFunc(l.Leases, func(r Lease) bool { return r.Owner == from && !IsReserved(r.Key) })
		if i < 0 {
			t.Fatalf("%s holds no lease to hand over", from)
		}
		req := l.Leases[i].Clone()
		req.Counter++
		req.HandoffTo, req.Pending, req.Writer = to, from, ""
		err := store.UpdateLease(context.Background(), ExpectOf(l.Leases[i]), req)
		if err == nil {
			return req.Key
		}
		if !errors.Is(err, ErrConditionFailed) {
			t.Fatal(err)
		}
	}
	t.Fatalf("could not write a handoff request of a lease of %s", from)
	return ""
}

// Consumers whose store pushes (PendingWatcher) keep their watches
// (Ready.Watch) on goroutines of the driver and act on what the watches
// report as it comes: with the clock stopped, so that no poll can be due,
// a worker that starts opens its watch and reads its pending rows twice
// (at start and the once its watch owes), the assigner learns of its hello
// by its own watch, and a planned move is done end to end by the two
// watches. Over a steady minute nobody reads the index. A lost watch
// (ErrWatchLost) makes the worker read the index once, watch again and
// read once more what the new watch owes; the new watch then carries the
// next move. Every watch is closed when the consumers stop.
func TestConsumersWatchThePendingIndex(t *testing.T) {
	clk := clock.NewMock()
	store := newPushMemStore()
	stream := &lockedStream{s: newTStream(4)}
	for i := 0; i < 4; i++ {
		stream.put(shardKey(i), 3)
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("consumer logs:\n%s", logs.String())
		}
	})
	ra, rb := newRecorder(), newRecorder()
	// The clock stands still until A has its watches.
	a := startPushed(t, "A", store, stream, clk, ra, logs)
	store.waitFor(t, "A, the assigner, watches its own rows and the assigner's, and reads each twice", func() bool {
		return store.open("A") == 1 && store.open(AssignerPending) == 1 && store.polls["A"] == 2 && store.polls[AssignerPending] == 2
	})
	advance(t, clk, time.Minute, "A processes all", func() bool { return ra.total() == 12 })
	const assignerPolls = 2

	// The clock stands still from here to the share.
	b := startPushed(t, "B", store, stream, clk, rb, logs)
	store.waitFor(t, "B opens its watch and reads its rows at start and the once the watch owes", func() bool {
		return store.opened["B"] == 1 && store.polls["B"] == 2
	})
	store.waitFor(t, "the assigner reads and deletes B's hello, pushed to it", func() bool {
		return slices.Contains(store.deleted, HelloPrefix+"B")
	})
	if n := store.count(store.polls, AssignerPending); n != assignerPolls {
		t.Errorf("the assigner read its rows of the index %d times to learn of B's hello, want 0 (its watch reported it)", n-assignerPolls)
	}

	held := func(owner string) int {
		l, _ := store.MemStore.ListLeases(context.Background(), true)
		n := 0
		for _, row := range l.Leases {
			if row.Owner == owner && !IsReserved(row.Key) {
				n++
			}
		}
		return n
	}
	advance(t, clk, 2*time.Minute, "B gets a share", func() bool { return held("B") == 2 })
	for i := 0; i < 600; i++ { // a steady fleet for a minute
		clk.Add(100 * time.Millisecond)
	}
	if n := store.count(store.polls, "B"); n != 2 {
		t.Errorf("B read its rows of the index %d times with its watch up, want 2 (at start, and the once its watch owes)", n)
	}
	if n := store.count(store.polls, AssignerPending); n != assignerPolls {
		t.Errorf("the assigner read its rows of the index %d times with its watch up, want 0", n-assignerPolls)
	}
	if n := store.count(store.polls, "A"); n != 2 {
		t.Errorf("A read its rows of the index %d times with its watch up, want 2", n)
	}
	for _, who := range []string{"A", "B", AssignerPending} {
		if n := store.count(store.attempts, who); n != 1 {
			t.Errorf("%d watches of %s asked for, want 1", n, who)
		}
	}

	// A planned move with the clock stopped: only the watches can carry it.
	key := handOverTo(t, store, "A", "B")
	store.waitFor(t, "B takes "+key+", handed over by A, with the clock stopped", func() bool {
		return store.get(t, key).Owner == "B"
	})
	if n := store.count(store.polls, "B"); n != 2 {
		t.Errorf("B read its rows of the index %d times for a move its watch reported, want none more than 2", n)
	}

	// Lose B's watch (a compaction past its revision), the clock still stopped.
	store.lose("B", fmt.Errorf("etcdstore: watch of pending/B/: required revision has been compacted: %w", ErrWatchLost))
	store.waitFor(t, "B reads the index once, watches again and reads once more what the new watch owes", func() bool {
		return store.opened["B"] == 2 && store.open("B") == 1 && store.polls["B"] == 4
	})
	key = handOverTo(t, store, "A", "B")
	store.waitFor(t, "B takes "+key+" by its new watch, with the clock stopped", func() bool {
		return store.get(t, key).Owner == "B"
	})
	if n := store.count(store.polls, "B"); n != 4 {
		t.Errorf("B read its rows of the index %d times, want 4: a watch lost makes one read, the new one owes one", n)
	}
	if n := store.count(store.attempts, "B"); n != 2 {
		t.Errorf("B asked for %d watches, want 2 (one lost)", n)
	}
	if !strings.Contains(logs.String(), "the pending watch was lost") || !strings.Contains(logs.String(), "required revision has been compacted") {
		t.Errorf("the loss of B's watch was not logged with its cause:\n%s", logs.String())
	}

	for _, r := range []*running{a, b} {
		if err := r.stop(t, clk); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	store.waitFor(t, "every watch closed after the consumers stopped", func() bool { return len(store.watches) == 0 })
}

// A worker whose watch cannot start polls its pending rows every
// PendingPollInterval, as without a watch, while the driver tries again
// with backoff; once a watch starts it stops polling.
func TestConsumerPollsUntilItsWatchStarts(t *testing.T) {
	clk := clock.NewMock()
	store := newPushMemStore()
	store.setFailStarts(true)
	stream := &lockedStream{s: newTStream(2)}
	stream.put(shardKey(0), 2)
	stream.put(shardKey(1), 2)
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("consumer logs:\n%s", logs.String())
		}
	})
	rec := newRecorder()
	a := startPushed(t, "A", store, stream, clk, rec, logs)
	advance(t, clk, time.Minute, "A processes all without a watch", func() bool { return rec.total() == 4 })
	p0 := store.count(store.polls, "A")
	advance(t, clk, time.Minute, "A polls its rows while its watch cannot start, and the driver tries again", func() bool {
		return store.count(store.polls, "A") >= p0+4 && store.count(store.attempts, "A") >= 4
	})
	if !strings.Contains(logs.String(), "the pending watch did not start") || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the failed starts were not logged with their cause:\n%s", logs.String())
	}

	store.setFailStarts(false)
	advance(t, clk, time.Minute, "A's watch starts once the store lets it", func() bool { return store.count(store.opened, "A") == 1 })
	opened := store.count(store.pollsAtOpen, "A")
	// The clock stopped: the read the new watch owes comes without it.
	store.waitFor(t, "A reads what its new watch owes", func() bool { return store.polls["A"] > opened })
	for i := 0; i < 600; i++ { // a minute: polling would read 48 times
		clk.Add(100 * time.Millisecond)
	}
	// A poll may have come due as the watch started (the clock moved on
	// until the test saw it open), besides the read the watch owes.
	if n := store.count(store.polls, "A") - opened; n > 2 {
		t.Errorf("A read its rows of the index %d times in the minute after its watch started, want at most 2", n)
	}
	if err := a.stop(t, clk); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
