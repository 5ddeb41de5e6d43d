package fakes

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// ErrMalformedRow is wrapped by the error GetLease returns for a row that
// cannot be read as a lease (see LeaseTable.InjectMalformed). The engine
// does not know it: to the engine it is an unknown outcome.
var ErrMalformedRow = errors.New("malformed lease row")

// ErrInvalidArgument is wrapped by the errors of requests the real
// service would reject as invalid (a ValidationException or
// InvalidArgumentException): an empty lease key, an unknown iterator type,
// a sequence number that is not in the shard, a string that is not a shard
// iterator, a split or merge that Kinesis would refuse. Seeing it in a
// simulation means the caller made a request it should not have.
var ErrInvalidArgument = errors.New("invalid argument")

// LeaseTableOptions configures a LeaseTable. The zero value is a strongly
// consistent table on its own ManualClock.
type LeaseTableOptions struct {
	// Clock is the table's time source. nil: a new ManualClock reading
	// 2025-01-01T00:00:00Z, available from LeaseTable.Clock.
	Clock Clock
	// Seed seeds the choice of stale versions.
	Seed uint64
	// StaleLag bounds how stale an eventually consistent ListLeases may
	// be: each row it returns is a version that was current at some time
	// within [now-StaleLag, now] (including "no row"). 0 makes eventually
	// consistent reads strongly consistent.
	StaleLag time.Duration
	// IndexLag is how far the pending index (ListPending) lags the rows.
	IndexLag time.Duration
	// NoIndex makes the table one without a pending index: ListPending
	// fails with engine.ErrNoIndex.
	NoIndex bool
	// Watch makes the table keep, per Pending value, the log of writes a
	// watch of its pending index reports (PendingChanges), as etcd keeps
	// its revisions until a compaction (Compact): the table of an etcd
	// store (package etcdstore). See watch.go.
	Watch bool
}

// LeaseTable is an in-memory DynamoDB lease table that implements
// engine.LeaseStore exactly as documented there: conditional creates,
// updates and deletes, strongly consistent GetLease, ListLeases sorted by
// key, and eventually consistent ListLeases that may return versions stale
// by up to StaleLag. Rows are deep-copied in; GetLease copies a row out,
// and ListLeases shares each row's stored version (its Parents and
// Children slices), which never changes once written.
//
// Faults are injected through the embedded Faults; malformed rows through
// InjectMalformed. Put, Remove, InjectMalformed and Snapshot act as an
// operator with direct table access: they are never faulted nor counted.
//
// A LeaseTable is not safe for concurrent use. Create it with
// NewLeaseTable.
type LeaseTable struct {
	Faults

	clock Clock
	rng   *rand.Rand
	lag   time.Duration
	// keys interns the table's keys: each call finds its key's row
	// history and pending index entries with one probe
	keys  map[string]*tableKey
	order []*history // rows sorted by key
	stats Stats

	index   *pendingIndex
	noIndex bool
	// rev counts the writes applied (the store's revision); watch is the
	// log of the writes that leave a row waiting (Options.Watch), nil
	// without it
	rev   int64
	watch *watchLog
}

var _ engine.LeaseStore = (*LeaseTable)(nil)

// NewLeaseTable returns an empty table configured by opts.
func NewLeaseTable(opts LeaseTableOptions) *LeaseTable {
	c := opts.Clock
	if c == nil {
		c = NewManualClock(defaultStart)
	}
	return &LeaseTable{
		clock: c,
		rng:   rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5eed1ea5e7ab1e)),
		lag:   max(opts.StaleLag, 0),
		keys:  make(map[string]*tableKey),
		index: newPendingIndex(opts.IndexLag),

		noIndex: opts.NoIndex,
		watch:   newWatchLog(opts.Watch),
	}
}

// Clock returns the table's clock.
func (t *LeaseTable) Clock() Clock { return t.clock }

// Stats returns the call counts so far, per engine.Op.
func (t *LeaseTable) Stats() Stats { return t.stats }

// ListLeases returns every row, sorted by key: well-formed rows in
// Leases, rows made by InjectMalformed in Malformed. With consistent true
// it returns the latest version of every row; with consistent false each
// row (and each row's presence) may be a version that was current at some
// time within [now-StaleLag, now], chosen with the table's seeded source.
// The Listing belongs to the caller; the Leases' Parents and Children
// slices are the stored versions' own and must not be modified.
func (t *LeaseTable) ListLeases(ctx context.Context, consistent bool) (engine.Listing, error) {
	return t.scan(ctx, func(now time.Time) engine.Listing { return t.list(now, consistent, true) })
}

// ListLeasesAsOf is an eventually consistent ListLeases that returns one
// consistent view of the whole table as it was at time at: every row (and
// every row's presence) is the version current at at. at is clamped into
// [now-StaleLag, now], so a table without StaleLag returns the latest
// versions. It is faulted and counted as ListLeases. It lets a caller that
// draws staleness itself (a simulator) pick the view time. The Listing
// belongs to the caller; the Leases' Parents and Children slices are the
// stored versions' own and must not be modified.
func (t *LeaseTable) ListLeasesAsOf(ctx context.Context, at time.Time) (engine.Listing, error) {
	return t.scan(ctx, func(now time.Time) engine.Listing { return t.listAt(now, at) })
}

// ListLeasesEventual is an eventually consistent ListLeases whose rows
// are each read as of their own time, as DynamoDB's eventual consistency
// is per item: row key is the version that was current lagOf(key) ago
// (clamped into [0, StaleLag]), so that one scan may mix rows of
// different ages, show a row deleted since, miss one created since, and a
// later scan may show an older version than an earlier one did. lagOf is
// called once per key the table holds (or held within StaleLag), in key
// order: a caller that draws the lags (a simulator) decides them. It is
// faulted and counted as ListLeases. The Listing belongs to the caller;
// the Leases' Parents and Children slices are the stored versions' own
// and must not be modified.
func (t *LeaseTable) ListLeasesEventual(ctx context.Context, lagOf func(key string) time.Duration) (engine.Listing, error) {
	return t.scan(ctx, func(now time.Time) engine.Listing { return t.listEach(now, lagOf) })
}

// scan is one ListLeases call: faulted and counted, its rows read by read
// at the call's time.
func (t *LeaseTable) scan(ctx context.Context, read func(now time.Time) engine.Listing) (engine.Listing, error) {
	const op = engine.OpListLeases
	now := t.clock.Now()
	if err := t.begin(ctx, op, "", now); err != nil {
		return engine.Listing{}, err
	}
	l := read(now)
	if err := t.after(op, "", ""); err != nil {
		t.stats.count(op, err, true)
		return engine.Listing{}, err
	}
	t.stats.count(op, nil, false)
	return l, nil
}

// GetLease returns the latest version of the row key (a strongly
// consistent read), an error wrapping engine.ErrNotFound if there is none,
// or an error wrapping ErrMalformedRow for a malformed row. The Lease
// belongs to the caller.
func (t *LeaseTable) GetLease(ctx context.Context, key string) (engine.Lease, error) {
	const op = engine.OpGetLease
	now := t.clock.Now()
	if err := t.begin(ctx, op, key, now); err != nil {
		return engine.Lease{}, err
	}
	var l engine.Lease
	var err error
	h := t.row(key)
	switch {
	case h == nil || h.current().state == rowAbsent:
		err = &callError{op: op, subject: key, msg: "no such lease", err: engine.ErrNotFound}
	case h.current().state == rowMalformed:
		err = &callError{op: op, subject: key, msg: h.current().reason, err: ErrMalformedRow}
	default:
		l = h.current().lease.Clone()
	}
	return l, t.end(op, key, err)
}

// CreateLease writes a copy of l if no row with key l.Key exists (not even
// a malformed one), else fails with an error wrapping
// engine.ErrConditionFailed. An empty key is an invalid request.
func (t *LeaseTable) CreateLease(ctx context.Context, l engine.Lease) error {
	const op = engine.OpCreateLease
	now := t.clock.Now()
	if err := t.begin(ctx, op, l.Key, now); err != nil {
		return err
	}
	var err error
	tk := t.keys[l.Key]
	h := tk.row()
	switch {
	case l.Key == "":
		err = &callError{op: op, msg: "empty leaseKey", err: ErrInvalidArgument}
	case h != nil && h.current().state != rowAbsent:
		err = newConditionError(op, l.Key, true, engine.Expect{}, h)
	default:
		t.writeRow(tk, l.Key, version{at: now, state: rowPresent, lease: l.Clone()}, now)
	}
	return t.end(op, l.Key, err)
}

// UpdateLease replaces the row l.Key by a copy of l if the stored row is
// well formed and has expect's owner and counter, else fails with an error
// wrapping engine.ErrConditionFailed (also when there is no row, or the
// row is malformed).
func (t *LeaseTable) UpdateLease(ctx context.Context, expect engine.Expect, l engine.Lease) error {
	const op = engine.OpUpdateLease
	now := t.clock.Now()
	if err := t.begin(ctx, op, l.Key, now); err != nil {
		return err
	}
	var err error
	if tk := t.keys[l.Key]; !matches(tk.row(), expect) {
		err = newConditionError(op, l.Key, false, expect, tk.row())
	} else {
		t.writeRow(tk, l.Key, version{at: now, state: rowPresent, lease: l.Clone()}, now)
	}
	return t.end(op, l.Key, err)
}

// DeleteLease removes the row key if it is well formed and has expect's
// owner and counter, else fails with an error wrapping
// engine.ErrConditionFailed.
func (t *LeaseTable) DeleteLease(ctx context.Context, key string, expect engine.Expect) error {
	const op = engine.OpDeleteLease
	now := t.clock.Now()
	if err := t.begin(ctx, op, key, now); err != nil {
		return err
	}
	var err error
	if tk := t.keys[key]; !matches(tk.row(), expect) {
		err = newConditionError(op, key, false, expect, tk.row())
	} else {
		t.writeRow(tk, key, version{at: now, state: rowAbsent}, now)
	}
	return t.end(op, key, err)
}

// matches reports whether the current version of h is a well-formed row
// with expect's owner and counter.
func matches(h *history, expect engine.Expect) bool {
	if h == nil {
		return false
	}
	v := h.current()
	return v.state == rowPresent && v.lease.Owner == expect.Owner && v.lease.Counter == expect.Counter
}

// Put writes a copy of l unconditionally, as an operator editing the
// table would (for seeding a table in tests, e.g. with rows KCL wrote). It
// is neither faulted nor counted. An empty key is rejected.
func (t *LeaseTable) Put(l engine.Lease) error {
	if l.Key == "" {
		return &callError{msg: "Put: empty leaseKey", err: ErrInvalidArgument}
	}
	now := t.clock.Now()
	t.write(l.Key, version{at: now, state: rowPresent, lease: l.Clone()}, now)
	return nil
}

// Remove deletes the row key unconditionally (well formed or not), as an
// operator would. It is neither faulted nor counted.
func (t *LeaseTable) Remove(key string) {
	if h := t.row(key); h != nil && h.current().state != rowAbsent {
		now := t.clock.Now()
		t.write(key, version{at: now, state: rowAbsent}, now)
	}
}

// InjectMalformed replaces the row key by one that cannot be read as a
// lease (a missing or wrongly typed attribute, described by reason).
// ListLeases reports it in Listing.Malformed, GetLease fails with an error
// wrapping ErrMalformedRow, CreateLease, UpdateLease and DeleteLease fail
// their conditions on it. Remove or Put clears it.
func (t *LeaseTable) InjectMalformed(key, reason string) {
	now := t.clock.Now()
	t.write(key, version{at: now, state: rowMalformed, reason: reason}, now)
}

// Snapshot returns the latest version of every row, sorted by key, like a
// consistent ListLeases that is neither faulted nor counted (for checkers
// at the end of a run). The Listing belongs to the caller; the Leases'
// Parents and Children slices are the stored versions' own and must not
// be modified.
func (t *LeaseTable) Snapshot() engine.Listing {
	return t.list(t.clock.Now(), true, false)
}

// Current returns the row stored under key now, strongly consistent and
// without a call (no fault, no count): what the table holds, for a test or
// the simulator's cost figures to look at. ok is false if there is no row
// or it is malformed (reason says why). The Lease's Parents and Children
// are the stored version's own and must not be modified.
func (t *LeaseTable) Current(key string) (l engine.Lease, reason string, ok bool) {
	h := t.row(key)
	if h == nil {
		return engine.Lease{}, "", false
	}
	switch v := h.current(); v.state {
	case rowPresent:
		return v.lease, "", true
	case rowMalformed:
		return engine.Lease{}, v.reason, false
	}
	return engine.Lease{}, "", false
}

// begin starts a call: it fails it if ctx is done or an injected fault
// says so, counting the failure.
func (t *LeaseTable) begin(ctx context.Context, op engine.Op, key string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		err = &callError{op: op, subject: key, err: err}
		t.stats.count(op, err, false)
		return err
	}
	if err := t.Faults.before(op, key, "", now); err != nil {
		t.stats.count(op, err, true)
		return err
	}
	return nil
}

// end finishes a call that executed with result err: a failure queued by
// FailNextApplied replaces it. It counts the call.
func (t *LeaseTable) end(op engine.Op, key string, err error) error {
	if ferr := t.Faults.after(op, key, ""); ferr != nil {
		t.stats.count(op, ferr, true)
		return ferr
	}
	t.stats.count(op, err, false)
	return err
}

// horizon returns the oldest time a stale read may reflect.
func (t *LeaseTable) horizon(now time.Time) time.Time { return now.Add(-t.lag) }

// tableKey is one key of the table: its row's history (nil: no version
// a read can return) and its entries in the pending index.
type tableKey struct {
	name string
	h    *history
	pend []pendAt
}

// row returns k's history, nil if k is nil or has none.
func (k *tableKey) row() *history {
	if k == nil {
		return nil
	}
	return k.h
}

// row returns the history of key, nil if none.
func (t *LeaseTable) row(key string) *history { return t.keys[key].row() }

// intern returns key's tableKey, created if new.
func (t *LeaseTable) intern(key string) *tableKey {
	tk := t.keys[key]
	if tk == nil {
		tk = &tableKey{name: key}
		t.keys[key] = tk
	}
	return tk
}

// dropRow forgets the history of k, which no read can return any more,
// and k itself if the index has nothing of it either.
func (t *LeaseTable) dropRow(k *tableKey) {
	k.h = nil
	if len(k.pend) == 0 {
		delete(t.keys, k.name)
	}
}

// write makes v the current version of key, creating or forgetting the
// key's history as needed. v.lease must already be a private copy.
func (t *LeaseTable) write(key string, v version, now time.Time) {
	t.writeRow(t.keys[key], key, v, now)
}

// writeRow is write with tk the key's tableKey (nil if none). Each call is
// one revision of the table (Revision), as an etcd transaction is.
func (t *LeaseTable) writeRow(tk *tableKey, key string, v version, now time.Time) {
	t.rev++
	if tk == nil {
		if v.state == rowAbsent && v.lease.Pending == "" {
			return // nothing to write, nothing to index
		}
		tk = t.intern(key)
	}
	t.index.update(tk, v.lease.Pending, now) // "" for a row gone or malformed
	if t.watch != nil && v.state == rowPresent && v.lease.Pending != "" {
		t.watch.add(v.lease.Pending, key, t.rev)
	}
	h := tk.h
	if h == nil {
		if v.state == rowAbsent {
			if len(tk.pend) == 0 {
				delete(t.keys, key)
			}
			return
		}
		h = newHistory(key)
		tk.h = h
		i, _ := t.find(key)
		t.order = slices.Insert(t.order, i, h)
	}
	h.write(v, t.horizon(now))
	if h.gone() {
		t.dropRow(tk)
		if i, ok := t.find(key); ok {
			t.order = slices.Delete(t.order, i, i+1)
		}
	}
}

// find returns the position of key in t.order, or where it would go.
func (t *LeaseTable) find(key string) (int, bool) {
	return slices.BinarySearchFunc(t.order, key, func(h *history, k string) int { return strings.Compare(h.key, k) })
}

// list returns the rows in key order. Unless consistent, each row is a
// version picked with t.rng among those current within the lag. With
// prune it also drops versions no read can return any more and forgets
// deleted keys; Snapshot passes false so that it stays a pure read.
func (t *LeaseTable) list(now time.Time, consistent, prune bool) engine.Listing {
	horizon := t.horizon(now)
	out := engine.Listing{Leases: make([]engine.Lease, 0, len(t.order))}
	n := 0
	for _, h := range t.order {
		key := h.key
		if prune {
			h.prune(horizon)
			if h.gone() {
				t.dropRow(t.keys[key])
				continue
			}
			t.order[n] = h
			n++
		}
		v := h.current()
		if !consistent {
			if c := h.candidates(horizon); len(c) > 1 {
				v = &c[t.rng.IntN(len(c))]
			}
		}
		switch v.state {
		case rowPresent:
			out.Leases = append(out.Leases, v.lease) // shares the version's slices
		case rowMalformed:
			out.Malformed = append(out.Malformed, engine.MalformedRow{Key: key, Reason: v.reason})
		}
	}
	if prune {
		clear(t.order[n:])
		t.order = t.order[:n]
	}
	return out
}

// listAt returns the rows in key order as they were at time at, clamped
// into [now-lag, now]. It prunes like list.
func (t *LeaseTable) listAt(now, at time.Time) engine.Listing {
	horizon := t.horizon(now)
	if at.Before(horizon) {
		at = horizon
	}
	out := engine.Listing{Leases: make([]engine.Lease, 0, len(t.order))}
	n := 0
	for _, h := range t.order {
		key := h.key
		h.prune(horizon)
		if h.gone() {
			t.dropRow(t.keys[key])
			continue
		}
		t.order[n] = h
		n++
		var v *version
		if at.Before(now) {
			v = &h.v[h.keepFrom(at)]
		} else {
			v = h.current()
		}
		switch v.state {
		case rowPresent:
			out.Leases = append(out.Leases, v.lease) // shares the version's slices
		case rowMalformed:
			out.Malformed = append(out.Malformed, engine.MalformedRow{Key: key, Reason: v.reason})
		}
	}
	clear(t.order[n:])
	t.order = t.order[:n]
	return out
}

// listEach returns the rows in key order, each as it was lagOf(key) ago
// (clamped into [0, lag]). It prunes like list.
func (t *LeaseTable) listEach(now time.Time, lagOf func(string) time.Duration) engine.Listing {
	horizon := t.horizon(now)
	out := engine.Listing{Leases: make([]engine.Lease, 0, len(t.order))}
	n := 0
	for _, h := range t.order {
		key := h.key
		h.prune(horizon)
		if h.gone() {
			t.dropRow(t.keys[key])
			continue
		}
		t.order[n] = h
		n++
		v := h.current()
		if lag := min(max(lagOf(key), 0), t.lag); lag > 0 {
			v = &h.v[h.keepFrom(now.Add(-lag))]
		}
		switch v.state {
		case rowPresent:
			out.Leases = append(out.Leases, v.lease) // shares the version's slices
		case rowMalformed:
			out.Malformed = append(out.Malformed, engine.MalformedRow{Key: key, Reason: v.reason})
		}
	}
	clear(t.order[n:])
	t.order = t.order[:n]
	return out
}

// conditionError is the error of a conditional write whose condition did
// not hold. It wraps engine.ErrConditionFailed and formats its message
// only when asked.
type conditionError struct {
	op     engine.Op
	key    string
	create bool          // the condition was "no row"
	want   engine.Expect // the condition of an update or delete
	state  rowState      // the row found
	found  engine.Expect // its owner and counter, if rowPresent
	reason string        // its reason, if rowMalformed
}

// newConditionError describes the failed condition of a call of op on key
// that found h (nil: no history).
func newConditionError(op engine.Op, key string, create bool, want engine.Expect, h *history) error {
	e := &conditionError{op: op, key: key, create: create, want: want}
	if h != nil {
		v := h.current()
		e.state, e.found, e.reason = v.state, engine.ExpectOf(v.lease), v.reason
	}
	return e
}

func (e *conditionError) Error() string {
	s := "fakes: " + e.op.String() + " " + e.key + ": condition failed: expected "
	if e.create {
		s += "no row"
	} else {
		s += "owner " + strconv.Quote(e.want.Owner) + " counter " + strconv.FormatInt(e.want.Counter, 10)
	}
	s += ", found "
	switch e.state {
	case rowAbsent:
		s += "no row"
	case rowMalformed:
		s += "a malformed row (" + e.reason + ")"
	default:
		s += "owner " + strconv.Quote(e.found.Owner) + " counter " + strconv.FormatInt(e.found.Counter, 10)
	}
	return s
}

func (e *conditionError) Unwrap() error { return engine.ErrConditionFailed }
