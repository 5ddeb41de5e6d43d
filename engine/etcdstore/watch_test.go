package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/internal/etcdtest"
)

// cuttingClient is a client whose watches a test can cancel as a member
// that lost its leader does (WithRequireLeader): a last response with
// Canceled set, then the channel closes.
type cuttingClient struct {
	*clientv3.Client
	mu   sync.Mutex
	cuts []chan struct{}
}

func (c *cuttingClient) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	inner := c.Client.Watch(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	cut := make(chan struct{})
	c.mu.Lock()
	c.cuts = append(c.cuts, cut)
	c.mu.Unlock()
	go func() {
		defer close(out)
		cancelled := clientv3.WatchResponse{Canceled: true, CancelReason: "etcdserver: no leader"}
		for {
			select {
			case r, ok := <-inner:
				if !ok {
					return
				}
				select {
				case out <- r:
				case <-cut:
					out <- cancelled
					return
				case <-ctx.Done():
					return
				}
			case <-cut:
				out <- cancelled
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Cut cancels every watch opened so far.
func (c *cuttingClient) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.cuts {
		close(ch)
	}
	c.cuts = nil
}

// assign writes a row of key waiting for who, as the assigner does.
func assign(t *testing.T, s *etcdstore.Store, key, who string) {
	t.Helper()
	ctx := etcdtest.Context(t)
	l := engine.Lease{Key: key, Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon), Pending: who}
	cur, err := s.GetLease(ctx, key)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		err = s.CreateLease(ctx, l)
	case err == nil:
		l.Counter = cur.Counter + 1
		err = s.UpdateLease(ctx, engine.ExpectOf(cur), l)
	}
	if err != nil {
		t.Fatalf("assign %s to %s: %v", key, who, err)
	}
}

// next reads the watch until it has reported n changes, or fails t.
func next(t *testing.T, w engine.PendingWatch, n int) []engine.PendingChange {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []engine.PendingChange
	for len(out) < n {
		cs, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %v: %v", keysOf(out), err)
		}
		out = append(out, cs...)
	}
	return out
}

func keysOf(cs []engine.PendingChange) []string {
	var ks []string
	for _, c := range cs {
		ks = append(ks, c.Key)
	}
	return ks
}

// increasing checks that the changes' revisions increase.
func increasing(t *testing.T, cs []engine.PendingChange) {
	t.Helper()
	for i := 1; i < len(cs); i++ {
		if cs[i].Revision <= cs[i-1].Revision {
			t.Fatalf("revisions do not increase: %+v", cs)
		}
	}
}

// TestWatchPending: a watch reports each version of a row written while it
// waits for who, in order, and nothing of rows that wait for others or of
// writes before it began.
func TestWatchPending(t *testing.T) {
	s := newStore(t)
	ctx := etcdtest.Context(t)
	assign(t, s, "before", "w1") // before the watch: not reported
	w, err := s.WatchPending(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	assign(t, s, "a", "w1")
	assign(t, s, "x", "w2")
	assign(t, s, "a", "w1") // written again while it waits: reported again
	assign(t, s, "b", "w1")
	assign(t, s, "a", "w2") // moved away: no change for w1
	assign(t, s, "c", "w1")
	got := next(t, w, 4)
	if want := []string{"a", "a", "b", "c"}; !slices.Equal(keysOf(got), want) {
		t.Fatalf("changes %v, want %v", keysOf(got), want)
	}
	increasing(t, got)
}

// TestWatchResumesWithoutGap: a watch the server cancels (a member that lost
// the leader) is opened again after the last revision it reported, so the
// writes made meanwhile are reported, none twice.
func TestWatchResumesWithoutGap(t *testing.T) {
	cc := &cuttingClient{Client: etcdtest.Shared(t).Client(t)}
	s, err := etcdstore.New(cc, etcdtest.Prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	got := resumeScenario(t, s, cc)
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(keysOf(got), want) {
		t.Fatalf("changes %v, want %v: the resumed watch skipped or repeated writes", keysOf(got), want)
	}
	increasing(t, got)
}

// resumeScenario reports a and b, cuts the watch, writes c and d, then reads
// on (the watch resumes), writes e, and returns what the watch reported up
// to e.
func resumeScenario(t *testing.T, s *etcdstore.Store, cc *cuttingClient) []engine.PendingChange {
	t.Helper()
	ctx := etcdtest.Context(t)
	w, err := s.WatchPending(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	assign(t, s, "a", "w1")
	assign(t, s, "b", "w1")
	got := next(t, w, 2)
	cc.Cut()
	assign(t, s, "c", "w1")
	assign(t, s, "d", "w1")
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(200 * time.Millisecond) // after the watch has resumed: e is reported either way
		assign(t, s, "e", "w1")
	}()
	for !slices.Contains(keysOf(got), "e") {
		got = append(got, next(t, w, 1)...)
	}
	<-done
	return got
}

// TestWatchLostOnCompaction: a watch that cannot resume because the history
// it had yet to report was compacted fails with engine.ErrWatchLost, and
// keeps failing.
func TestWatchLostOnCompaction(t *testing.T) {
	cli := etcdtest.Shared(t).Client(t)
	cc := &cuttingClient{Client: cli}
	s, err := etcdstore.New(cc, etcdtest.Prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := etcdtest.Context(t)
	w, err := s.WatchPending(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	assign(t, s, "a", "w1")
	next(t, w, 1)
	cc.Cut()
	assign(t, s, "b", "w1")
	resp, err := cli.Put(ctx, etcdtest.Prefix(t)+"bump", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		cs, err := w.Next(c)
		cancel()
		if !errors.Is(err, engine.ErrWatchLost) {
			t.Fatalf("Next %d after a compaction past the watch = %v, %v; want engine.ErrWatchLost", i+1, keysOf(cs), err)
		}
	}
}

// TestWatchSurvivesMemberStop: the member that serves a watch stops; the
// client reconnects to another member and the watch goes on from where it
// was (a dedicated cluster: the shared one keeps its members).
func TestWatchSurvivesMemberStop(t *testing.T) {
	t.Parallel() // a cluster of its own
	c, err := etcdtest.NewCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err := etcdtest.NewClient(c.Endpoints()[:1]) // the watch goes to member 0
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s, err := etcdstore.New(cli, "/survive/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := etcdtest.Context(t)
	w, err := s.WatchPending(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	assign(t, s, "a", "w1")
	next(t, w, 1)
	cli.SetEndpoints(c.Endpoints()...)
	c.StopMember(0)
	for i := 0; i < 3; i++ {
		assign(t, s, fmt.Sprint("k", i), "w1")
	}
	got := next(t, w, 3)
	if want := []string{"k0", "k1", "k2"}; !slices.Equal(keysOf(got), want) {
		t.Fatalf("after member 0 stopped the watch reported %v, want %v", keysOf(got), want)
	}
}
