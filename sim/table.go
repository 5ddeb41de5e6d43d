package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// table is the simulated lease table: DynamoDB semantics (conditional
// writes, strongly consistent gets, scans that may be eventually
// consistent). It keeps recent versions of each row so a stale scan can
// return the row as it was some time ago.
type table struct {
	rows map[string]*trow
	keys []string // sorted
	keep time.Duration
}

type version struct {
	at      time.Duration
	lease   engine.Lease
	deleted bool
}

type trow struct {
	versions []version // oldest first; the last is current
}

func newTable() *table { return &table{rows: map[string]*trow{}, keep: time.Minute} }

func (r *trow) current() (engine.Lease, bool) {
	v := &r.versions[len(r.versions)-1]
	return v.lease, !v.deleted
}

// at returns the row as it was at true time t.
func (r *trow) at(t time.Duration) (engine.Lease, bool) {
	for i := len(r.versions) - 1; i >= 0; i-- {
		if r.versions[i].at <= t {
			return r.versions[i].lease, !r.versions[i].deleted
		}
	}
	return engine.Lease{}, false
}

func (tb *table) row(key string) *trow {
	r := tb.rows[key]
	if r == nil {
		r = &trow{}
		tb.rows[key] = r
		i := sort.SearchStrings(tb.keys, key)
		tb.keys = append(tb.keys, "")
		copy(tb.keys[i+1:], tb.keys[i:])
		tb.keys[i] = key
	}
	return r
}

func (tb *table) set(now time.Duration, key string, l engine.Lease, deleted bool) {
	r := tb.row(key)
	r.versions = append(r.versions, version{at: now, lease: l.Clone(), deleted: deleted})
	// forget versions no stale read can return any more
	cut := 0
	for cut < len(r.versions)-1 && r.versions[cut+1].at <= now-tb.keep {
		cut++
	}
	if cut > 0 {
		r.versions = append(r.versions[:0], r.versions[cut:]...)
	}
}

// get returns the current row.
func (tb *table) get(key string) (engine.Lease, bool) {
	r := tb.rows[key]
	if r == nil || len(r.versions) == 0 {
		return engine.Lease{}, false
	}
	return r.current()
}

// list returns the rows as of true time view (view == now for a
// consistent scan), in key order.
func (tb *table) list(view time.Duration, stale bool) []engine.Lease {
	out := make([]engine.Lease, 0, len(tb.keys))
	for _, k := range tb.keys {
		r := tb.rows[k]
		var l engine.Lease
		var ok bool
		if stale {
			l, ok = r.at(view)
		} else {
			l, ok = r.current()
		}
		if ok {
			out = append(out, l.Clone())
		}
	}
	return out
}

// snapshot returns the current table.
func (tb *table) snapshot() []engine.Lease { return tb.list(0, false) }

var errCond = fmt.Errorf("sim table: %w", engine.ErrConditionFailed)
var errNotFound = fmt.Errorf("sim table: %w", engine.ErrNotFound)

// write applies a write call at now. unconditional skips the condition (a
// planted bug).
func (tb *table) write(now time.Duration, c *engine.Call, unconditional bool) (prev engine.Lease, existed bool, err error) {
	switch c.Op {
	case engine.OpCreateLease:
		prev, existed = tb.get(c.Lease.Key)
		if existed {
			return prev, existed, errCond
		}
		tb.set(now, c.Lease.Key, c.Lease, false)
	case engine.OpUpdateLease:
		prev, existed = tb.get(c.Lease.Key)
		if !existed || (!unconditional && (prev.Owner != c.Expect.Owner || prev.Counter != c.Expect.Counter)) {
			return prev, existed, errCond
		}
		tb.set(now, c.Lease.Key, c.Lease, false)
	case engine.OpDeleteLease:
		prev, existed = tb.get(c.Key)
		if !existed || (!unconditional && (prev.Owner != c.Expect.Owner || prev.Counter != c.Expect.Counter)) {
			return prev, existed, errCond
		}
		tb.set(now, c.Key, engine.Lease{Key: c.Key}, true)
	}
	return prev, existed, nil
}
