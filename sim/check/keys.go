package check

import (
	"slices"
	"strings"
	"time"
)

// keyTable interns the lease keys of a history: an Online looks a
// record's key up once (one map probe) and hands the checkers its
// keyState, which holds what each of them keeps of the key and of each
// process on it. Keys are never dropped (each checker kept its per-key
// state for the whole run already), so the table is proportional to the
// shards and other rows of the world.
type keyTable struct {
	m   map[string]*keyState
	all []*keyState // in the order the keys were first seen
}

func newKeyTable() *keyTable { return &keyTable{m: map[string]*keyState{}} }

// get returns the state of key k, created if new.
func (kt *keyTable) get(k string) *keyState {
	ks := kt.m[k]
	if ks == nil {
		ks = &keyState{name: k}
		kt.m[k] = ks
		kt.all = append(kt.all, ks)
	}
	return ks
}

// lookup returns the state of key k, or nil if it was never seen.
func (kt *keyTable) lookup(k string) *keyState { return kt.m[k] }

// sorted returns the keys for which has is true, ordered by name (as
// sorting the keys of the map each checker used to keep did).
func (kt *keyTable) sorted(has func(*keyState) bool) []*keyState {
	var out []*keyState
	for _, ks := range kt.all {
		if has(ks) {
			out = append(out, ks)
		}
	}
	slices.SortFunc(out, func(a, b *keyState) int { return strings.Compare(a.name, b.name) })
	return out
}

// dropProc forgets the per-process state of a stopped process that S4,
// S6 and G1 keep (Forget); the tenures and the figures' receipts are
// dropped or kept by their own rules.
func (kt *keyTable) dropProc(proc int32, s4, s6, g1 bool) {
	for _, ks := range kt.all {
		if s := ks.slot(proc); s != nil {
			if s4 {
				s.s4 = nil
			}
			if s6 {
				s.s6 = nil
			}
			if g1 {
				s.g1 = nil
			}
		}
	}
}

// keyState is everything the checkers keep of one key. A nil pointer or
// a false has-flag is an absent entry of the map the checker used to
// keep.
type keyState struct {
	name string

	kt  *keyTenures // tenures (S1, L1, Measure)
	row *row        // the replayed row (S2, S3)
	sp  *shardPuts  // the records put (S4, L1, Measure)

	// S4
	shardEndStored, expired bool
	// S5
	parents    [2]*keyState // nil: none
	hasParents bool
	ended      bool
	flagged    bool
	// G1: a planned release waiting for the key's next owner
	move *plannedMove
	// Measure: when the shard was created (while open)
	created    time.Duration
	hasCreated bool
	// L1
	open    bool // created and not closed (as last seen)
	cover   *coverage
	late    lateRecord
	hasLate bool

	// procs holds the per-process state on the key, one slot per process
	// (a few: the owners the key had)
	procs []*procSlot
}

// procSlot is what the checkers keep of one process on one key. A slot
// whose fields are all nil is free and may be taken by another process.
type procSlot struct {
	proc int32
	ten  *tenure     // the open tenure
	s4   *readState  // S4's reader
	s6   *orderState // S6's reader
	g1   *g1State    // G1's checkpoints
	ms   *mproc      // the figures' receipts
}

func (s *procSlot) free() bool {
	return s.ten == nil && s.s4 == nil && s.s6 == nil && s.g1 == nil && s.ms == nil
}

// slot returns proc's slot on the key, or nil if it has none.
func (ks *keyState) slot(proc int32) *procSlot {
	for _, s := range ks.procs {
		if s.proc == proc {
			return s
		}
	}
	return nil
}

// slotNew returns proc's slot on the key, taken (a free one, or a new
// one) if it has none. The caller sets a field of a taken slot before it
// takes another.
func (ks *keyState) slotNew(proc int32) *procSlot {
	var free *procSlot
	for _, s := range ks.procs {
		if s.proc == proc {
			return s
		}
		if free == nil && s.free() {
			free = s
		}
	}
	if free != nil {
		free.proc = proc
		return free
	}
	s := &procSlot{proc: proc}
	ks.procs = append(ks.procs, s)
	return s
}
