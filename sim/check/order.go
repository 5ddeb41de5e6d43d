package check

import (
	"github.com/shardlease/shardlease/sim/trace"
)

// s5Checker reports a record of a child shard that reached a processor
// before every parent was checkpointed at SHARD_END or had left the stream
// (see CheckS5).
type s5Checker struct {
	o       Options
	parents map[string][2]string
	ended   map[string]bool
	flagged map[string]bool
	out     []Violation
}

func (c *s5Checker) delivered(r *trace.Record) {
	if r.Count == 0 || c.flagged[r.Key] {
		return
	}
	ps, ok := c.parents[r.Key]
	if !ok {
		return
	}
	for _, p := range ps {
		if p == "" || c.ended[p] {
			continue
		}
		c.flagged[r.Key] = true
		if len(c.out) < c.o.max() {
			c.out = append(c.out, Violation{Invariant: S5, Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
				Detail: "record " + r.First + " of child " + r.Key + " delivered before parent " + p + " was checkpointed at SHARD_END"})
		}
		return
	}
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
// order (see CheckS6).
type s6Checker struct {
	o      Options
	states map[pk]*orderState
	out    []Violation
}

func (c *s6Checker) add(r *trace.Record, d string) {
	if len(c.out) < c.o.max() {
		c.out = append(c.out, Violation{Invariant: S6, Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq}, Detail: d})
	}
}

func (c *s6Checker) dropProc(proc int32) {
	for k := range c.states {
		if k.proc == proc {
			delete(c.states, k)
		}
	}
}

func (c *s6Checker) done(r *trace.Record) {
	if r.Reason == "failed" && r.First != "" {
		if st := c.states[pk{r.Proc, r.Key}]; st != nil && answers(r, st.batchF, st.batchL, st.batch) {
			st.failedF = FirstOf(r)
		}
	}
}

func (c *s6Checker) received(r *trace.Record, first, last Seq) {
	if r.Count == 0 {
		return
	}
	if r.Reason == "unsorted" || first.Compare(last) > 0 {
		c.add(r, "a batch "+seqName(r.First, int64(r.FirstSub))+".."+seqName(r.Last, int64(r.LastSub))+" is not in sequence order")
	}
	k := pk{r.Proc, r.Key}
	st := c.states[k]
	if st == nil {
		st = &orderState{}
		c.states[k] = st
	}
	if st.lastLast != "" && first.Compare(st.lastLastSeq) <= 0 {
		if st.failedF.IsZero() || first.Compare(st.failedF) < 0 {
			c.add(r, "batch "+seqName(r.First, int64(r.FirstSub))+".."+seqName(r.Last, int64(r.LastSub))+" after "+st.lastLast+" was already delivered")
		}
	}
	st.failedF = Seq{}
	st.lastLast, st.lastLastSeq = seqName(r.Last, int64(r.LastSub)), last
	st.batchF, st.batchL, st.batch = r.First, r.Last, r.Call
}
