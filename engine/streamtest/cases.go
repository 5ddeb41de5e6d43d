package streamtest

import (
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

type testCase struct {
	name string
	run  func(x *suite)
}

var cases = []testCase{
	{"list/new_stream", func(x *suite) {
		stream := x.h.CreateStream(x.t, 3)
		shards := x.mustListShards(stream)
		if len(shards) != 3 {
			x.t.Fatalf("ListShards returned %d shards, want 3: %+v", len(shards), shards)
		}
		slices.SortFunc(shards, func(a, b engine.Shard) int {
			return hashInt(a.StartingHashKey).Cmp(hashInt(b.StartingHashKey))
		})
		next := big.NewInt(0)
		for _, s := range shards {
			if s.ID == "" || s.Closed() || len(s.ParentIDs()) != 0 {
				x.t.Fatalf("new shard %+v: want an open shard with an id and no parents", s)
			}
			if err := engine.ValidateSequence(s.StartingSequence); err != nil {
				x.t.Fatalf("shard %s starting sequence: %v", s.ID, err)
			}
			start, end := hashInt(s.StartingHashKey), hashInt(s.EndingHashKey)
			if start == nil || end == nil || start.Cmp(next) != 0 || end.Cmp(start) < 0 {
				x.t.Fatalf("shard %s hash range %s..%s does not continue at %s", s.ID, s.StartingHashKey, s.EndingHashKey, next)
			}
			next = new(big.Int).Add(end, big.NewInt(1))
		}
		if last := new(big.Int).Sub(next, big.NewInt(1)).String(); last != MaxHashKey {
			x.t.Fatalf("hash ranges end at %s, want %s", last, MaxHashKey)
		}
	}},
	{"describe/identity", func(x *suite) {
		a, b := x.h.CreateStream(x.t, 1), x.h.CreateStream(x.t, 1)
		ctx, cancel := x.ctx()
		defer cancel()
		ia, err := x.s.DescribeStream(ctx, a)
		if err != nil {
			x.t.Fatalf("DescribeStream(%q): %v", a, err)
		}
		ib, err := x.s.DescribeStream(ctx, b)
		if err != nil {
			x.t.Fatalf("DescribeStream(%q): %v", b, err)
		}
		if ia.Name != a || !strings.HasSuffix(ia.ARN, ":stream/"+a) || ia.Created.IsZero() {
			x.t.Fatalf("DescribeStream(%q) = %+v: want its name, an ARN ending in :stream/%s and a creation time", a, ia, a)
		}
		if ia.Identity() == ib.Identity() {
			x.t.Fatalf("two streams with one identity %s", ia.Identity())
		}
		again, err := x.s.DescribeStream(ctx, a)
		if err != nil || again.Identity() != ia.Identity() {
			x.t.Fatalf("DescribeStream(%q) again = %+v, %v: the identity changed", a, again, err)
		}
	}},
	{"describe/missing_stream", func(x *suite) {
		ctx, cancel := x.ctx()
		defer cancel()
		_, err := x.s.DescribeStream(ctx, "shardlease-no-such-stream")
		wantErrIs(x.t, "DescribeStream of a missing stream", err, engine.ErrNotFound)
	}},
	{"list/missing_stream", func(x *suite) {
		_, err := x.listShards("shardlease-no-such-stream")
		wantErrIs(x.t, "ListShards of a missing stream", err, engine.ErrNotFound)
	}},
	{"iterator/missing_stream", func(x *suite) {
		_, err := x.iterator("shardlease-no-such-stream", "shardId-000000000000", engine.Position{Type: engine.IterTrimHorizon})
		wantErrIs(x.t, "GetShardIterator on a missing stream", err, engine.ErrNotFound)
	}},
	{"iterator/missing_shard", func(x *suite) {
		stream := x.h.CreateStream(x.t, 1)
		_, err := x.iterator(stream, "shardId-000000000099", engine.Position{Type: engine.IterTrimHorizon})
		wantErrIs(x.t, "GetShardIterator on a missing shard", err, engine.ErrNotFound)
	}},
	{"records/empty_open_shard", func(x *suite) {
		stream := x.h.CreateStream(x.t, 1)
		sh := x.mustListShards(stream)[0]
		p := x.mustRecords(x.mustIterator(stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon}), 10)
		if len(p.Records) != 0 || p.NextIterator == "" {
			x.t.Fatalf("empty open shard: %d records, next iterator %q; want none and a next iterator", len(p.Records), p.NextIterator)
		}
	}},
	{"records/sequence_order_and_content", func(x *suite) {
		stream := x.h.CreateStream(x.t, 2)
		shards := x.mustListShards(stream)
		var want []put
		for i := 0; i < 5; i++ { // interleave the two shards
			want = append(want, x.putOn(stream, shards[0], 5, "a"+string(rune('0'+i)))...)
			x.putOn(stream, shards[1], 1, "b"+string(rune('0'+i)))
		}
		it := x.mustIterator(stream, shards[0].ID, engine.Position{Type: engine.IterTrimHorizon})
		got, it := x.readN(it, len(want), 4)
		x.wantRecords(got, want)
		if it == "" {
			x.t.Fatal("open shard returned an empty next iterator")
		}
		if p := x.mustRecords(it, 10); len(p.Records) != 0 {
			x.t.Fatalf("read %d records past the last one written", len(p.Records))
		}
	}},
	{"records/limit", func(x *suite) {
		stream := x.h.CreateStream(x.t, 1)
		sh := x.mustListShards(stream)[0]
		want := x.putOn(stream, sh, 6, "r")
		it := x.mustIterator(stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		var got []engine.Record
		for len(got) < len(want) {
			p := x.mustRecords(it, 1)
			if len(p.Records) != 1 {
				x.t.Fatalf("GetRecords(limit 1) with records waiting returned %d", len(p.Records))
			}
			got = append(got, p.Records...)
			it = p.NextIterator
		}
		x.wantRecords(got, want)
	}},
	{"iterator/every_type", func(x *suite) {
		stream := x.h.CreateStream(x.t, 1)
		sh := x.mustListShards(stream)[0]
		puts := x.putOn(stream, sh, 12, "r")
		all, _ := x.readN(x.mustIterator(stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon}), len(puts), 100)
		x.wantRecords(all, puts)
		at := all[7].Arrival
		firstAt := slices.IndexFunc(all, func(r engine.Record) bool { return !r.Arrival.Before(at) })
		for _, tc := range []struct {
			name  string
			pos   engine.Position
			first int
		}{
			{"TRIM_HORIZON", engine.Position{Type: engine.IterTrimHorizon}, 0},
			{"AT_SEQUENCE_NUMBER", engine.Position{Type: engine.IterAtSequenceNumber, Sequence: puts[5].seq}, 5},
			{"AFTER_SEQUENCE_NUMBER", engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: puts[5].seq}, 6},
			{"AT_SEQUENCE_NUMBER_first", engine.Position{Type: engine.IterAtSequenceNumber, Sequence: puts[0].seq}, 0},
			{"AFTER_SEQUENCE_NUMBER_last_but_one", engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: puts[10].seq}, 11},
			{"AT_TIMESTAMP", engine.Position{Type: engine.IterAtTimestamp, Timestamp: at}, firstAt},
			{"AT_TIMESTAMP_before_all", engine.Position{Type: engine.IterAtTimestamp, Timestamp: all[0].Arrival.Add(-time.Hour)}, 0},
		} {
			x.t.Run(tc.name, func(t *testing.T) {
				y := &suite{t: t, h: x.h, s: x.s}
				got, _ := y.readN(y.mustIterator(stream, sh.ID, tc.pos), len(puts)-tc.first, 100)
				y.wantRecords(got, puts[tc.first:])
			})
		}
		x.t.Run("LATEST", func(t *testing.T) {
			y := &suite{t: t, h: x.h, s: x.s}
			it := y.mustIterator(stream, sh.ID, engine.Position{Type: engine.IterLatest})
			p := y.mustRecords(it, 100)
			if len(p.Records) != 0 {
				t.Fatalf("LATEST iterator returned %d old records", len(p.Records))
			}
			later := y.putOn(stream, sh, 2, "later")
			got, _ := y.readN(p.NextIterator, 2, 100)
			y.wantRecords(got, later)
		})
		x.t.Run("AFTER_SEQUENCE_NUMBER_of_the_last", func(t *testing.T) {
			y := &suite{t: t, h: x.h, s: x.s}
			// Nothing before or at the starting record comes back.
			last := puts[len(puts)-1].seq
			p := y.mustRecords(y.mustIterator(stream, sh.ID, engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: last}), 100)
			for _, r := range p.Records {
				if engine.CompareSequences(r.Sequence, last) <= 0 {
					t.Fatalf("AFTER_SEQUENCE_NUMBER %s returned record %s", last, r.Sequence)
				}
			}
		})
	}},
	{"split/children_and_end_of_parent", func(x *suite) {
		stream := x.h.CreateStream(x.t, 1)
		parent := x.mustListShards(stream)[0]
		before := x.putOn(stream, parent, 5, "before")
		mid := midHash(parent.StartingHashKey, parent.EndingHashKey)
		x.h.Split(x.t, stream, parent.ID, mid)

		shards := x.mustListShards(stream)
		p := x.shardByID(shards, parent.ID)
		if !p.Closed() {
			x.t.Fatalf("split parent %+v is not closed", p)
		}
		kids := childrenOf(shards, parent.ID)
		if len(kids) != 2 {
			x.t.Fatalf("split parent has %d children, want 2: %+v", len(kids), shards)
		}
		slices.SortFunc(kids, func(a, b engine.Shard) int { return hashInt(a.StartingHashKey).Cmp(hashInt(b.StartingHashKey)) })
		for _, k := range kids {
			if k.Closed() || k.Parent != parent.ID || k.AdjacentParent != "" {
				x.t.Fatalf("child %+v: want open, Parent %s, no AdjacentParent", k, parent.ID)
			}
			if engine.CompareSequences(k.StartingSequence, before[len(before)-1].seq) <= 0 {
				x.t.Fatalf("child %s starts at %s, not after the parent's last record %s", k.ID, k.StartingSequence, before[len(before)-1].seq)
			}
		}
		if kids[0].StartingHashKey != parent.StartingHashKey || kids[0].EndingHashKey != minusOne(mid) ||
			kids[1].StartingHashKey != mid || kids[1].EndingHashKey != parent.EndingHashKey {
			x.t.Fatalf("children hash ranges %s..%s and %s..%s do not split %s..%s at %s",
				kids[0].StartingHashKey, kids[0].EndingHashKey, kids[1].StartingHashKey, kids[1].EndingHashKey,
				parent.StartingHashKey, parent.EndingHashKey, mid)
		}

		got, last := x.drain(x.mustIterator(stream, parent.ID, engine.Position{Type: engine.IterTrimHorizon}), 2)
		x.wantRecords(got, before)
		x.wantChildShards(last, parent.ID, kids)

		after := x.putOn(stream, kids[1], 3, "after")
		got, _ = x.readN(x.mustIterator(stream, kids[1].ID, engine.Position{Type: engine.IterTrimHorizon}), 3, 10)
		x.wantRecords(got, after)
	}},
	{"split/empty_parent_ends", func(x *suite) {
		stream := x.h.CreateStream(x.t, 1)
		parent := x.mustListShards(stream)[0]
		x.h.Split(x.t, stream, parent.ID, midHash(parent.StartingHashKey, parent.EndingHashKey))
		got, _ := x.drain(x.mustIterator(stream, parent.ID, engine.Position{Type: engine.IterTrimHorizon}), 10)
		if len(got) != 0 {
			x.t.Fatalf("empty parent returned %d records", len(got))
		}
	}},
	{"split/resume_after_last_record_of_closed_parent", func(x *suite) {
		// A checkpoint at the parent's last record resumes to the end.
		stream := x.h.CreateStream(x.t, 1)
		parent := x.mustListShards(stream)[0]
		before := x.putOn(stream, parent, 3, "r")
		x.h.Split(x.t, stream, parent.ID, midHash(parent.StartingHashKey, parent.EndingHashKey))
		pos := engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: before[2].seq}
		got, _ := x.drain(x.mustIterator(stream, parent.ID, pos), 10)
		if len(got) != 0 {
			x.t.Fatalf("read %d records after the last one", len(got))
		}
		got, _ = x.drain(x.mustIterator(stream, parent.ID, engine.Position{Type: engine.IterAtSequenceNumber, Sequence: before[1].seq}), 10)
		x.wantRecords(got, before[1:])
	}},
	{"merge/child_and_end_of_parents", func(x *suite) {
		stream := x.h.CreateStream(x.t, 2)
		shards := x.mustListShards(stream)
		slices.SortFunc(shards, func(a, b engine.Shard) int { return hashInt(a.StartingHashKey).Cmp(hashInt(b.StartingHashKey)) })
		a, b := shards[0], shards[1]
		ra := x.putOn(stream, a, 3, "a")
		rb := x.putOn(stream, b, 4, "b")
		x.h.Merge(x.t, stream, a.ID, b.ID)

		shards = x.mustListShards(stream)
		kids := childrenOf(shards, a.ID)
		if len(kids) != 1 {
			x.t.Fatalf("merged shard %s has %d children, want 1: %+v", a.ID, len(kids), shards)
		}
		kid := kids[0]
		if gotParents := slices.Sorted(slices.Values(kid.ParentIDs())); !slices.Equal(gotParents, slices.Sorted(slices.Values([]string{a.ID, b.ID}))) {
			x.t.Fatalf("merge child %+v: parents %v, want %s and %s", kid, gotParents, a.ID, b.ID)
		}
		if kid.Parent != a.ID || kid.AdjacentParent != b.ID {
			x.t.Fatalf("merge child %+v: want Parent %s (the shard merged) and AdjacentParent %s", kid, a.ID, b.ID)
		}
		if kid.Closed() || kid.StartingHashKey != a.StartingHashKey || kid.EndingHashKey != b.EndingHashKey {
			x.t.Fatalf("merge child %+v: want open with hash range %s..%s", kid, a.StartingHashKey, b.EndingHashKey)
		}
		for _, p := range []struct {
			sh   engine.Shard
			want []put
		}{{a, ra}, {b, rb}} {
			if !x.shardByID(shards, p.sh.ID).Closed() {
				x.t.Fatalf("merged parent %s is not closed", p.sh.ID)
			}
			got, last := x.drain(x.mustIterator(stream, p.sh.ID, engine.Position{Type: engine.IterTrimHorizon}), 100)
			x.wantRecords(got, p.want)
			x.wantChildShards(last, p.sh.ID, kids)
		}
		after := x.putOn(stream, kid, 2, "after")
		got, _ := x.readN(x.mustIterator(stream, kid.ID, engine.Position{Type: engine.IterTrimHorizon}), 2, 10)
		x.wantRecords(got, after)
	}},
	{"expired_iterator", func(x *suite) {
		e, ok := x.h.(Expirer)
		if !ok {
			x.t.Skip("harness cannot expire iterators (streamtest.Expirer); the adapter covers the mapping with a proxy")
		}
		stream := x.h.CreateStream(x.t, 1)
		sh := x.mustListShards(stream)[0]
		x.putOn(stream, sh, 1, "r")
		it := x.mustIterator(stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		e.ExpireIterators(x.t)
		_, err := x.records(it, 10)
		wantErrIs(x.t, "GetRecords with an expired iterator", err, engine.ErrExpiredIterator)
	}},
}

// wantChildShards checks the ChildShards of the last page of a closed
// shard: none (the caller then uses ListShards, which the test checked),
// or exactly the children ListShards shows, each naming parent.
func (x *suite) wantChildShards(last engine.RecordsPage, parent string, kids []engine.Shard) {
	x.t.Helper()
	if len(last.ChildShards) == 0 {
		return
	}
	var got, want []string
	for _, c := range last.ChildShards {
		if !slices.Contains(c.ParentIDs(), parent) {
			x.t.Fatalf("ChildShards entry %+v does not name parent %s", c, parent)
		}
		got = append(got, c.ID)
	}
	for _, k := range kids {
		want = append(want, k.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		x.t.Fatalf("ChildShards %v, want %v", got, want)
	}
}
