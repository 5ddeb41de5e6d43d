package livecheck

import (
	"sort"

	"github.com/shardlease/shardlease/sim/trace"
)

// unrecorded finds the records the processors received that no recorded
// producer put: a stream that held records before the run (earlier or
// unrecorded producers). The history cannot say whether those were all
// delivered, so the at-least-once check (S4) is given each batch with
// only the records it saw put: a batch of n records that spans m < n
// recorded puts counts n-m unrecorded records and is checked as a batch
// of m (or dropped when m is 0). A batch that spans more recorded puts
// than it holds still skipped records, and S4 still says so.
//
// It returns recs with the batches adjusted (recs itself if none needs
// it), the number of unrecorded records received, and the shards they
// were in. Shards without any recorded put are left alone (S4 does not
// check them).
func unrecorded(recs []trace.Record) (out []trace.Record, n int, shards []string) {
	puts := map[string][]userRec{} // user records (of KPL aggregates too)
	for i := range recs {
		if r := &recs[i]; r.Kind == trace.KindPut {
			for sub := range usersOf(r) {
				puts[r.Key] = append(puts[r.Key], userRec{r.First, int64(sub)})
			}
		}
	}
	for _, ps := range puts {
		sort.Slice(ps, func(i, j int) bool { return cmpUser(ps[i], ps[j]) < 0 })
	}
	seen := map[string]bool{}
	out = recs
	copied := false
	for i := range recs {
		r := recs[i]
		ps := puts[r.Key]
		if r.Kind != trace.KindReceived || r.Count == 0 || ps == nil {
			continue
		}
		first, last := firstOf(&r), lastOf(&r)
		lo := sort.Search(len(ps), func(j int) bool { return cmpUser(ps[j], first) >= 0 })
		hi := sort.Search(len(ps), func(j int) bool { return cmpUser(ps[j], last) > 0 })
		span := hi - lo
		if r.Count <= span {
			continue
		}
		if !copied {
			out = append([]trace.Record(nil), recs...)
			copied = true
		}
		n += r.Count - span
		if !seen[r.Key] {
			seen[r.Key] = true
			shards = append(shards, r.Key)
		}
		if span == 0 {
			out[i].Count = 0 // nothing recorded in it: nothing to check
			continue
		}
		out[i].First, out[i].FirstSub = ps[lo].seq, int32(ps[lo].sub)
		out[i].Last, out[i].LastSub, out[i].Count = ps[hi-1].seq, int32(ps[hi-1].sub), span
	}
	sort.Strings(shards)
	return out, n, shards
}
