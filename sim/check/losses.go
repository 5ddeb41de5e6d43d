package check

import (
	"strings"

	"github.com/shardlease/shardlease/sim/trace"
)

// L2 is the invariant that a lost lease was truly lost: a worker gives a
// lease up for a failed condition ("the row changed under" its write)
// only if that write did not apply. A write that applied and whose reply
// was lost, or that an SDK retry made fail its condition, is the worker's
// own version: taking it for another writer's is KCL's hole (an SDK retry
// read as a lost lease), which costs a failover for nothing.
const L2 = "L2"

// lostUnder starts the reason of a lease lost to a failed condition.
const lostUnder = "condition failed: the row changed under "

// l2Checker checks L2. Per process and key it keeps the holder writes in
// flight: their class, and whether an attempt of them applied.
type l2Checker struct {
	o    Options
	keys *keyTable
	// writes: per process, per key, its latest holder write; last: per
	// key, the process and call of the latest write that applied
	writes map[int32]map[string]*l2Write
	last   map[string]l2Apply
	out    []Violation
}

type l2Apply struct {
	proc int32
	call uint64
}

type l2Write struct {
	call   uint64
	reason string
	seq    uint64
}

func newL2(o Options, keys *keyTable) *l2Checker {
	return &l2Checker{o: o, keys: keys, writes: map[int32]map[string]*l2Write{}, last: map[string]l2Apply{}}
}

func (c *l2Checker) observe(r *trace.Record) {
	if r.Proc < 0 {
		return
	}
	switch r.Kind {
	case trace.KindSend:
		switch r.Reason {
		case trace.WriteRenew, trace.WriteCheckpoint, trace.WriteRelease, trace.WriteShardEnd:
		default:
			return
		}
		m := c.writes[r.Proc]
		if m == nil {
			m = map[string]*l2Write{}
			c.writes[r.Proc] = m
		}
		w := m[r.Key]
		if w == nil {
			w = &l2Write{}
			m[r.Key] = w
		}
		*w = l2Write{call: r.Call, reason: r.Reason, seq: r.Seq}
	case trace.KindApply:
		if r.Outcome != trace.OutcomeOK {
			return
		}
		c.last[r.Key] = l2Apply{r.Proc, r.Call}
	case trace.LeaseLost:
		kind, ok := strings.CutPrefix(r.Reason, lostUnder)
		w := c.writes[r.Proc][r.Key]
		if m := c.writes[r.Proc]; m != nil {
			delete(m, r.Key)
		}
		if !ok || w == nil || w.reason != kind || c.last[r.Key] != (l2Apply{r.Proc, w.call}) || len(c.out) >= c.o.max() {
			return // its write did not apply, or another write came after it
		}
		c.out = append(c.out, Violation{Invariant: L2, Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{w.seq, r.Seq},
			Detail: who(r) + " gave the lease up (" + r.Reason + "), but that " + kind + " write had applied and nothing was written after it: the row's version was its own"})
	}
}
