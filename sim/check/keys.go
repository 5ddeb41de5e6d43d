package check

import (
	"slices"
	"strings"
	"time"
)

// keyTable interns the lease keys of a history: an Online looks a
// record's key up once (the key of the record before, a shard id's
// number, or one map probe) and hands the checkers its keyState, which holds what each of them keeps of the key and of each
// process on it. Keys are never dropped (each checker kept its per-key
// state for the whole run already), so the table is proportional to the
// shards and other rows of the world.
type keyTable struct {
	m   map[string]*keyState
	all []*keyState // in the order the keys were first seen
	// byNum holds the keys that are shard ids in Kinesis's canonical form
	// ("shardId-" and 12 digits), by number, without hashing them: each
	// number names one such key
	byNum []*keyState
	last  *keyState // the key looked up last: records of one key come in runs
}

// shardPrefix begins a canonical shard id.
const shardPrefix = "shardId-"

// shardNum returns the number of k if it is a canonical shard id small
// enough to index byNum (ok false otherwise).
func (kt *keyTable) shardNum(k string) (n int, ok bool) {
	if len(k) != len(shardPrefix)+12 || k[:len(shardPrefix)] != shardPrefix {
		return 0, false
	}
	for i := len(shardPrefix); i < len(k); i++ {
		d := k[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int(d)
	}
	// keep byNum proportional to the keys seen
	return n, n < 4*len(kt.all)+1024
}

func newKeyTable() *keyTable { return &keyTable{m: map[string]*keyState{}} }

// get returns the state of key k, created if new.
func (kt *keyTable) get(k string) *keyState {
	if ks := kt.last; ks != nil && ks.name == k {
		return ks
	}
	n, num := kt.shardNum(k)
	var ks *keyState
	if num && n < len(kt.byNum) {
		ks = kt.byNum[n]
	}
	if ks == nil {
		// a key is in byNum or m, never both: a shard id first seen while
		// its number was too large for byNum stays in m
		ks = kt.m[k]
	}
	if ks == nil {
		ks = &keyState{name: k}
		ks.procs = ks.ptrs[:0]
		if num {
			if n >= len(kt.byNum) {
				kt.byNum = append(kt.byNum, make([]*keyState, n+1-len(kt.byNum))...)
			}
			kt.byNum[n] = ks
		} else {
			kt.m[k] = ks
		}
		kt.all = append(kt.all, ks)
	}
	kt.last = ks
	return ks
}

// lookup returns the state of key k, or nil if it was never seen.
func (kt *keyTable) lookup(k string) *keyState {
	if n, num := kt.shardNum(k); num && n < len(kt.byNum) && kt.byNum[n] != nil {
		return kt.byNum[n]
	}
	return kt.m[k]
}

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
//
// The fields most records read come first, and the first slots and the
// state of the tenures, the row and the records put are stored inside
// it: one allocation, read in a few cache lines.
type keyState struct {
	name string       // read by every lookup (keyTable.last)
	move *plannedMove // G1: a planned release waiting for the key's next owner
	kt   *keyTenures  // tenures (S1, L1, Measure)
	row  *row         // the replayed row (S2, S3)
	sp   *shardPuts   // the records put (S4, L1, Measure)
	tk   *tkey        // the timing checker's (T1, T2)
	bk   *bkey        // the balance checker's (B1)

	// procs holds the per-process state on the key, one slot per process
	// (a few: the owners the key had); the first ones are ptrs and inline
	procs  []*procSlot
	ptrs   [2]*procSlot
	inline [2]procSlot

	// S4
	shardEndStored, expired bool
	// S5, and T1 (a child's failover waits for its parents)
	parents    [2]*keyState // nil: none
	hasParents bool
	ended      bool
	endedAt    time.Duration // when ended was first set
	flagged    bool
	// Measure: when the shard was created (while open)
	created    time.Duration
	hasCreated bool
	// L1
	open    bool // created and not closed (as last seen)
	cover   *coverage
	late    lateRecord
	hasLate bool

	// where kt, row and sp point once set
	ktv  keyTenures
	rowv row
	spv  shardPuts
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
	var s *procSlot
	if n := len(ks.procs); n < len(ks.inline) {
		s = &ks.inline[n]
	} else {
		s = &procSlot{}
	}
	s.proc = proc
	ks.procs = append(ks.procs, s)
	return s
}
