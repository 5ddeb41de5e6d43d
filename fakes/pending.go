package fakes

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// pendingIndex is the lease table's index of the Pending attribute, as
// DynamoDB keeps a sparse global secondary index: eventually consistent,
// each key's entry lagging its row by up to the index lag. It keeps, per
// key (in its tableKey), the Pending values of the row's recent versions
// with the time each became current, and per value the keys that may
// show it.
type pendingIndex struct {
	lag     time.Duration
	byValue map[string]map[*tableKey]struct{}
}

type pendAt struct {
	at      time.Time
	pending string // "" when the row has no Pending or is gone
}

func newPendingIndex(lag time.Duration) *pendingIndex {
	return &pendingIndex{lag: max(lag, 0), byValue: map[string]map[*tableKey]struct{}{}}
}

// update records that key's row has Pending p from now on.
func (x *pendingIndex) update(key *tableKey, p string, now time.Time) {
	us := key.pend
	if len(us) == 0 && p == "" {
		return
	}
	if n := len(us); n > 0 && us[n-1].pending == p {
		return
	}
	// Forget what no read can see any more: keep the last value before
	// the horizon.
	horizon := now.Add(-x.lag)
	i := 0
	for i+1 < len(us) && !us[i+1].at.After(horizon) {
		i++
	}
	us = append(us[i:], pendAt{at: now, pending: p})
	if p != "" {
		keys := x.byValue[p]
		if keys == nil {
			keys = map[*tableKey]struct{}{}
			x.byValue[p] = keys
		}
		keys[key] = struct{}{}
	}
	key.pend = us
}

// visibleAt returns the Pending of key as of seen.
func (x *pendingIndex) visibleAt(key *tableKey, seen time.Time) string {
	p := ""
	for _, u := range key.pend {
		if u.at.After(seen) {
			break
		}
		p = u.pending
	}
	return p
}

// query returns the keys the index shows with Pending who, sorted, and
// forgets keys that can no longer show it. With lagOf, each key's entry
// is as of its own lag (clamped into [0, lag]); else every entry lags by
// the index lag.
func (x *pendingIndex) query(who string, now time.Time, lagOf func(string) time.Duration) []string {
	var out []string
	keys := make([]*tableKey, 0, len(x.byValue[who]))
	for key := range x.byValue[who] {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b *tableKey) int { return strings.Compare(a.name, b.name) }) // lagOf draws in key order
	for _, key := range keys {
		seen := now.Add(-x.lag)
		if lagOf != nil {
			seen = now.Add(-min(max(lagOf(key.name), 0), x.lag))
		}
		if x.visibleAt(key, seen) == who {
			out = append(out, key.name)
			continue
		}
		us := key.pend
		if us[len(us)-1].pending != who && !slices.ContainsFunc(us, func(u pendAt) bool { return u.pending == who && u.at.After(now.Add(-x.lag)) }) {
			delete(x.byValue[who], key)
		}
	}
	slices.Sort(out)
	return out
}

// ListPending returns the rows whose Pending the index shows as who,
// sorted by key: each with its Key and Pending only (the index projects
// the keys, as shardlease's DynamoDB index does), as the index was up to
// IndexLag ago. engine.PendingIndex.
func (t *LeaseTable) ListPending(ctx context.Context, who string) ([]engine.Lease, error) {
	const op = engine.OpListPending
	now := t.clock.Now()
	if err := t.begin(ctx, op, who, now); err != nil {
		return nil, err
	}
	return t.pending(op, who, now, nil)
}

// ListPendingEventual is ListPending with each key's index entry as of
// its own lag, lagOf(key) (clamped into [0, IndexLag]), as a global
// secondary index lags its table item by item: one query may show a row
// that has stopped waiting for who, and miss one that has started to.
// lagOf is called once per key the index may show with who, in key
// order. It is faulted and counted as ListPending.
func (t *LeaseTable) ListPendingEventual(ctx context.Context, who string, lagOf func(key string) time.Duration) ([]engine.Lease, error) {
	const op = engine.OpListPending
	now := t.clock.Now()
	if err := t.begin(ctx, op, who, now); err != nil {
		return nil, err
	}
	return t.pending(op, who, now, lagOf)
}

func (t *LeaseTable) pending(op engine.Op, who string, now time.Time, lagOf func(string) time.Duration) ([]engine.Lease, error) {
	var out []engine.Lease
	var err error
	if t.noIndex {
		err = &callError{op: op, subject: who, msg: "the table has no pending index", err: engine.ErrNoIndex}
	} else {
		for _, k := range t.index.query(who, now, lagOf) {
			out = append(out, engine.Lease{Key: k, Pending: who})
		}
	}
	return out, t.end(op, who, err)
}

var _ engine.PendingIndex = (*LeaseTable)(nil)
