package check

import (
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// put is one record a producer put, as the checkers follow it.
type put struct {
	seq      Seq
	raw      string // the sequence number as recorded
	t        time.Duration
	trimmed  time.Duration // -1: never
	received time.Duration // -1: never
	seqNo    uint64
	notOwed  bool // trimmed as owed to no processor (trace.NotOwedPrefix)
}

// shardPuts is the records put to one shard, in sequence order. Each has
// an ordinal (its position among every record the shard ever had); with
// Options.Forget the log drops its oldest records once each has been
// received and is covered by an applied checkpoint, or was trimmed, and
// the ordinals of what it keeps stay those of the whole history.
type shardPuts struct {
	ks    *keyState // its key
	puts  []put     // puts[head:] are kept; puts[head] has ordinal base
	head  int
	base  int
	cover Pos // the highest checkpoint ever applied to the shard's row
	// what the end-of-run check of S4 needs of the forgotten records
	fMax     Seq  // the highest forgotten sequence number
	lastReq  *put // the last forgotten record that had to be delivered
	lastReqV put
	pastBy   bool // a forgotten record was put after DeliverBy
}

// kept returns the records still kept, oldest first.
func (p *shardPuts) kept() []put { return p.puts[p.head:] }

// end returns the ordinal after the last record.
func (p *shardPuts) end() int { return p.base + len(p.puts) - p.head }

// at returns the record with ordinal i (kept).
func (p *shardPuts) at(i int) *put { return &p.puts[p.head+i-p.base] }

// index returns the ordinal of the first record with seq >= s (of the
// first kept one, if s is at or below what was forgotten).
func (p *shardPuts) index(s Seq) int {
	k := p.kept()
	return p.base + sort.Search(len(k), func(i int) bool { return k[i].seq.Compare(s) >= 0 })
}

// after returns the ordinal of the first record with seq > s (of the
// first kept one, if s is below what was forgotten).
func (p *shardPuts) after(s Seq) int {
	k := p.kept()
	return p.base + sort.Search(len(k), func(i int) bool { return k[i].seq.Compare(s) > 0 })
}

// putLogs is the records put to every shard, the part of S4, L1 and the
// figures that follows records rather than processes.
type putLogs struct {
	o    *Options
	keys *keyTable // each key's records (keyState.sp)
	lost int       // trimmed before anyone received them

	s4 *s4Checker
	l1 *l1Checker
}

func newPutLogs(o *Options, keys *keyTable) *putLogs {
	return &putLogs{o: o, keys: keys}
}

func (pl *putLogs) shard(ks *keyState) *shardPuts {
	p := ks.sp
	if p == nil {
		ks.spv = shardPuts{ks: ks}
		p = &ks.spv
		ks.sp = p
	}
	return p
}

// sorted returns the shards that have a record log, by key.
func (pl *putLogs) sorted() []*shardPuts {
	kss := pl.keys.sorted(func(ks *keyState) bool { return ks.sp != nil })
	out := make([]*shardPuts, len(kss))
	for i, ks := range kss {
		out[i] = ks.sp
	}
	return out
}

// put adds a record put: its user records, sub-sequence numbers
// 0..Count-1, if it is a KPL aggregate (Count > 1).
func (pl *putLogs) put(r *trace.Record, ks *keyState, seq Seq) {
	p := pl.shard(ks)
	for i := 0; i < max(r.Count, 1); i++ {
		seq.sub = int64(i)
		pl.put1(p, put{seq: seq, raw: r.First, t: r.T, trimmed: -1, received: -1, seqNo: r.Seq})
	}
}

// name is the record as messages name it.
func (x *put) name() string { return seqName(x.raw, x.seq.sub) }

func (pl *putLogs) put1(p *shardPuts, x put) {
	k := p.kept()
	if n := len(k); n == 0 || k[n-1].seq.Compare(x.seq) <= 0 {
		p.puts = append(p.puts, x)
		return
	}
	// out of order (not from the simulator): insert it in place, after
	// equal ones, as a stable sort would
	i := p.head + sort.Search(len(k), func(i int) bool { return k[i].seq.Compare(x.seq) > 0 })
	p.puts = append(p.puts, put{})
	copy(p.puts[i+1:], p.puts[i:])
	p.puts[i] = x
}

// received marks the records of a batch received; p is r.Key's (nil if
// it has none).
func (pl *putLogs) received(r *trace.Record, p *shardPuts, first, last Seq) {
	if r.Count == 0 {
		return
	}
	if p == nil || p.end() == 0 {
		return // no record was ever put to the shard
	}
	lo, hi := p.index(first), p.after(last)
	if pl.s4 != nil {
		pl.s4.received(r, p, first, lo, hi)
	}
	for j := lo; j < hi; j++ {
		x := p.at(j)
		if x.received < 0 {
			x.received = r.T
			if pl.l1 != nil {
				pl.l1.receivedPut(p, x)
			}
		}
	}
	if pl.s4 != nil {
		pl.s4.advance(r, p, hi)
	}
	pl.forget(p)
}

// trim marks the records First..Last of a shard trimmed by retention.
func (pl *putLogs) trim(r *trace.Record, ks *keyState, first, last Seq) {
	p := ks.sp
	if p == nil || p.end() == 0 {
		return
	}
	lo, hi := p.index(first), p.after(last)
	owed := !strings.HasPrefix(r.Reason, trace.NotOwedPrefix)
	for j := lo; j < hi; j++ {
		x := p.at(j)
		if x.trimmed < 0 {
			x.trimmed, x.notOwed = r.T, !owed
			if x.received < 0 && owed {
				pl.lost++
			}
		}
	}
	pl.forget(p)
}

// checkpointed notes an applied write's checkpoint.
func (pl *putLogs) checkpointed(ks *keyState, c Pos) {
	p := pl.shard(ks)
	if c.Compare(p.cover) > 0 {
		p.cover = c
		pl.forget(p)
	}
}

// forget drops (with Options.Forget) the oldest records of p while each
// has been received and is covered by an applied checkpoint, or was
// trimmed.
func (pl *putLogs) forget(p *shardPuts) {
	if !pl.o.Forget {
		return
	}
	deliverBy := pl.o.DeliverBy()
	n := len(p.puts)
	for p.head < n {
		x := &p.puts[p.head]
		if !(x.trimmed >= 0 || (x.received >= 0 && p.cover.Covers(x.seq))) {
			break
		}
		if pl.l1 != nil && x.received < 0 {
			pl.l1.lostPut(p, x)
		}
		// S4's end-of-run check stops at the first record put after
		// DeliverBy and needs the last one before it that was not lost
		switch {
		case p.pastBy:
		case x.t > deliverBy:
			p.pastBy = true
		case x.trimmed < 0: // a trimmed record need not be covered
			p.lastReqV = *x
			p.lastReq = &p.lastReqV
		}
		p.fMax = x.seq
		p.puts[p.head] = put{}
		p.head++
		p.base++
	}
	if p.head == n {
		p.puts, p.head = p.puts[:0], 0
	} else if p.head > 64 && p.head > n/2 {
		m := copy(p.puts, p.puts[p.head:])
		clear(p.puts[m:])
		p.puts, p.head = p.puts[:m], 0
	}
}

// readState is S4's view of one process reading one shard.
type readState struct {
	next int // ordinal of the next record the processor should get; -1 unknown
	// the last batch received, to match a failed answer to it (an answer to
	// a batch of an earlier tenure does not count)
	batchF, batchL string
	batch          uint64
	batchLSeq      Seq // its last user record
}

func (st *readState) isLastBatch(r *trace.Record) bool {
	return answers(r, st.batchF, st.batchL, st.batch)
}

// answers reports whether r (a processor's answer, or the engine's skip
// of a batch) is about the batch b received last: the same batch number
// when both records carry one (the simulator's do), else the same first
// and last records (a recorded history without batch numbers).
func answers(r *trace.Record, first, last string, batch uint64) bool {
	if r.Call != 0 && batch != 0 {
		return r.Call == batch
	}
	return r.First == first && r.Last == last
}

// s4Checker checks at-least-once delivery (see CheckS4).
// Its readers are procSlot.s4, its shardEndStored and expired flags are
// the keyState's.
type s4Checker struct {
	o    *Options
	puts *putLogs
	out  []Violation
}

func newS4(o *Options, pl *putLogs) *s4Checker {
	return &s4Checker{o: o, puts: pl}
}

// reader returns proc's reader of ks, or nil.
func reader(ks *keyState, proc int32) *readState {
	if sl := ks.slot(proc); sl != nil {
		return sl.s4
	}
	return nil
}

func (c *s4Checker) add(v Violation) {
	if len(c.out) < c.o.max() {
		v.Invariant = S4
		c.out = append(c.out, v)
	}
}

// initialized is a processor told to start a shard at a checkpoint.
func (c *s4Checker) initialized(r *trace.Record, ks *keyState, cp Pos) {
	st := &readState{next: -1}
	ks.slotNew(r.Proc).s4 = st
	p := c.puts.shard(ks)
	switch {
	case r.Checkpoint.Sequence == engine.TrimHorizon:
		st.next = 0
	case cp.rank != 1: // SHARD_END, another sentinel, none
		st.next = -1
	default:
		st.next = p.after(cp.seq)
	}
}

// done is a processor's answer to a batch: a failed batch is delivered
// again from its first record.
func (c *s4Checker) done(r *trace.Record, ks *keyState, first Seq) {
	if r.Reason != "failed" || r.First == "" {
		return
	}
	st := reader(ks, r.Proc)
	p := ks.sp
	if st == nil || p == nil || p.end() == 0 || !st.isLastBatch(r) {
		return
	}
	st.next = p.index(first)
}

// skipped is the failure policy passing a failed batch over: it was
// received, and reading goes on after its last user record (the engine's
// record names the batch's last Kinesis record only).
func (c *s4Checker) skipped(r *trace.Record, ks *keyState) {
	st := reader(ks, r.Proc)
	p := ks.sp
	if st == nil || p == nil || p.end() == 0 || !st.isLastBatch(r) {
		return
	}
	if hi := p.after(st.batchLSeq); hi > st.next {
		st.next = hi
	}
}

// received checks a batch of Count records First..Last (records lo..hi-1
// of the shard) before they are marked received.
func (c *s4Checker) received(r *trace.Record, p *shardPuts, first Seq, lo, hi int) {
	notOwed := 0
	for j := max(lo, p.base); j < hi; j++ {
		if x := p.at(j); x.notOwed && x.trimmed <= r.T {
			notOwed++ // not owed (a dropped corrupt aggregate): read past, not delivered
		}
	}
	span := hi - lo - notOwed
	if p.base > 0 && first.Compare(p.fMax) <= 0 {
		// the batch starts among records already received and covered
		// (forgotten): it holds its first record and every kept one up to
		// its last that is owed
		if hi-lo+1-notOwed > r.Count {
			c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
				Detail: "a batch of " + itoa(r.Count) + " records spans at least " + itoa(hi-lo+1) + " records put between " + r.First + " and " + r.Last})
		}
	} else if span != r.Count {
		c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
			Detail: "a batch of " + itoa(r.Count) + " records spans " + itoa(span) + " records put between " + r.First + " and " + r.Last})
	}
	st := reader(p.ks, r.Proc)
	if st == nil {
		return
	}
	st.batchF, st.batchL, st.batch, st.batchLSeq = r.First, r.Last, r.Call, LastOf(r)
	if st.next >= 0 {
		exp := max(st.next, p.base)
		for exp < p.end() && p.at(exp).trimmed >= 0 && p.at(exp).trimmed <= r.T {
			exp++
		}
		if lo > exp && exp < p.end() {
			x := p.at(exp)
			c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: x.t, To: r.T, Seqs: []uint64{x.seqNo, r.Seq},
				Detail: "the processor got " + seqName(r.First, int64(r.FirstSub)) + " but never got " + x.name() + " before it (" + itoa(lo-exp) + " records skipped)"})
		}
	}
}

// advance moves the reader past a batch that ended before ordinal hi.
func (c *s4Checker) advance(r *trace.Record, p *shardPuts, hi int) {
	if st := reader(p.ks, r.Proc); st != nil && hi > st.next {
		st.next = hi
	}
}

// finish runs the end-of-run checks: every record put by DeliverBy was
// delivered (or lost to retention) and is covered by the final table's
// checkpoint.
func (c *s4Checker) finish(final []engine.Lease, finalKnown bool) []Violation {
	deliverBy := c.o.DeliverBy()
	if deliverBy <= 0 {
		return c.out
	}
	fin := map[string]engine.Lease{}
	for _, l := range final {
		fin[l.Key] = l
	}
	for _, p := range c.puts.sorted() {
		key := p.ks.name
		if p.end() == 0 {
			continue // a shard with checkpoints but no records
		}
		missing := 0
		var first *put
		lastReq := p.lastReq
		if !p.pastBy {
			k := p.kept()
			for j := range k {
				x := &k[j]
				if x.t > deliverBy {
					break
				}
				if x.trimmed >= 0 {
					// lost to retention, counted, if never received; and a
					// record out of retention (or of a deleted stream) need
					// not be covered by a checkpoint any more
					continue
				}
				lastReq = x
				if x.received < 0 {
					missing++
					if first == nil {
						first = x
					}
				}
			}
		}
		if missing > 0 {
			c.add(Violation{Key: key, From: first.t, To: c.o.End, Seqs: []uint64{first.seqNo},
				Detail: itoa(missing) + " records within retention never delivered, the first " + first.name()})
			continue
		}
		if !finalKnown || lastReq == nil {
			continue
		}
		l, ok := fin[key]
		switch {
		case !ok:
			if !p.ks.shardEndStored && !p.ks.expired {
				c.add(Violation{Key: key, From: lastReq.t, To: c.o.End, Seqs: []uint64{lastReq.seqNo},
					Detail: "no row left for the shard although it never reached SHARD_END; records up to " + lastReq.name() + " are not covered by a checkpoint"})
			}
		case l.Checkpoint.Sequence == engine.ShardEnd:
		case !PosOf(l.Checkpoint).Covers(lastReq.seq):
			c.add(Violation{Key: key, From: lastReq.t, To: c.o.End, Seqs: []uint64{lastReq.seqNo},
				Detail: "final checkpoint " + l.Checkpoint.String() + " does not cover the delivered record " + lastReq.name()})
		}
	}
	return c.out
}
