package streamtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

var fanOutCases = []fanOutCase{
	{"consumer/lifecycle", func(x *fsuite) {
		stream := x.h.CreateStream(x.t, 1)
		ctx, cancel := x.ctx()
		defer cancel()
		_, err := x.f.DescribeConsumer(ctx, stream, "app")
		wantErrIs(x.t, "DescribeConsumer of a consumer never registered", err, engine.ErrNotFound)
		c, err := x.f.RegisterConsumer(ctx, stream, "app")
		if err != nil {
			x.t.Fatal(err)
		}
		if c.Name != "app" || c.ARN == "" || (c.Status != engine.ConsumerCreating && c.Status != engine.ConsumerActive) {
			x.t.Fatalf("registered %+v, want app with an ARN, CREATING or ACTIVE", c)
		}
		if !strings.Contains(c.ARN, stream) {
			x.t.Fatalf("consumer ARN %s does not name the stream %s", c.ARN, stream)
		}
		_, err = x.f.RegisterConsumer(ctx, stream, "app")
		wantErrIs(x.t, "RegisterConsumer of a registered name (a second worker starting)", err, engine.ErrResourceInUse)
		x.fh.Elapse(x.t, x.fh.Times().Activation)
		if d := x.describe(stream, "app"); d.Status != engine.ConsumerActive || d.ARN != c.ARN {
			x.t.Fatalf("described %+v after the activation time, want ACTIVE with ARN %s", d, c.ARN)
		}
		other := x.consumer(stream, "other")
		if other.ARN == c.ARN {
			x.t.Fatalf("two consumers share ARN %s", c.ARN)
		}
		if err := x.f.DeregisterConsumer(ctx, stream, "app"); err != nil {
			x.t.Fatal(err)
		}
		x.fh.Elapse(x.t, x.fh.Times().Activation)
		if d, err := x.f.DescribeConsumer(ctx, stream, "app"); err == nil && d.Status != engine.ConsumerDeleting {
			x.t.Fatalf("deregistered consumer described as %+v", d)
		}
		_, err = x.f.DescribeConsumer(ctx, "shardlease-no-such-stream", "app")
		wantErrIs(x.t, "DescribeConsumer on a missing stream", err, engine.ErrNotFound)
	}},
	{"subscribe/every_position", func(x *fsuite) {
		stream := x.h.CreateStream(x.t, 1)
		c := x.consumer(stream, "app")
		sh := x.mustListShards(stream)[0]
		puts := x.putOn(stream, sh, 8, "r")
		all, _ := x.readEvents(x.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon}), len(puts), false)
		x.wantRecords(all, puts)
		at := all[5].Arrival
		firstAt := slices.IndexFunc(all, func(r engine.Record) bool { return !r.Arrival.Before(at) })
		for _, tc := range []struct {
			name  string
			pos   engine.Position
			first int
		}{
			{"AT_SEQUENCE_NUMBER", engine.Position{Type: engine.IterAtSequenceNumber, Sequence: puts[3].seq}, 3},
			{"AFTER_SEQUENCE_NUMBER", engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: puts[3].seq}, 4},
			{"AT_TIMESTAMP", engine.Position{Type: engine.IterAtTimestamp, Timestamp: at}, firstAt},
		} {
			x.t.Run(tc.name, x.sub(x.t, func(y *fsuite) {
				y.quiet()
				got, _ := y.readEvents(y.mustSubscribe(c.ARN, stream, sh.ID, tc.pos), len(puts)-tc.first, false)
				y.wantRecords(got, puts[tc.first:])
			}))
		}
		x.t.Run("LATEST", x.sub(x.t, func(y *fsuite) {
			y.quiet()
			h := y.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterLatest})
			later := y.putOn(stream, sh, 3, "later")
			got, _ := y.readEvents(h, 3, false)
			y.wantRecords(got, later)
		}))
	}},
	{"subscribe/continuation_resumes_exactly", func(x *fsuite) {
		stream := x.h.CreateStream(x.t, 1)
		c := x.consumer(stream, "app")
		sh := x.mustListShards(stream)[0]
		first := x.putOn(stream, sh, 4, "a")
		h := x.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		got, last := x.readEvents(h, 4, false)
		x.wantRecords(got, first)
		x.unsubscribe(h)
		rest := x.putOn(stream, sh, 3, "b")
		x.quiet()
		h = x.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: last.Continuation})
		got, _ = x.readEvents(h, 3, false)
		x.wantRecords(got, rest)
	}},
	{"subscribe/in_use_then_taken_over", func(x *fsuite) {
		stream := x.h.CreateStream(x.t, 1)
		c := x.consumer(stream, "app")
		sh := x.mustListShards(stream)[0]
		puts := x.putOn(stream, sh, 1, "r")
		first := x.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		tm := x.fh.Times()
		x.fh.Elapse(x.t, tm.MinSubscribeInterval+10*time.Millisecond)
		_, err := x.subscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		wantErrIs(x.t, "a second Subscribe within the in-use window", err, engine.ErrResourceInUse)
		if got, _ := x.readEvents(first, 1, false); len(got) != 1 {
			x.t.Fatalf("the first subscription read %d records after a refused second one", len(got))
		}
		x.quiet()
		second := x.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		x.wantEnded(first, true)
		puts = append(puts, x.putOn(stream, sh, 2, "r")...)
		got, _ := x.readEvents(second, 3, false)
		x.wantRecords(got, puts)
		// Another consumer's subscription to the same shard is independent.
		o := x.consumer(stream, "other")
		got, _ = x.readEvents(x.mustSubscribe(o.ARN, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon}), 3, false)
		x.wantRecords(got, puts)
	}},
	{"subscribe/lifetime_ends", func(x *fsuite) {
		stream := x.h.CreateStream(x.t, 1)
		c := x.consumer(stream, "app")
		sh := x.mustListShards(stream)[0]
		puts := x.putOn(stream, sh, 2, "r")
		h := x.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		got, last := x.readEvents(h, 2, false)
		x.wantRecords(got, puts)
		x.fh.Elapse(x.t, x.fh.Times().Lifetime)
		x.wantEnded(h, false)
		x.unsubscribe(h)
		more := x.putOn(stream, sh, 2, "more")
		x.quiet()
		got, _ = x.readEvents(x.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: last.Continuation}), 2, false)
		x.wantRecords(got, more)
	}},
	{"subscribe/shard_end_child_shards", func(x *fsuite) {
		stream := x.h.CreateStream(x.t, 2)
		c := x.consumer(stream, "app")
		shards := x.mustListShards(stream)
		slices.SortFunc(shards, func(a, b engine.Shard) int { return hashInt(a.StartingHashKey).Cmp(hashInt(b.StartingHashKey)) })
		a, b := shards[0], shards[1]
		ra := x.putOn(stream, a, 3, "a")
		x.h.Split(x.t, stream, a.ID, midHash(a.StartingHashKey, a.EndingHashKey))
		kids := childrenOf(x.mustListShards(stream), a.ID)
		slices.SortFunc(kids, func(p, q engine.Shard) int { return hashInt(p.StartingHashKey).Cmp(hashInt(q.StartingHashKey)) })
		x.h.Merge(x.t, stream, kids[1].ID, b.ID) // the upper child and its neighbour b
		listed := x.mustListShards(stream)
		for _, p := range []struct {
			sh   engine.Shard
			want []put
		}{{a, ra}, {b, nil}} {
			got, last := x.readEvents(x.mustSubscribe(c.ARN, stream, p.sh.ID, engine.Position{Type: engine.IterTrimHorizon}), 0, true)
			x.wantRecords(got, p.want)
			if !last.End || len(last.ChildShards) == 0 {
				x.t.Fatalf("the last event of closed shard %s: end %v, %d child shards; want the end with its children", p.sh.ID, last.End, len(last.ChildShards))
			}
			var ids, want []string
			for _, ch := range last.ChildShards {
				if !slices.Contains(ch.ParentIDs(), p.sh.ID) {
					x.t.Fatalf("child shard %+v does not name its parent %s", ch, p.sh.ID)
				}
				ids = append(ids, ch.ID)
			}
			for _, k := range childrenOf(listed, p.sh.ID) {
				want = append(want, k.ID)
			}
			slices.Sort(ids)
			slices.Sort(want)
			if !slices.Equal(ids, want) {
				x.t.Fatalf("ChildShards of %s: %v, want %v as listed", p.sh.ID, ids, want)
			}
		}
	}},
	{"subscribe/missing", func(x *fsuite) {
		stream := x.h.CreateStream(x.t, 1)
		c := x.consumer(stream, "app")
		_, err := x.subscribe(c.ARN, stream, "shardId-000000000099", engine.Position{Type: engine.IterTrimHorizon})
		wantErrIs(x.t, "Subscribe to a missing shard", err, engine.ErrNotFound)
		other := x.h.CreateStream(x.t, 1)
		bogus := strings.Replace(c.ARN, "/consumer/app:", "/consumer/nobody:", 1)
		_, err = x.subscribe(bogus, stream, x.mustListShards(stream)[0].ID, engine.Position{Type: engine.IterTrimHorizon})
		wantErrIs(x.t, "Subscribe with an unknown consumer", err, engine.ErrNotFound)
		oc := x.consumer(other, "app")
		if oc.ARN == c.ARN {
			x.t.Fatalf("consumers of two streams share ARN %s", c.ARN)
		}
	}},
	{"subscribe/slow_reader_loses_nothing", func(x *fsuite) {
		// 6 MiB waiting: more than an HTTP/2 stream's flow-control window
		// (4 MiB in Go's client), so a server that pushes regardless of
		// the reader would have to drop or buffer without bound.
		stream := x.h.CreateStream(x.t, 1)
		c := x.consumer(stream, "app")
		sh := x.mustListShards(stream)[0]
		var want []put
		blob := strings.Repeat("x", 128<<10)
		for i := 0; i < 48; i++ {
			p := put{data: []byte(fmt.Sprintf("%03d %s", i, blob))}
			w := x.h.Put(x.t, stream, sh.StartingHashKey, p.data)
			p.key, p.shard, p.seq = w.PartitionKey, w.Shard, w.Sequence
			want = append(want, p)
		}
		h := x.mustSubscribe(c.ARN, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		first, err := x.next(h)
		if err != nil {
			x.t.Fatal(err)
		}
		x.fh.Elapse(x.t, time.Second) // the reader is busy
		rest, _ := x.readEvents(h, len(want)-len(first.Records), false)
		x.wantRecords(append(first.Records, rest...), want)
	}},
}
