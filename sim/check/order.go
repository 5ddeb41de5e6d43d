package check

import (
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// s5Checker reports a record of a child shard that reached a processor
// before every parent was checkpointed at SHARD_END or had left the stream
// (see CheckS5). Its parents, ended and flagged marks are the keyState's.
type s5Checker struct {
	o   *Options
	out []Violation
}

// delivered is a delivery or receipt r on ks.
func (c *s5Checker) delivered(r *trace.Record, ks *keyState) {
	if r.Count == 0 || ks.flagged {
		return
	}
	if !ks.hasParents {
		return
	}
	for _, p := range ks.parents {
		if p == nil || p.ended {
			continue
		}
		ks.flagged = true
		if len(c.out) < c.o.max() {
			c.out = append(c.out, Violation{Invariant: S5, Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
				Detail: "record " + r.First + " of child " + r.Key + " delivered before parent " + p.name + " was checkpointed at SHARD_END"})
		}
		return
	}
}

// end marks the shard of ks finished at t (checkpointed at SHARD_END,
// gone from the stream, or never to be read): its children may start.
func (ks *keyState) end(t time.Duration) {
	if !ks.ended {
		ks.ended, ks.endedAt = true, t
	}
}

// parentsEnd returns when the last parent of ks finished (0 if it has
// none), and false if one has not finished (or, when it is a shard the
// trace never showed, cannot be told to have).
func (ks *keyState) parentsEnd() (time.Duration, bool) {
	var at time.Duration
	if !ks.hasParents {
		return 0, true
	}
	for _, p := range ks.parents {
		if p == nil {
			continue
		}
		if !p.ended {
			return 0, false
		}
		at = max(at, p.endedAt)
	}
	return at, true
}

// orderState is S6's view of one process reading one shard.
type orderState struct {
	lastLast    string // the last record of the last batch
	lastLastSeq Seq
	failedF     Seq // the first record of a failed last batch (zero: none)
	// the last batch received, to match a failed answer to it
	batchF, batchL string
	batch          uint64
}

// s6Checker reports records that reach one processor out of sequence
// order (see CheckS6). Its readers are procSlot.s6.
type s6Checker struct {
	o   *Options
	out []Violation
}

func (c *s6Checker) add(r *trace.Record, d string) {
	if len(c.out) < c.o.max() {
		c.out = append(c.out, Violation{Invariant: S6, Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq}, Detail: d})
	}
}

func (c *s6Checker) done(r *trace.Record, ks *keyState) {
	if r.Reason == "failed" && r.First != "" {
		if sl := ks.slot(r.Proc); sl != nil && sl.s6 != nil && answers(r, sl.s6.batchF, sl.s6.batchL, sl.s6.batch) {
			sl.s6.failedF = FirstOf(r)
		}
	}
}

func (c *s6Checker) received(r *trace.Record, ks *keyState, first, last Seq) {
	if r.Count == 0 {
		return
	}
	if r.Reason == "unsorted" || first.Compare(last) > 0 {
		c.add(r, "a batch "+seqName(r.First, int64(r.FirstSub))+".."+seqName(r.Last, int64(r.LastSub))+" is not in sequence order")
	}
	sl := ks.slotNew(r.Proc)
	if sl.s6 == nil {
		sl.s6 = &orderState{}
	}
	st := sl.s6
	if st.lastLast != "" && first.Compare(st.lastLastSeq) <= 0 {
		if st.failedF.IsZero() || first.Compare(st.failedF) < 0 {
			c.add(r, "batch "+seqName(r.First, int64(r.FirstSub))+".."+seqName(r.Last, int64(r.LastSub))+" after "+st.lastLast+" was already delivered")
		}
	}
	st.failedF = Seq{}
	st.lastLast, st.lastLastSeq = seqName(r.Last, int64(r.LastSub)), last
	st.batchF, st.batchL, st.batch = r.First, r.Last, r.Call
}
