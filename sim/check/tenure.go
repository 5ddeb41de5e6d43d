package check

import (
	"sort"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Tenure is a stretch of time in which one process acted on one key: from
// its first act (acting, delivery, a batch received, a checkpoint write
// sent) to its last act before it lost, released or stopped acting on the
// lease, or the process ended.
type Tenure struct {
	Key        string
	Proc       int32
	Owner      string
	Start, End time.Duration // first and last act
	FirstSeq   uint64
	LastSeq    uint64
	// Open is true if the tenure had not been ended by a loss, release,
	// stop or process end when the history ended.
	Open bool
	// EndedBy is the record kind that closed it (0 if Open).
	EndedBy trace.Kind
	// Graceful is true if the lease was released on purpose; Planned if
	// that release was a planned move (a shutdown or a cooperative
	// handoff, not a shard's end: see Planned).
	Graceful bool
	Planned  bool
	// EndT is when it was closed (the closing record's time).
	EndT time.Duration
	// Renewed is when the last renewal or checkpoint of its lease by its
	// process applied while it was open (0 if none did): the owner of an
	// idle shard acts rarely but holds the shard as long as it renews.
	Renewed time.Duration
	// Released is when its process sent the release that ended it (0 if
	// none): a process stops acting before it sends its release.
	Released time.Duration
	// HandedTo is the owner a cooperative handoff released the lease to
	// ("" for any other end).
	HandedTo string
}

// Idle returns when the tenure stopped holding its shard, as far as the
// history shows: its last act, or its last renewal or release if later. A
// failover's gap is measured from it: from the last renewal, not from
// the moment the process crashed or paused after it, so the gap is never
// shorter than the time the shard truly had nobody able to act.
func (t *Tenure) Idle() time.Duration { return max(t.End, t.Renewed, t.Released) }

// MovedTo reports whether next, the key's next tenure, is the end of a
// planned move from t: t released the lease for a shutdown, or handed it
// over to next's owner. A handoff to an owner that never acted on the
// lease (it crashed or was cut off before it took it, and another owner
// came after the lease expired) is no planned move: its gap is a
// failover's.
func (t *Tenure) MovedTo(next *Tenure) bool {
	return t.Planned && (t.HandedTo == "" || t.HandedTo == next.Owner)
}

func (t *Tenure) who() string { return t.Owner + "#" + itoa(int(t.Proc)) }

// tenure is a Tenure as the tracker follows it.
type tenure struct {
	Tenure
	idx int         // creation index among the key's tenures (= start order)
	id  uint64      // creation index among all tenures
	kt  *keyTenures // its key's (keyState.kt, which is never dropped)
	// next is the tenure created after this one on its key, while this one
	// is open (Measure's failover waits for this one's end); tnext the
	// same for the timing checker (T1, T2)
	next, tnext *tenure
}

// keyTenures is what the tracker keeps of one key.
type keyTenures struct {
	ks   *keyState // its key
	n    int       // tenures created
	last *tenure   // the latest created
	kept []*tenure // open tenures, and closed ones a later act may still overlap (S1)
}

// tenures follows every process's tenures, act by act, and tells the
// checkers that use them (S1, L1, Measure) as each starts, acts and ends.
type tenures struct {
	forget bool // keep no list of every tenure
	pruned bool // records come in true-time order: drop tenures no act can overlap
	now    time.Duration
	ids    uint64
	keys   *keyTable             // each key's open tenures (procSlot.ten) and keyTenures
	byProc map[int32][]*keyState // keys of each process's open tenures, in creation order
	all    []*tenure             // every tenure, unless forgetting (Tenures, Measure)

	s1 *s1Checker
	l1 *l1Checker
	ms *measurer
	tc *timingChecker
}

func newTenures(forget bool, keys *keyTable) *tenures {
	return &tenures{forget: forget, pruned: forget, keys: keys, byProc: map[int32][]*keyState{}}
}

func (ts *tenures) key(ks *keyState) *keyTenures {
	kt := ks.kt
	if kt == nil {
		ks.ktv = keyTenures{ks: ks}
		kt = &ks.ktv
		ks.kt = kt
	}
	return kt
}

// openOf returns the open tenure of proc on ks (nil if none).
func openOf(ks *keyState, proc int32) *tenure {
	if s := ks.slot(proc); s != nil {
		return s.ten
	}
	return nil
}

// eachOpen calls f with every open tenure, key by key in the order the
// keys were first seen.
func (ts *tenures) eachOpen(f func(t *tenure)) {
	for _, ks := range ts.keys.all {
		for _, s := range ks.procs {
			if s.ten != nil {
				f(s.ten)
			}
		}
	}
}

// act is an act of r.Proc on r.Key (ks) at r.T.
func (ts *tenures) act(r *trace.Record, ks *keyState) {
	ts.now = r.T
	if t := openOf(ks, r.Proc); t != nil {
		t.End = r.T
		t.LastSeq = r.Seq
		if ts.s1 != nil {
			ts.s1.acted(t.kt, t)
		}
		return
	}
	kt := ts.key(ks)
	t := &tenure{Tenure: Tenure{Key: r.Key, Proc: r.Proc, Owner: r.Owner, Start: r.T, End: r.T, FirstSeq: r.Seq, LastSeq: r.Seq, Open: true},
		idx: kt.n, id: ts.ids, kt: kt}
	kt.n++
	ts.ids++
	prev := kt.last
	kt.last = t
	ks.slotNew(r.Proc).ten = t
	ts.byProc[r.Proc] = append(ts.byProc[r.Proc], ks)
	if !ts.forget {
		ts.all = append(ts.all, t)
	}
	if ts.l1 != nil {
		ts.l1.started(kt, t)
	}
	if ts.s1 != nil {
		ts.s1.started(kt, t)
	}
	kt.kept = append(kt.kept, t)
	if ts.ms != nil {
		ts.ms.started(prev, t)
	}
	if ts.tc != nil {
		ts.tc.started(prev, t)
	}
	ts.prune(kt)
}

// renewed is an applied renewal or checkpoint of r.Proc's lease on r.Key.
//
// A renewal of r.Proc's session row (session renewal) renews every lease
// it holds.
func (ts *tenures) renewed(r *trace.Record, ks *keyState) {
	if engine.IsSessionRow(r.Key) {
		for _, k := range ts.byProc[r.Proc] {
			if t := openOf(k, r.Proc); t != nil {
				t.Renewed = r.T
			}
		}
		return
	}
	if t := openOf(ks, r.Proc); t != nil {
		t.Renewed = r.T
	}
}

// releasing is r.Proc sending the release of its lease on r.Key.
func (ts *tenures) releasing(r *trace.Record, ks *keyState) {
	if t := openOf(ks, r.Proc); t != nil {
		t.Released = r.T
	}
}

// close ends the open tenure of r.Proc on ks (if any) with record r.
func (ts *tenures) close(ks *keyState, r *trace.Record) {
	ts.now = r.T
	s := ks.slot(r.Proc)
	if s == nil || s.ten == nil {
		return
	}
	t := s.ten
	s.ten = nil
	keys := ts.byProc[r.Proc]
	for i, key := range keys {
		if key == ks {
			ts.byProc[r.Proc] = append(keys[:i], keys[i+1:]...)
			break
		}
	}
	ts.ended(t, r)
}

func (ts *tenures) ended(t *tenure, r *trace.Record) {
	t.Open = false
	t.EndedBy = r.Kind
	t.EndT = r.T
	t.Graceful = r.Kind == trace.LeaseReleased
	t.Planned = t.Graceful && Planned(r.Reason)
	if t.Graceful {
		t.HandedTo = HandedTo(r.Reason)
	}
	if ts.l1 != nil {
		ts.l1.closed(t)
	}
	if ts.ms != nil {
		ts.ms.closedTenure(t)
	}
	if ts.tc != nil {
		ts.tc.closedTenure(t)
	}
	ts.prune(t.kt)
}

// procStop ends every open tenure of the process r stopped.
func (ts *tenures) procStop(r *trace.Record) {
	ts.now = r.T
	keys := ts.byProc[r.Proc]
	delete(ts.byProc, r.Proc)
	for _, ks := range keys {
		if s := ks.slot(r.Proc); s != nil && s.ten != nil {
			t := s.ten
			s.ten = nil
			ts.ended(t, r)
		}
	}
}

// prune drops from kt.kept the closed tenures no later act can overlap:
// those that ended before now and were created before every open tenure
// of another process (a later act of an earlier open tenure overlaps
// every tenure created after it).
func (ts *tenures) prune(kt *keyTenures) {
	if !ts.pruned || kt == nil {
		return
	}
	n := 0
	for _, t := range kt.kept {
		if t.Open || t.End >= ts.now || ts.openBefore(kt, t) {
			kt.kept[n] = t
			n++
		}
	}
	clear(kt.kept[n:])
	kt.kept = kt.kept[:n]
}

// openBefore reports whether an open tenure of another process was
// created on the key before t.
func (ts *tenures) openBefore(kt *keyTenures, t *tenure) bool {
	for _, e := range kt.kept {
		if e.idx >= t.idx {
			return false
		}
		if e.Open && e.Proc != t.Proc {
			return true
		}
	}
	return false
}

// sorted returns every tenure (unless forgetting), ordered by key then
// start.
func (ts *tenures) sorted() []Tenure {
	out := make([]Tenure, len(ts.all))
	for i, t := range ts.all {
		out[i] = t.Tenure
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Start < out[j].Start
	})
	return out
}

// s1Checker finds tenures of different processes on one key that overlap
// in true time: a tenure that starts while another's is running (up to its
// last act), or a tenure that acts again after a later one started. It
// reports the pairs the whole-history check reported: ordered by key, then
// by the later tenure's start, then the earlier one's, the first
// MaxPerCheck of them; a pair's details are filled in at the end, when
// both tenures are final.
type s1Checker struct {
	o     *Options
	pairs []s1Pair // sorted, at most o.max()
	seen  map[[2]uint64]bool
}

type s1Pair struct {
	x, y *tenure // x created before y
}

func (p s1Pair) less(q s1Pair) bool {
	if p.y.Key != q.y.Key {
		return p.y.Key < q.y.Key
	}
	if p.y.idx != q.y.idx {
		return p.y.idx < q.y.idx
	}
	return p.x.idx < q.x.idx
}

// started compares a new tenure y with the tenures kept on its key.
func (c *s1Checker) started(kt *keyTenures, y *tenure) {
	for _, x := range kt.kept {
		if x.Proc != y.Proc && x.End >= y.Start {
			c.add(s1Pair{x, y})
		}
	}
}

// acted compares tenure x, which just acted, with the tenures created
// after it: each overlaps x now.
func (c *s1Checker) acted(kt *keyTenures, x *tenure) {
	for _, y := range kt.kept {
		if y.idx > x.idx && y.Proc != x.Proc {
			c.add(s1Pair{x, y})
		}
	}
}

func (c *s1Checker) add(p s1Pair) {
	id := [2]uint64{p.x.id, p.y.id}
	if c.seen[id] {
		return
	}
	max := c.o.max()
	if len(c.pairs) >= max && !p.less(c.pairs[len(c.pairs)-1]) {
		return
	}
	if c.seen == nil {
		c.seen = map[[2]uint64]bool{}
	}
	c.seen[id] = true
	i := sort.Search(len(c.pairs), func(i int) bool { return p.less(c.pairs[i]) })
	c.pairs = append(c.pairs, s1Pair{})
	copy(c.pairs[i+1:], c.pairs[i:])
	c.pairs[i] = p
	if len(c.pairs) > max {
		last := c.pairs[len(c.pairs)-1]
		delete(c.seen, [2]uint64{last.x.id, last.y.id})
		c.pairs = c.pairs[:max]
	}
}

func (c *s1Checker) finish() []Violation {
	var out []Violation
	for _, p := range c.pairs {
		x, y := &p.x.Tenure, &p.y.Tenure
		to := max(x.End, y.End)
		out = append(out, Violation{Invariant: S1, Key: x.Key, Workers: []string{x.who(), y.who()},
			From: y.Start, To: to,
			Detail: "two processes acted on the lease at overlapping true times: " + x.who() + " acted " + x.Start.String() + ".." + x.End.String() + ", " + y.who() + " acted " + y.Start.String() + ".." + y.End.String(),
			Seqs:   []uint64{x.LastSeq, y.FirstSeq}})
	}
	return out
}
