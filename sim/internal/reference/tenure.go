package reference

import (
	"sort"
	"strings"

	"github.com/shardlease/shardlease/sim/trace"
)

// sessionPrefix starts the keys of the workers' session rows
// (engine.SessionPrefix, written out: this package reimplements the
// checkers from the trace alone).
const sessionPrefix = "__shardlease_session:"

func tenureWho(t Tenure) string { return t.Owner + "#" + itoa(int(t.Proc)) }

type pk struct {
	proc int32
	key  string
}

// Tenures returns every tenure in recs, ordered by key then start.
func Tenures(recs []trace.Record) []Tenure {
	open := map[pk]int{}
	var out []Tenure
	procKeys := map[int32][]string{}
	closeT := func(k pk, r *trace.Record) {
		if i, ok := open[k]; ok {
			out[i].Open = false
			out[i].EndedBy = r.Kind
			out[i].EndT = r.T
			out[i].Graceful = r.Kind == trace.LeaseReleased
			if to, ok := strings.CutPrefix(r.Reason, "handed over to "); ok && out[i].Graceful {
				out[i].HandedTo = to
			}
			delete(open, k)
		}
	}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Kind == trace.Delivered || r.IsAct():
			k := pk{r.Proc, r.Key}
			if j, ok := open[k]; ok {
				out[j].End = r.T
				out[j].LastSeq = r.Seq
				continue
			}
			open[k] = len(out)
			out = append(out, Tenure{Key: r.Key, Proc: r.Proc, Owner: r.Owner, Start: r.T, End: r.T, FirstSeq: r.Seq, LastSeq: r.Seq, Open: true})
			procKeys[r.Proc] = append(procKeys[r.Proc], r.Key)
		case r.Kind == trace.KindApply && r.Outcome == trace.OutcomeOK && r.Reason == trace.WriteRenew && strings.HasPrefix(r.Key, sessionPrefix):
			// a renewal of the process's session row renews every lease
			// it holds
			for _, key := range procKeys[r.Proc] {
				if j, ok := open[pk{r.Proc, key}]; ok {
					out[j].Renewed = r.T
				}
			}
		case r.Kind == trace.KindApply && r.Outcome == trace.OutcomeOK && (r.Reason == trace.WriteRenew || r.Reason == trace.WriteCheckpoint):
			if j, ok := open[pk{r.Proc, r.Key}]; ok {
				out[j].Renewed = r.T
			}
		case r.Kind == trace.CallSent && r.Reason == trace.WriteRelease:
			if j, ok := open[pk{r.Proc, r.Key}]; ok {
				out[j].Released = r.T
			}
		case r.Kind == trace.LeaseLost || r.Kind == trace.LeaseReleased || r.Kind == trace.StoppedActing:
			closeT(pk{r.Proc, r.Key}, r)
		case r.Kind == trace.KindProcStop:
			for _, key := range procKeys[r.Proc] {
				closeT(pk{r.Proc, key}, r)
			}
			delete(procKeys, r.Proc)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Start < out[j].Start
	})
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

// CheckS1 reports tenures of different processes on one key that overlap
// in true time.
func CheckS1(recs []trace.Record, o Options) []Violation {
	ts := Tenures(recs)
	var out []Violation
	for i := 0; i < len(ts); {
		j := i
		for j < len(ts) && ts[j].Key == ts[i].Key {
			j++
		}
		group := ts[i:j]
		// sweep: tenures sorted by start; compare with earlier ones still running
		for a := 0; a < len(group); a++ {
			for b := 0; b < a; b++ {
				x, y := group[b], group[a]
				if x.Proc == y.Proc || x.End < y.Start {
					continue
				}
				if len(out) >= maxOf(o) {
					return out
				}
				to := x.End
				if y.End > to {
					to = y.End
				}
				out = append(out, Violation{Invariant: S1, Key: x.Key, Workers: []string{tenureWho(x), tenureWho(y)},
					From: y.Start, To: to,
					Detail: "two processes acted on the lease at overlapping true times: " + tenureWho(x) + " acted " + x.Start.String() + ".." + x.End.String() + ", " + tenureWho(y) + " acted " + y.Start.String() + ".." + y.End.String(),
					Seqs:   []uint64{x.LastSeq, y.FirstSeq}})
			}
		}
		i = j
	}
	return out
}
