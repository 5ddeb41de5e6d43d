package check

import (
	"sort"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Figures are the measurements of one history.
//
// Every change of acting process on a key is a handoff, classified by how
// the old owner's tenure ended: unplanned (a failover: its lease was lost
// or expired in its own view, or its process crashed, was killed, paused
// or cut off past its lease) or planned (a move: it released the lease
// for a graceful shutdown or a cooperative handoff). A tenure that ended
// at its shard's end has no successor.
type Figures struct {
	// Failovers are the times a shard had no acting owner after an
	// unplanned end of its owner's tenure, or after a handoff to an owner
	// that never acted on the lease: from the old owner's last act or its
	// last renewal or release, whichever came last (Tenure.Idle), to the
	// new owner's first act (0 and overlaps left out).
	Failovers []time.Duration
	// HandoffGaps are the same times after planned moves (Tenure.MovedTo):
	// from the old owner's last act or the release it sent, whichever
	// came later.
	HandoffGaps []time.Duration
	// Handoffs counts changes of acting process on a key; Redelivered the
	// records that the new process received although the old one had
	// received them already. PlannedMoves and PlannedRedelivered count
	// the planned moves among them and their re-deliveries.
	// CheckpointedMoves counts the planned releases (G1's: with or without
	// a next owner, so it may exceed PlannedMoves) whose old owner's
	// processor had checkpointed every record delivered to it before the
	// release was sent: G1 requires that none of them re-delivers a record.
	Handoffs, Redelivered            int
	PlannedMoves, PlannedRedelivered int
	CheckpointedMoves                int
	// StoreCalls and StreamCalls count the calls answered.
	StoreCalls, StreamCalls int
	// RowsRead counts the lease-table rows read: every row a ListLeases
	// (scan) returned, and one per GetLease answered. DynamoDB bills
	// reads by rows (and their size), a scan of the whole table as one
	// call but every row of it.
	RowsRead int
	// ShardHours is the time shards were open, summed, in hours.
	ShardHours float64
	// Bounded counts the failovers, planned moves and takeovers of the
	// assigner row that the latency invariants T1, T2 and T3 held to a
	// bound (those whose path the trace shows undisturbed; none without
	// Options.Timing).
	Bounded [3]int
}

// Percentile returns the p-th percentile (0..100) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p / 100 * float64(len(s)-1))
	return s[i]
}

// measurer computes the Figures. Calls and shard-hours are counted as the
// records come. Handoffs, failovers and re-deliveries pair each tenure
// with the one before it on its key: without Options.Forget they are
// computed at the end over every tenure (in key, then start order);
// with it, as the tenures end and the new owners receive their first
// batches.
type measurer struct {
	o       *Options
	ten     *tenures
	puts    *putLogs
	keys    *keyTable // each shard's creation (keyState.created) and each (process, key)'s receipts (procSlot.ms)
	f       Figures
	shardNs time.Duration
	// with Forget: the handoffs, waiting for the end of the run for the
	// old owner's highest record
	handoffs []*handoff
}

// mproc is what the figures need of one process's receipts on one key.
type mproc struct {
	high    Seq // the highest record received
	highOrd int // with Forget: the ordinal after high
	// with Forget: the handoffs to this process whose first batch has not
	// come yet; without: every receipt
	awaiting []*handoff
	receipts []receipt
}

// proc returns what proc received on ks, created if new.
func (m *measurer) proc(ks *keyState, proc int32) *mproc {
	sl := ks.slotNew(proc)
	if sl.ms == nil {
		sl.ms = &mproc{}
	}
	return sl.ms
}

// procOf returns what proc received on the key named key, or nil.
func (m *measurer) procOf(key string, proc int32) *mproc {
	if ks := m.keys.lookup(key); ks != nil {
		if sl := ks.slot(proc); sl != nil {
			return sl.ms
		}
	}
	return nil
}

type receipt struct {
	seq         uint64
	first, last Seq // with their sub-sequence numbers
}

// handoff is one change of acting process on a key (Forget).
type handoff struct {
	prev *tenure // the old owner's tenure (planned or not: known when it ends)
	to   *tenure // the new owner's
	from *mproc  // the old owner's receipts
	lo   int     // ordinal of the new owner's first record received; -1 none yet
	// hi is the ordinal after the highest record the old owner's process
	// had received when the new owner's first batch came (-1: none): what
	// it receives later, in a later tenure of its own, is not re-delivered
	// by this handoff
	hi int
}

func newMeasurer(o *Options, ts *tenures, pl *putLogs, keys *keyTable) *measurer {
	return &measurer{o: o, ten: ts, puts: pl, keys: keys}
}

func (m *measurer) reply(r *trace.Record) {
	if r.Op.IsStore() {
		m.f.StoreCalls++
		switch {
		case (r.Op == engine.OpListLeases || r.Op == engine.OpListPending) && r.Outcome == trace.OutcomeOK:
			m.f.RowsRead += r.Count
		case r.Op == engine.OpGetLease && (r.Outcome == trace.OutcomeOK || r.Outcome == trace.OutcomeNotFound):
			m.f.RowsRead++
		}
	} else {
		m.f.StreamCalls++
	}
}

func (m *measurer) shardClosed(r *trace.Record, ks *keyState) {
	if ks.hasCreated {
		m.shardNs += r.T - ks.created
		ks.created, ks.hasCreated = 0, false
	}
}

// receivedBatch is a batch of records received by r.Proc.
func (m *measurer) receivedBatch(r *trace.Record, ks *keyState, p *shardPuts, first, last Seq) {
	if r.Count == 0 {
		return
	}
	mp := m.proc(ks, r.Proc)
	if !m.o.Forget {
		mp.receipts = append(mp.receipts, receipt{r.Seq, first, last})
	}
	if last.Compare(mp.high) > 0 {
		mp.high = last
		if m.o.Forget && p != nil {
			mp.highOrd = p.after(last)
		}
	}
	if !m.o.Forget {
		return
	}
	if len(mp.awaiting) > 0 {
		lo := -1
		if p != nil {
			lo = p.index(first)
		}
		for _, h := range mp.awaiting {
			h.lo, h.hi = lo, -1
			if !h.from.high.IsZero() {
				h.hi = h.from.highOrd
			}
		}
		clear(mp.awaiting)
		mp.awaiting = mp.awaiting[:0]
	}
}

// started is tenure t starting after prev on its key.
func (m *measurer) started(prev, t *tenure) {
	if !m.o.Forget || prev == nil || prev.Proc == t.Proc {
		return
	}
	m.f.Handoffs++
	if prev.Open {
		prev.next = t // its failover is known when it ends
	} else {
		m.failover(prev, t)
	}
	h := &handoff{prev: prev, to: t, from: m.proc(prev.kt.ks, prev.Proc), lo: -1, hi: -1}
	mp := m.proc(t.kt.ks, t.Proc)
	mp.awaiting = append(mp.awaiting, h)
	m.handoffs = append(m.handoffs, h)
}

// closedTenure is tenure t ending (Forget).
func (m *measurer) closedTenure(t *tenure) {
	if t.next != nil {
		m.failover(t, t.next)
		t.next = nil
	}
}

func (m *measurer) failover(a, b *tenure) { m.f.gap(&a.Tenure, &b.Tenure) }

// gap records the handoff from a to b (see HandoffGap).
func (f *Figures) gap(a, b *Tenure) {
	d, planned, ok := HandoffGap(a, b)
	if planned {
		f.PlannedMoves++
	}
	switch {
	case !ok:
	case planned:
		f.HandoffGaps = append(f.HandoffGaps, d)
	default:
		f.Failovers = append(f.Failovers, d)
	}
}

// HandoffGap returns the time b's key had no acting owner between a and
// b, b following a on its key in another process, and whether that was a
// planned move (a.MovedTo(b)); ok is false if there was no gap (b acted
// before a's end) or a ended at its shard's end. A planned move's gap runs
// from a's last act or the release it sent, whichever is later; a
// failover's from a's Idle.
func HandoffGap(a, b *Tenure) (gap time.Duration, planned, ok bool) {
	switch {
	case a.MovedTo(b):
		from := max(a.End, a.Released)
		return b.Start - from, true, b.Start > from
	case !a.Graceful || a.Planned:
		return b.Start - a.Idle(), false, b.Start > a.Idle()
	}
	return 0, false, false
}

func (m *measurer) finish() Figures {
	f := m.f
	shardNs := m.shardNs
	for _, ks := range m.keys.all {
		if ks.hasCreated {
			shardNs += m.o.End - ks.created
		}
	}
	f.ShardHours = shardNs.Hours()
	if m.o.Forget {
		// tenures still open at the end: their failovers
		m.ten.eachOpen(func(t *tenure) {
			if t.next != nil {
				m.failover(t, t.next)
			}
		})
		f.Failovers, f.HandoffGaps, f.PlannedMoves = m.f.Failovers, m.f.HandoffGaps, m.f.PlannedMoves
		for _, h := range m.handoffs {
			if hi := h.hi; h.lo >= 0 && hi > h.lo {
				f.Redelivered += hi - h.lo
				if h.prev.MovedTo(&h.to.Tenure) {
					f.PlannedRedelivered += hi - h.lo
				}
			}
		}
		return f
	}
	ts := m.ten.sorted()
	for i := 1; i < len(ts); i++ {
		a, b := ts[i-1], ts[i]
		if a.Key != b.Key || a.Proc == b.Proc {
			continue
		}
		f.Handoffs++
		f.gap(&a, &b)
		// re-deliveries: records b received at or below the highest record
		// a's process had received before b's first receipt
		var p *shardPuts
		if ks := m.keys.lookup(a.Key); ks != nil {
			p = ks.sp
		}
		if p == nil || p.end() == 0 {
			continue
		}
		var rs, ras []receipt
		if mp := m.procOf(b.Key, b.Proc); mp != nil {
			rs = mp.receipts
		}
		if mp := m.procOf(a.Key, a.Proc); mp != nil {
			ras = mp.receipts
		}
		j := sort.Search(len(rs), func(j int) bool { return rs[j].seq >= b.FirstSeq })
		if j == len(rs) {
			continue
		}
		var ha Seq
		for _, x := range ras {
			if x.seq >= rs[j].seq {
				break
			}
			if x.last.Compare(ha) > 0 {
				ha = x.last
			}
		}
		if ha.IsZero() {
			continue
		}
		lo := p.index(rs[j].first)
		if lo >= 0 {
			hi := p.after(ha)
			if hi > lo {
				f.Redelivered += hi - lo
				if a.MovedTo(&b) {
					f.PlannedRedelivered += hi - lo
				}
			}
		}
	}
	return f
}
