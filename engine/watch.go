package engine

import (
	"context"
	"errors"
)

// PendingWatcher is implemented by a LeaseStore that can push to a worker
// the rows that wait for it (etcdstore.Store: an etcd watch on its pending
// index), so that the worker need not poll its PendingIndex: a planned move
// then costs the watch's latency and the take, not a poll interval.
// Consumer uses it when its Store implements it (see Config.WatchPending).
type PendingWatcher interface {
	PendingIndex
	// WatchPending starts a watch of the rows whose Pending is who and
	// returns once the store has established it. From then on every write
	// that leaves a row waiting for who (it makes the row wait for who, or
	// writes it again while it waits) is reported by the watch's Next:
	// in write order, once each, none skipped. A write before the watch
	// began is not reported: the caller reads the index once after
	// WatchPending returns, and the two together miss nothing.
	WatchPending(ctx context.Context, who string) (PendingWatch, error)
}

// PendingWatch is one watch of a PendingWatcher.
type PendingWatch interface {
	// Next waits for writes the watch has not reported yet and returns
	// them in write order. A watch that loses its connection resumes where
	// it was, without a gap; one that cannot (the store has discarded the
	// history it had yet to report: an etcd compaction) fails with an error
	// wrapping ErrWatchLost, and so does every later Next. Next returns
	// ctx's error when ctx ends first.
	Next(ctx context.Context) ([]PendingChange, error)
	// Close ends the watch.
	Close() error
}

// PendingChange is one write a PendingWatch reports: the key of the row and
// the store's revision of the write, which increases from one change of a
// watch to the next.
type PendingChange struct {
	Key      string
	Revision int64
}

// ErrWatchLost is wrapped by the error of a PendingWatch that cannot go on
// without missing writes.
var ErrWatchLost = errors.New("pending watch lost: it cannot resume without a gap")
