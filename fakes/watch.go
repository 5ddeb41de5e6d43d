package fakes

import (
	"fmt"
	"slices"

	"github.com/shardlease/shardlease/engine"
)

// watchLog is the history a watch of the pending index reads, as an etcd
// keyspace keeps it: per Pending value, the writes (key and revision) that
// left a row waiting for it, until a compaction discards the older ones.
type watchLog struct {
	byWho     map[string][]engine.PendingChange
	compacted int64 // revisions below it are gone
}

func newWatchLog(on bool) *watchLog {
	if !on {
		return nil
	}
	return &watchLog{byWho: map[string][]engine.PendingChange{}, compacted: 1}
}

func (l *watchLog) add(who, key string, rev int64) {
	l.byWho[who] = append(l.byWho[who], engine.PendingChange{Key: key, Revision: rev})
}

// Revision returns the table's revision: the number of writes applied to
// it (its first write has revision 1), as an etcd store's revision counts
// its transactions.
func (t *LeaseTable) Revision() int64 { return t.rev }

// PendingChanges returns the writes that left a row waiting for who with a
// revision of at least from, in revision order: what a watch of who's
// pending rows that resumes at from reports (LeaseTableOptions.Watch). It
// fails with an error wrapping engine.ErrWatchLost when from is older than
// the oldest revision the table keeps (Compact). The slice is the log's own
// and must not be modified.
func (t *LeaseTable) PendingChanges(who string, from int64) ([]engine.PendingChange, error) {
	if t.watch == nil {
		return nil, &callError{op: engine.OpListPending, subject: who, msg: "the table keeps no watch history (LeaseTableOptions.Watch)", err: engine.ErrWatchLost}
	}
	if from < t.watch.compacted {
		return nil, &callError{op: engine.OpListPending, subject: who,
			msg: fmt.Sprintf("revision %d is compacted (the oldest kept is %d)", from, t.watch.compacted), err: engine.ErrWatchLost}
	}
	cs := t.watch.byWho[who]
	i, _ := slices.BinarySearchFunc(cs, from, func(c engine.PendingChange, rev int64) int {
		switch {
		case c.Revision < rev:
			return -1
		case c.Revision > rev:
			return 1
		}
		return 0
	})
	return cs[i:], nil
}

// Compact discards the revisions below rev (at most the table's next one),
// as etcd's compaction does: a watch that resumes before rev is lost.
func (t *LeaseTable) Compact(rev int64) {
	if t.watch == nil {
		return
	}
	rev = min(rev, t.rev+1)
	if rev <= t.watch.compacted {
		return
	}
	t.watch.compacted = rev
	for who, cs := range t.watch.byWho { // each independently
		i := 0
		for i < len(cs) && cs[i].Revision < rev {
			i++
		}
		switch {
		case i == len(cs):
			delete(t.watch.byWho, who)
		case i > 0:
			t.watch.byWho[who] = slices.Clone(cs[i:])
		}
	}
}

// Compacted returns the oldest revision the table keeps (1 before any
// compaction).
func (t *LeaseTable) Compacted() int64 {
	if t.watch == nil {
		return 1
	}
	return t.watch.compacted
}
