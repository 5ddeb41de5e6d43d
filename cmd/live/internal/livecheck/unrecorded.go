package livecheck

import (
	"sort"

	"github.com/shardlease/shardlease/engine"
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
	puts := map[string][]string{}
	for i := range recs {
		if recs[i].Kind == trace.KindPut {
			puts[recs[i].Key] = append(puts[recs[i].Key], recs[i].First)
		}
	}
	for _, ps := range puts {
		sort.Slice(ps, func(i, j int) bool { return engine.CompareSequences(ps[i], ps[j]) < 0 })
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
		lo := sort.Search(len(ps), func(j int) bool { return engine.CompareSequences(ps[j], r.First) >= 0 })
		hi := sort.Search(len(ps), func(j int) bool { return engine.CompareSequences(ps[j], r.Last) > 0 })
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
		out[i].First, out[i].Last, out[i].Count = ps[lo], ps[hi-1], span
	}
	sort.Strings(shards)
	return out, n, shards
}
