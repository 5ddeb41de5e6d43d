package reference

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// CheckL1 checks liveness after healing: at the end every open shard has a
// live process acting on it, records put between Heal+Bound and End-Bound
// reach a processor within Bound, and (with o.Balance) live workers hold
// their fair share of unfinished leases within ±BalanceSlack.
func CheckL1(h History, o Options) []Violation {
	if o.Heal <= 0 || o.Bound <= 0 || o.End-o.Heal < 2*o.Bound {
		return nil
	}
	recs := h.Records
	var out []Violation
	add := func(v Violation) {
		if len(out) < maxOf(o) {
			v.Invariant = L1
			out = append(out, v)
		}
	}
	open := map[string]bool{}
	var order []string
	live := map[int32]string{}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindShardCreated:
			if !open[r.Key] {
				order = append(order, r.Key)
			}
			open[r.Key] = true
		case trace.KindShardClosed:
			open[r.Key] = false
		case trace.KindProcStart:
			live[r.Proc] = r.Owner
		case trace.KindProcStop:
			delete(live, r.Proc)
		}
	}
	if len(live) == 0 {
		return nil
	}
	// ownership: from Heal+Bound on, an open shard may go without an
	// acting process for at most Bound at a time (a handover in progress
	// at the end is not a failure)
	cover := map[string][][2]time.Duration{}
	for _, t := range Tenures(recs) {
		end := t.EndT
		if t.Open {
			end = o.End
			if _, ok := live[t.Proc]; !ok {
				end = t.End
			}
		}
		cover[t.Key] = append(cover[t.Key], [2]time.Duration{t.Start, end})
	}
	for _, key := range order {
		if !open[key] {
			continue
		}
		iv := cover[key]
		sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
		from := o.Heal + o.Bound
		reach := from // covered up to here
		worst, worstAt := time.Duration(0), from
		for _, x := range iv {
			if x[1] <= reach {
				continue
			}
			if x[0] > reach {
				if g := x[0] - reach; g > worst {
					worst, worstAt = g, reach
				}
			}
			if x[1] > reach {
				reach = x[1]
			}
		}
		if g := o.End - reach; g > worst {
			worst, worstAt = g, reach
		}
		if worst > o.Bound {
			add(Violation{Key: key, From: worstAt, To: worstAt + worst,
				Detail: "open shard had no process acting on it for " + worst.String() + " after healing (bound " + o.Bound.String() + ")"})
		}
	}
	// progress
	puts := collectPuts(recs)
	for i := range recs {
		r := &recs[i]
		if r.Kind == trace.KindTrim && strings.HasPrefix(r.Reason, trace.NotOwedPrefix) {
			if p := puts[r.Key]; p != nil {
				lo, hi := p.index(r.First, 0), p.after(r.Last, math.MaxInt64)
				for j := lo; j < hi; j++ {
					p.puts[j].notOwed = true
				}
			}
			continue
		}
		if r.Kind != trace.KindReceived {
			continue
		}
		p := puts[r.Key]
		if p == nil {
			continue
		}
		lo, hi := p.index(r.First, int64(r.FirstSub)), p.after(r.Last, int64(r.LastSub))
		for j := lo; j < hi; j++ {
			if p.puts[j].received < 0 {
				p.puts[j].received = r.T
			}
		}
	}
	keys := make([]string, 0, len(puts))
	for k := range puts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	from, to := o.Heal+o.Bound, o.End-o.Bound
	for _, key := range keys {
		for _, x := range puts[key].puts {
			if x.t < from || x.t > to || x.notOwed {
				continue
			}
			if x.received < 0 || x.received-x.t > o.Bound {
				d := "record " + x.name() + " put at " + x.t.String() + " after healing "
				if x.received < 0 {
					d += "was never delivered"
				} else {
					d += "took " + (x.received - x.t).String() + " to reach a processor"
				}
				add(Violation{Key: key, From: x.t, To: x.t + o.Bound, Seqs: []uint64{x.seqNo}, Detail: d + " (bound " + o.Bound.String() + ")"})
				break
			}
		}
	}
	if o.Balance && h.FinalKnown {
		counts := map[string]int{}
		for _, owner := range live {
			counts[owner] = 0
		}
		n := 0
		for _, l := range h.Final {
			if l.Checkpoint.IsShardEnd() || l.Owner == "" {
				continue
			}
			if _, ok := counts[l.Owner]; ok {
				counts[l.Owner]++
				n++
			}
		}
		w := len(counts)
		lo, hi := n/w-o.BalanceSlack, (n+w-1)/w+o.BalanceSlack
		owners := make([]string, 0, w)
		for k := range counts {
			owners = append(owners, k)
		}
		sort.Strings(owners)
		for _, ow := range owners {
			if c := counts[ow]; c < lo || c > hi {
				add(Violation{Workers: []string{ow}, From: o.Heal + o.Bound, To: o.End,
					Detail: "unbalanced at the end: " + ow + " holds " + itoa(c) + " of " + itoa(n) + " leases across " + itoa(w) + " live workers (allowed " + itoa(lo) + ".." + itoa(hi) + ")"})
			}
		}
	}
	return out
}

// Measure computes the figures of a history that ended at end.
func Measure(recs []trace.Record, end time.Duration) Figures {
	var f Figures
	created := map[string]time.Duration{}
	var shardNs time.Duration
	// records received per (proc,key): the highest sequence
	type receipt struct {
		seq               uint64
		first, last       string
		firstSub, lastSub int64
	}
	receipts := map[pk][]receipt{}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindReply:
			if r.Op.IsStore() {
				f.StoreCalls++
				switch {
				case (r.Op == engine.OpListLeases || r.Op == engine.OpListPending) && r.Outcome == trace.OutcomeOK:
					f.RowsRead += r.Count
				case r.Op == engine.OpGetLease && (r.Outcome == trace.OutcomeOK || r.Outcome == trace.OutcomeNotFound):
					f.RowsRead++
				}
			} else {
				f.StreamCalls++
			}
		case trace.KindShardCreated:
			created[r.Key] = r.T
		case trace.KindShardClosed:
			if t, ok := created[r.Key]; ok {
				shardNs += r.T - t
				delete(created, r.Key)
			}
		case trace.KindReceived:
			if r.Count > 0 {
				k := pk{r.Proc, r.Key}
				receipts[k] = append(receipts[k], receipt{r.Seq, r.First, r.Last, int64(r.FirstSub), int64(r.LastSub)})
			}
		}
	}
	for _, t := range created {
		shardNs += end - t
	}
	f.ShardHours = shardNs.Hours()
	puts := collectPuts(recs)
	ts := Tenures(recs)
	for i := 1; i < len(ts); i++ {
		a, b := ts[i-1], ts[i]
		if a.Key != b.Key || a.Proc == b.Proc {
			continue
		}
		f.Handoffs++
		// a failover: an end that was no release, or a handoff to an owner
		// that never acted on the lease
		missed := a.Graceful && a.HandedTo != "" && a.HandedTo != b.Owner
		if idle := max(a.End, a.Renewed, a.Released); (!a.Graceful || missed) && b.Start > idle {
			f.Failovers = append(f.Failovers, b.Start-idle)
		}
		// re-deliveries: records b received at or below a's high water mark
		// (the highest record a's process received before b's first receipt)
		p := puts[a.Key]
		rs := receipts[pk{b.Proc, b.Key}]
		j := sort.Search(len(rs), func(j int) bool { return rs[j].seq >= b.FirstSeq })
		if p == nil || j == len(rs) {
			continue
		}
		ha, haSub := "", int64(0)
		for _, x := range receipts[pk{a.Proc, a.Key}] {
			if x.seq < rs[j].seq && cmpSub(x.last, x.lastSub, ha, haSub) > 0 {
				ha, haSub = x.last, x.lastSub
			}
		}
		if ha == "" {
			continue
		}
		if lo := p.index(rs[j].first, rs[j].firstSub); lo >= 0 {
			hi := p.after(ha, haSub)
			if hi > lo {
				f.Redelivered += hi - lo
			}
		}
	}
	return f
}
