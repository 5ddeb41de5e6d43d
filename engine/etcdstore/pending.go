package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/engine"
)

// ListPending returns the rows whose pending is who, sorted by key, with Key
// and Pending set: a linearizable read of who's directory of the pending
// index, which every write keeps in the same Txn as its row, so the index
// is never behind its rows. engine.PendingIndex.
func (s *Store) ListPending(ctx context.Context, who string) ([]engine.Lease, error) {
	p := s.pendingPrefix(who)
	var out []engine.Lease
	_, err := s.scan(clientv3.WithRequireLeader(ctx), fmt.Sprintf("list pending %q", who), p, true, true, func(kv *mvccpb.KeyValue) {
		out = append(out, engine.Lease{Key: strings.TrimPrefix(string(kv.Key), p), Pending: who})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WatchPending watches who's directory of the pending index: an etcd watch
// of its keys' puts (every write of a row that waits for who puts its
// entry), opened with WithRequireLeader so that a member cut off from the
// leader ends it rather than leave it silent, and confirmed by the server
// (its created notification) before WatchPending returns.
// engine.PendingWatcher.
//
// The watch resumes by itself: the client reconnects a broken stream after
// the last revision it delivered, and a watch the server cancelled for
// another reason than a compaction (its member lost the leader) is opened
// again, on whichever member answers, after the last revision it reported.
// Only a compaction past that revision loses it (engine.ErrWatchLost).
func (s *Store) WatchPending(ctx context.Context, who string) (engine.PendingWatch, error) {
	w := &watch{s: s, who: who, prefix: s.pendingPrefix(who)}
	if err := w.open(ctx, 0); err != nil {
		return nil, err
	}
	return w, nil
}

// watch is one PendingWatch.
type watch struct {
	s      *Store
	who    string
	prefix string
	ch     clientv3.WatchChan
	cancel context.CancelFunc
	// next is the first revision not reported yet: the watch resumes there
	next int64
	// broken: the server cancelled the watch and it is not open again yet
	broken bool
	lost   error // set once the watch cannot go on
}

// open opens the watch from revision rev (0: after the cluster's current
// revision, read linearizably) and waits for the server's confirmation.
func (w *watch) open(ctx context.Context, rev int64) error {
	what := fmt.Sprintf("watch pending %q", w.who)
	if rev == 0 {
		// "From now" as the cluster knows it: a watch without a revision
		// starts at its member's own revision, which may lag the cluster's
		// and so report writes made before it began.
		resp, err := w.s.c.Get(clientv3.WithRequireLeader(ctx), w.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return w.s.mapError(what+" (reading the current revision)", err)
		}
		rev = resp.Header.Revision + 1
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.WithoutCancel(ctx)))
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithFilterDelete(), clientv3.WithCreatedNotify(), clientv3.WithRev(rev)}
	ch := w.s.c.Watch(wctx, w.prefix, opts...)
	select {
	case resp, ok := <-ch:
		switch {
		case !ok:
			cancel()
			return fmt.Errorf("etcdstore: %s: the watch closed before the server confirmed it", what)
		case resp.Err() != nil:
			cancel()
			if isErr(resp.Err(), rpctypes.ErrCompacted) {
				return fmt.Errorf("etcdstore: %s from revision %d: compacted (the cluster keeps history from revision %d): %w: %w",
					what, rev, resp.CompactRevision, engine.ErrWatchLost, resp.Err())
			}
			return w.s.mapError(what, resp.Err())
		case !resp.Created:
			cancel()
			return fmt.Errorf("etcdstore: %s: the server's first answer was not its confirmation", what)
		}
		w.ch, w.cancel = ch, cancel
		w.next = rev
		return nil
	case <-ctx.Done():
		cancel()
		return fmt.Errorf("etcdstore: %s: not confirmed: %w", what, ctx.Err())
	}
}

// Next returns the keys of the next rows written while they wait for who,
// with their revisions. engine.PendingWatch.
func (w *watch) Next(ctx context.Context) ([]engine.PendingChange, error) {
	for {
		if w.lost != nil {
			return nil, w.lost
		}
		if w.broken {
			if err := w.resume(ctx); err != nil {
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case resp, ok := <-w.ch:
			if !ok {
				// closed without a last word: the client is closing
				w.lost = fmt.Errorf("etcdstore: watch pending %q: the watch closed (client closed?): %w", w.who, engine.ErrWatchLost)
				return nil, w.lost
			}
			if err := resp.Err(); err != nil {
				if isErr(err, rpctypes.ErrCompacted) {
					w.lost = fmt.Errorf("etcdstore: watch pending %q: compacted past revision %d: %w: %w", w.who, w.next, engine.ErrWatchLost, err)
					return nil, w.lost
				}
				w.cancel()
				w.broken = true
				continue
			}
			var out []engine.PendingChange
			for _, ev := range resp.Events {
				if ev.Type == mvccpb.PUT {
					out = append(out, engine.PendingChange{Key: strings.TrimPrefix(string(ev.Kv.Key), w.prefix), Revision: ev.Kv.ModRevision})
				}
				w.next = ev.Kv.ModRevision + 1
			}
			if len(out) > 0 {
				return out, nil
			}
		}
	}
}

// resume opens the watch again after the server cancelled it, after the
// last revision it reported, retrying with backoff until ctx ends. A
// compaction past that revision loses the watch.
func (w *watch) resume(ctx context.Context) error {
	from := w.next
	if w.s.bug("watch-resume-at-current") {
		from = 0
	}
	delay := 20 * time.Millisecond
	for {
		err := w.open(ctx, from)
		switch {
		case err == nil:
			w.broken = false
			return nil
		case errors.Is(err, engine.ErrWatchLost):
			w.lost = err
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("etcdstore: watch pending %q: resuming after revision %d: %w (last error: %v)", w.who, w.next-1, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// Close ends the watch. engine.PendingWatch.
func (w *watch) Close() error {
	if w.cancel != nil {
		w.cancel()
	}
	if w.lost == nil {
		w.lost = fmt.Errorf("etcdstore: watch pending %q: closed: %w", w.who, engine.ErrWatchLost)
	}
	return nil
}
