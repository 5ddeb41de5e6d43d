package reference

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

type put struct {
	seq      string
	sub      int64 // the user record's index in its KPL aggregate
	t        time.Duration
	trimmed  time.Duration // -1: never
	received time.Duration // -1: never
	seqNo    uint64
	notOwed  bool // trimmed as owed to no processor (trace.NotOwedPrefix)
}

type shardPuts struct {
	puts []put
}

// index returns the first put at or after (s, sub).
func (p *shardPuts) index(s string, sub int64) int {
	return sort.Search(len(p.puts), func(i int) bool { return cmpSub(p.puts[i].seq, p.puts[i].sub, s, sub) >= 0 })
}

// after returns the first put after (s, sub).
func (p *shardPuts) after(s string, sub int64) int {
	return sort.Search(len(p.puts), func(i int) bool { return cmpSub(p.puts[i].seq, p.puts[i].sub, s, sub) > 0 })
}

func (x *put) name() string { return subName(x.seq, x.sub) }

func collectPuts(recs []trace.Record) map[string]*shardPuts {
	m := map[string]*shardPuts{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindPut {
			continue
		}
		p := m[r.Key]
		if p == nil {
			p = &shardPuts{}
			m[r.Key] = p
		}
		// a KPL aggregate (Count > 1) is Count user records
		for sub := 0; sub < max(r.Count, 1); sub++ {
			p.puts = append(p.puts, put{seq: r.First, sub: int64(sub), t: r.T, trimmed: -1, received: -1, seqNo: r.Seq})
		}
	}
	for _, p := range m {
		less := func(i, j int) bool {
			return cmpSub(p.puts[i].seq, p.puts[i].sub, p.puts[j].seq, p.puts[j].sub) < 0
		}
		if !sort.SliceIsSorted(p.puts, less) {
			sort.SliceStable(p.puts, less)
		}
	}
	return m
}

type readState struct {
	next      int // index of the next record the processor should get; -1 unknown
	failedAt  int // index of the first record of a failed batch; -1 none
	lastLast  string
	lastSub   int64
	failedF   string
	failedSub int64
	// the last batch received, to match a failed answer to it (an answer to
	// a batch of an earlier tenure does not count)
	batchF, batchL string
	batchLSub      int64
	batch          uint64
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

// CheckS4 reports records that were never delivered although retention
// kept them, batches that skip records, a processor that resumes past a
// record that nobody checkpointed, and a final table whose checkpoints do
// not cover what was delivered. It returns the number of records lost to
// retention too (trimmed before any processor received them).
//
// The end-of-run checks apply to records put at or before o.DeliverBy()
// (End-Bound when Heal is set; none otherwise).
func CheckS4(h History, o Options) ([]Violation, int) {
	recs := h.Records
	puts := collectPuts(recs)
	var out []Violation
	add := func(v Violation) {
		if len(out) < maxOf(o) {
			v.Invariant = S4
			out = append(out, v)
		}
	}
	states := map[pk]*readState{}
	lost := 0
	shardEndStored := map[string]bool{}
	expired := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindApply:
			if r.Outcome == trace.OutcomeOK && r.Checkpoint.IsShardEnd() {
				shardEndStored[r.Key] = true
			}
		case trace.KindShardExpired:
			expired[r.Key] = true
		case trace.KindTrim:
			if strings.HasPrefix(r.Reason, trace.SkippedPrefix) {
				expired[r.Key] = true // never read, as a shard that left the stream
			}
			p := puts[r.Key]
			if p == nil {
				continue
			}
			// retention trims whole Kinesis records, aggregates included
			lo, hi := p.index(r.First, 0), p.after(r.Last, math.MaxInt64)
			for j := lo; j < hi; j++ {
				if p.puts[j].trimmed < 0 {
					p.puts[j].trimmed = r.T
					if p.puts[j].received < 0 && !strings.HasPrefix(r.Reason, trace.NotOwedPrefix) {
						lost++ // records no reader owes are not lost
					}
				}
			}
		case trace.KindInitialized:
			st := &readState{next: -1, failedAt: -1}
			states[pk{r.Proc, r.Key}] = st
			p := puts[r.Key]
			if p == nil {
				continue
			}
			switch {
			case r.Checkpoint.Sequence == engine.TrimHorizon:
				st.next = 0
			case r.Checkpoint.IsShardEnd() || r.Checkpoint.IsSentinel() || r.Checkpoint.Sequence == "":
				st.next = -1
			default:
				st.next = p.after(r.Checkpoint.Sequence, r.Checkpoint.SubSequence)
			}
		case trace.KindDone:
			if r.Reason != "failed" || r.First == "" {
				continue
			}
			st := states[pk{r.Proc, r.Key}]
			p := puts[r.Key]
			if st == nil || p == nil || !st.isLastBatch(r) {
				continue
			}
			st.next = p.index(r.First, int64(r.FirstSub))
		case trace.BatchSkipped:
			// The failure policy passed the failed batch over: it was
			// received, and reading goes on after it.
			st := states[pk{r.Proc, r.Key}]
			p := puts[r.Key]
			if st == nil || p == nil || !st.isLastBatch(r) {
				continue
			}
			// (the engine's record names the last Kinesis record: the
			// batch's last user record is the one received)
			if hi := p.after(r.Last, st.batchLSub); hi > st.next {
				st.next = hi
			}
		case trace.KindReceived:
			p := puts[r.Key]
			if p == nil || r.Count == 0 {
				continue
			}
			lo, hi := p.index(r.First, int64(r.FirstSub)), p.after(r.Last, int64(r.LastSub))
			span := hi - lo
			for j := lo; j < hi; j++ {
				if p.puts[j].trimmed >= 0 && p.puts[j].trimmed <= r.T {
					span-- // not owed (a dropped corrupt aggregate): read past, not delivered
				}
			}
			if span != r.Count {
				add(Violation{Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
					Detail: "a batch of " + itoa(r.Count) + " records spans " + itoa(span) + " records put between " + r.First + " and " + r.Last})
			}
			for j := lo; j < hi; j++ {
				if p.puts[j].received < 0 {
					p.puts[j].received = r.T
				}
			}
			st := states[pk{r.Proc, r.Key}]
			if st == nil {
				continue
			}
			st.batchF, st.batchL, st.batch, st.batchLSub = r.First, r.Last, r.Call, int64(r.LastSub)
			if st.next >= 0 {
				exp := st.next
				for exp < len(p.puts) && p.puts[exp].trimmed >= 0 && p.puts[exp].trimmed <= r.T {
					exp++
				}
				if lo > exp && exp < len(p.puts) {
					add(Violation{Key: r.Key, Workers: []string{who(r)}, From: p.puts[exp].t, To: r.T, Seqs: []uint64{p.puts[exp].seqNo, r.Seq},
						Detail: "the processor got " + subName(r.First, int64(r.FirstSub)) + " but never got " + p.puts[exp].name() + " before it (" + itoa(lo-exp) + " records skipped)"})
				}
			}
			if hi > st.next {
				st.next = hi
			}
		}
	}
	deliverBy := o.DeliverBy()
	if deliverBy <= 0 {
		return out, lost
	}
	final := map[string]engine.Lease{}
	for _, l := range h.Final {
		final[l.Key] = l
	}
	keys := make([]string, 0, len(puts))
	for k := range puts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		p := puts[key]
		missing, first := 0, -1
		lastReq := -1
		for j := range p.puts {
			x := &p.puts[j]
			if x.t > deliverBy {
				break
			}
			if x.trimmed >= 0 {
				// lost to retention, counted, if never received; and a
				// record out of retention (or of a deleted stream) need
				// not be covered by a checkpoint any more
				continue
			}
			lastReq = j
			if x.received < 0 {
				missing++
				if first < 0 {
					first = j
				}
			}
		}
		if missing > 0 {
			add(Violation{Key: key, From: p.puts[first].t, To: o.End, Seqs: []uint64{p.puts[first].seqNo},
				Detail: itoa(missing) + " records within retention never delivered, the first " + p.puts[first].name()})
			continue
		}
		if !h.FinalKnown || lastReq < 0 {
			continue
		}
		l, ok := final[key]
		switch {
		case !ok:
			if !shardEndStored[key] && !expired[key] {
				add(Violation{Key: key, From: p.puts[lastReq].t, To: o.End, Seqs: []uint64{p.puts[lastReq].seqNo},
					Detail: "no row left for the shard although it never reached SHARD_END; records up to " + p.puts[lastReq].name() + " are not covered by a checkpoint"})
			}
		case l.Checkpoint.IsShardEnd():
		case l.Checkpoint.IsStart() || cmpSub(l.Checkpoint.Sequence, l.Checkpoint.SubSequence, p.puts[lastReq].seq, p.puts[lastReq].sub) < 0:
			add(Violation{Key: key, From: p.puts[lastReq].t, To: o.End, Seqs: []uint64{p.puts[lastReq].seqNo},
				Detail: "final checkpoint " + l.Checkpoint.String() + " does not cover the delivered record " + p.puts[lastReq].name()})
		}
	}
	return out, lost
}

// CheckS5 reports a record of a child shard that reached a processor
// before every parent was checkpointed at SHARD_END (or had left the
// stream).
func CheckS5(recs []trace.Record, o Options) []Violation {
	parents := map[string][2]string{}
	ended := map[string]time.Duration{}
	var out []Violation
	flagged := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindShardCreated:
			if r.Parent != "" || r.Parent2 != "" {
				parents[r.Key] = [2]string{r.Parent, r.Parent2}
			}
		case trace.KindApply:
			if r.Outcome == trace.OutcomeOK && r.Checkpoint.IsShardEnd() {
				if _, ok := ended[r.Key]; !ok {
					ended[r.Key] = r.T
				}
			}
		case trace.KindShardExpired:
			if _, ok := ended[r.Key]; !ok {
				ended[r.Key] = r.T
			}
		case trace.KindTrim:
			if _, ok := ended[r.Key]; !ok && strings.HasPrefix(r.Reason, trace.SkippedPrefix) {
				ended[r.Key] = r.T // a parent never read: its children may start
			}
		case trace.KindReceived, trace.Delivered:
			if r.Count == 0 || flagged[r.Key] {
				continue
			}
			ps, ok := parents[r.Key]
			if !ok {
				continue
			}
			for _, p := range ps {
				if p == "" {
					continue
				}
				if _, done := ended[p]; !done {
					flagged[r.Key] = true
					if len(out) < maxOf(o) {
						out = append(out, Violation{Invariant: S5, Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
							Detail: "record " + r.First + " of child " + r.Key + " delivered before parent " + p + " was checkpointed at SHARD_END"})
					}
					break
				}
			}
		}
	}
	return out
}

// CheckS6 reports records that reach one processor out of sequence order:
// a batch not in order, or a batch that starts at or before the end of the
// previous one, unless the previous one failed (then it may start again at
// the failed batch's first record).
func CheckS6(recs []trace.Record, o Options) []Violation {
	states := map[pk]*readState{}
	var out []Violation
	add := func(r *trace.Record, d string) {
		if len(out) < maxOf(o) {
			out = append(out, Violation{Invariant: S6, Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq}, Detail: d})
		}
	}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindInitialized:
			states[pk{r.Proc, r.Key}] = &readState{}
		case trace.KindDone:
			if r.Reason == "failed" && r.First != "" {
				if st := states[pk{r.Proc, r.Key}]; st != nil && st.isLastBatch(r) {
					st.failedF, st.failedSub = r.First, int64(r.FirstSub)
				}
			}
		case trace.KindReceived:
			if r.Count == 0 {
				continue
			}
			if r.Reason == "unsorted" || cmpSub(r.First, int64(r.FirstSub), r.Last, int64(r.LastSub)) > 0 {
				add(r, "a batch "+subName(r.First, int64(r.FirstSub))+".."+subName(r.Last, int64(r.LastSub))+" is not in sequence order")
			}
			k := pk{r.Proc, r.Key}
			st := states[k]
			if st == nil {
				st = &readState{}
				states[k] = st
			}
			if st.lastLast != "" && cmpSub(r.First, int64(r.FirstSub), st.lastLast, st.lastSub) <= 0 {
				if st.failedF == "" || cmpSub(r.First, int64(r.FirstSub), st.failedF, st.failedSub) < 0 {
					add(r, "batch "+subName(r.First, int64(r.FirstSub))+".."+subName(r.Last, int64(r.LastSub))+" after "+subName(st.lastLast, st.lastSub)+" was already delivered")
				}
			}
			st.failedF, st.failedSub = "", 0
			st.lastLast, st.lastSub = r.Last, int64(r.LastSub)
			st.batchF, st.batchL, st.batch = r.First, r.Last, r.Call
		}
	}
	return out
}
