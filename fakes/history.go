package fakes

import (
	"time"

	"github.com/shardlease/shardlease/engine"
)

// rowState is what a version of a row holds.
type rowState uint8

const (
	rowAbsent    rowState = iota // no row (never created, or deleted)
	rowPresent                   // a well-formed lease
	rowMalformed                 // a row that cannot be read as a lease
)

// version is one state of one key of the table, current from at until the
// next version's at.
type version struct {
	at     time.Time
	state  rowState
	lease  engine.Lease // rowPresent: owned by the history, never aliased out
	reason string       // rowMalformed
}

// history is the short version history of one key: the versions that were
// current at some time within the stale-read lag, oldest first. The last
// one is the current state. A key that has never existed starts with an
// absent version at the zero time, so that a stale read can still miss a
// freshly created row.
type history struct {
	key string
	v   []version
}

// newHistory returns the history of a key that has never existed.
func newHistory(key string) *history {
	h := &history{key: key, v: make([]version, 1, 2)}
	h.v[0] = version{state: rowAbsent}
	return h
}

// current returns the latest version. The pointer is valid until the next
// write.
func (h *history) current() *version { return &h.v[len(h.v)-1] }

// write makes v the current version and drops versions no read can return
// any more (see prune).
func (h *history) write(v version, horizon time.Time) {
	h.v = append(h.v, v)
	h.prune(horizon)
}

// prune drops every version superseded at or before horizon: it keeps the
// newest version written at or before horizon (the one current at horizon)
// and every later one. Versions kept are moved to the front of the array
// only when no more of them are kept than dropped; otherwise the slice
// starts later in its array (append moves them when it grows it), so that
// a long history (a lag of minutes, a row written every second) costs no
// copy of the whole history per write.
func (h *history) prune(horizon time.Time) {
	i := h.keepFrom(horizon)
	if i == 0 {
		return
	}
	if n := len(h.v) - i; n <= i {
		copy(h.v, h.v[i:])
		clear(h.v[n:]) // drop references held by the old versions
		h.v = h.v[:n]
		return
	}
	clear(h.v[:i])
	h.v = h.v[i:]
}

// keepFrom returns the index of the newest version written at or before
// horizon, or 0 if there is none. Versions are in the order written, so
// their times never decrease.
func (h *history) keepFrom(horizon time.Time) int {
	v := h.v
	if n := len(v); n < 2 || !v[n-1].at.After(horizon) {
		return max(n-1, 0) // none, or the current one
	}
	// the first index in [1, n) written after horizon, less one
	lo, hi := 1, len(v)-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if v[m].at.After(horizon) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo - 1
}

// candidates returns the versions that were current at some time within
// [horizon, now]: the one current at horizon and every later one. The
// slice aliases the history and is valid until the next write.
func (h *history) candidates(horizon time.Time) []version {
	return h.v[h.keepFrom(horizon):]
}

// gone reports whether the key can be forgotten: it is absent now and no
// read within the lag can return an earlier version.
func (h *history) gone() bool {
	return len(h.v) == 1 && h.v[0].state == rowAbsent
}
