package fakes

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

// putMany puts n records with fresh partition keys and returns, per shard,
// the sequence numbers it issued.
func putMany(t testing.TB, k *Kinesis, stream string, from, n int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for i := from; i < from+n; i++ {
		pk := fmt.Sprint("pk-", i)
		id, seq, err := k.PutRecord(stream, pk, nil)
		must(t, err)
		out[id] = append(out[id], seq)
	}
	return out
}

// checkRouting puts records and checks each lands in an open shard whose
// range holds its hash.
func checkRouting(t testing.TB, k *Kinesis, stream string) {
	t.Helper()
	shards := listShards(t, k, stream)
	for i := range 500 {
		pk := fmt.Sprint("route-", i)
		id, _, err := k.PutRecord(stream, pk, nil)
		must(t, err)
		sh := shardByID(t, shards, id)
		if sh.Closed() || !inRange(t, sh, md5Hash(pk)) {
			t.Fatalf("%s routed to %+v", pk, sh)
		}
	}
}

func maxSeq(seqs []string) string { return slices.MaxFunc(seqs, engine.CompareSequences) }
func minSeq(seqs []string) string { return slices.MinFunc(seqs, engine.CompareSequences) }

func TestSplitShard(t *testing.T) {
	k, _ := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 2))
	before := putMany(t, k, "s", 0, 200)
	parent := shardByID(t, listShards(t, k, "s"), "shardId-000000000000")
	mid := "100000000000000000000000000000000000000"
	children, err := k.SplitShard("s", parent.ID, mid)
	must(t, err)
	if want := []string{"shardId-000000000002", "shardId-000000000003"}; !slices.Equal(children, want) {
		t.Fatalf("children %v, want %v", children, want)
	}
	shards := listShards(t, k, "s")
	if len(shards) != 4 {
		t.Fatalf("shards %v", shards)
	}
	p := shardByID(t, shards, parent.ID)
	if !p.Closed() || engine.CompareSequences(p.EndingSequence, maxSeq(before[parent.ID])) <= 0 {
		t.Fatalf("parent %+v after records up to %s", p, maxSeq(before[parent.ID]))
	}
	a, b := shardByID(t, shards, children[0]), shardByID(t, shards, children[1])
	wantEnd := new(big.Int).Sub(bigOf(t, mid), big.NewInt(1)).String()
	if a.StartingHashKey != parent.StartingHashKey || a.EndingHashKey != wantEnd ||
		b.StartingHashKey != mid || b.EndingHashKey != parent.EndingHashKey {
		t.Fatalf("children ranges %+v %+v", a, b)
	}
	for _, c := range []engine.Shard{a, b} {
		if c.Parent != parent.ID || c.AdjacentParent != "" || c.Closed() || engine.ValidateSequence(c.StartingSequence) != nil {
			t.Fatalf("child %+v of %+v", c, p)
		}
	}
	after := putMany(t, k, "s", 1000, 300)
	if len(after[parent.ID]) != 0 {
		t.Fatalf("records routed to the closed parent")
	}
	for _, c := range children {
		if len(after[c]) == 0 {
			t.Fatalf("child %s got no records", c)
		}
		if cs := shardByID(t, shards, c); engine.CompareSequences(minSeq(after[c]), cs.StartingSequence) <= 0 {
			t.Fatalf("child %s has a record at or below its starting number %s", c, cs.StartingSequence)
		}
	}
	checkRouting(t, k, "s")

	// Split evenly, again on a child.
	grand, err := k.SplitShardEvenly("s", children[1])
	must(t, err)
	shards = listShards(t, k, "s")
	g0, g1 := shardByID(t, shards, grand[0]), shardByID(t, shards, grand[1])
	lo, hi := bigOf(t, b.StartingHashKey), bigOf(t, b.EndingHashKey)
	wantMid := new(big.Int).Add(lo, new(big.Int).Rsh(new(big.Int).Add(new(big.Int).Sub(hi, lo), big.NewInt(1)), 1))
	if g1.StartingHashKey != wantMid.String() || g0.Parent != children[1] {
		t.Fatalf("even split %+v %+v, want mid %v", g0, g1, wantMid)
	}
	checkRouting(t, k, "s")
}

func TestSplitShardErrors(t *testing.T) {
	k, _ := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 2))
	s0 := shardByID(t, listShards(t, k, "s"), "shardId-000000000000")
	s1 := shardByID(t, listShards(t, k, "s"), "shardId-000000000001")
	tests := []struct {
		name, stream, shard, key string
		want                     error
	}{
		{"missing stream", "nope", s0.ID, "5", engine.ErrNotFound},
		{"missing shard", "s", "shardId-000000000099", "5", engine.ErrNotFound},
		{"at the start", "s", s0.ID, s0.StartingHashKey, ErrInvalidArgument},
		{"in the next shard", "s", s0.ID, s1.StartingHashKey, ErrInvalidArgument},
		{"beyond 2^128", "s", s1.ID, "340282366920938463463374607431768211456", ErrInvalidArgument},
		{"negative", "s", s0.ID, "-5", ErrInvalidArgument},
		{"not a number", "s", s0.ID, "12a", ErrInvalidArgument},
	}
	for _, tc := range tests {
		if _, err := k.SplitShard(tc.stream, tc.shard, tc.key); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// The last key of the range is a valid split point.
	_, err := k.SplitShard("s", s0.ID, s0.EndingHashKey)
	must(t, err)
	if _, err := k.SplitShard("s", s0.ID, "5"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("split of a closed shard: %v", err)
	}
	if _, err := k.SplitShardEvenly("s", "shardId-000000000003"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("split of a single-key shard: %v", err)
	}
}

func TestMergeShards(t *testing.T) {
	k, _ := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 3))
	before := putMany(t, k, "s", 0, 300)
	// Merge in the "wrong" order: the adjacent shard's range is below.
	child, err := k.MergeShards("s", "shardId-000000000002", "shardId-000000000001")
	must(t, err)
	if child != "shardId-000000000003" {
		t.Fatalf("child %s", child)
	}
	shards := listShards(t, k, "s")
	c := shardByID(t, shards, child)
	p1, p2 := shardByID(t, shards, "shardId-000000000001"), shardByID(t, shards, "shardId-000000000002")
	if c.Parent != p2.ID || c.AdjacentParent != p1.ID || !slices.Equal(c.ParentIDs(), []string{p2.ID, p1.ID}) {
		t.Fatalf("child parents %+v", c)
	}
	if c.StartingHashKey != p1.StartingHashKey || c.EndingHashKey != p2.EndingHashKey {
		t.Fatalf("child range %+v from %+v %+v", c, p1, p2)
	}
	for _, p := range []engine.Shard{p1, p2} {
		if !p.Closed() || engine.CompareSequences(c.StartingSequence, p.EndingSequence) <= 0 ||
			engine.CompareSequences(p.EndingSequence, maxSeq(before[p.ID])) <= 0 {
			t.Fatalf("parent %+v, child %+v", p, c)
		}
	}
	after := putMany(t, k, "s", 1000, 300)
	if len(after[p1.ID])+len(after[p2.ID]) != 0 || len(after[child]) == 0 {
		t.Fatalf("routing after merge: %v", after)
	}
	for _, p := range []engine.Shard{p1, p2} {
		if engine.CompareSequences(minSeq(after[child]), maxSeq(before[p.ID])) <= 0 {
			t.Fatalf("child record below parent %s's", p.ID)
		}
	}
	checkRouting(t, k, "s")
	infos, err := k.Shards("s")
	must(t, err)
	if !slices.Equal(infos[1].Children, []string{child}) || !slices.Equal(infos[2].Children, []string{child}) {
		t.Fatalf("graph %+v", infos)
	}
}

func TestMergeShardsErrors(t *testing.T) {
	k, _ := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 4))
	tests := []struct {
		name, a, b string
		want       error
	}{
		{"missing", "shardId-000000000000", "shardId-000000000009", engine.ErrNotFound},
		{"itself", "shardId-000000000000", "shardId-000000000000", ErrInvalidArgument},
		{"not adjacent", "shardId-000000000000", "shardId-000000000002", ErrInvalidArgument},
	}
	for _, tc := range tests {
		if _, err := k.MergeShards("s", tc.a, tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	_, err := k.MergeShards("s", "shardId-000000000000", "shardId-000000000001")
	must(t, err)
	if _, err := k.MergeShards("s", "shardId-000000000001", "shardId-000000000002"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("merge of a closed shard: %v", err)
	}
	if len(listShards(t, k, "s")) != 5 {
		t.Errorf("failed merges changed the stream")
	}
}

// TestReshardSequenceOrder splits and merges repeatedly while putting
// records and checks, over the whole graph, that every record of a shard
// is within its sequence range and above the one before it, and that
// children and parents name each other.
func TestReshardSequenceOrder(t *testing.T) {
	k, clock := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 2))
	n := 0
	for round := range 12 {
		putMany(t, k, "s", n, 100)
		n += 100
		clock.Advance(1e9)
		open := listShards(t, k, "s")
		open = slices.DeleteFunc(open, engine.Shard.Closed)
		if round%3 == 2 && len(open) > 1 {
			// Merge two adjacent open shards.
			slices.SortFunc(open, func(a, b engine.Shard) int { return bigOf(t, a.StartingHashKey).Cmp(bigOf(t, b.StartingHashKey)) })
			_, err := k.MergeShards("s", open[0].ID, open[1].ID)
			must(t, err)
		} else {
			_, err := k.SplitShardEvenly("s", open[round%len(open)].ID)
			must(t, err)
		}
		checkRouting(t, k, "s")
	}
	infos, err := k.Shards("s")
	must(t, err)
	byID := map[string]ShardInfo{}
	for _, sh := range infos {
		byID[sh.ID] = sh
	}
	for _, sh := range infos {
		recs, err := k.Records("s", sh.ID)
		must(t, err)
		for i, r := range recs {
			if engine.CompareSequences(r.Sequence, sh.StartingSequence) <= 0 ||
				sh.Closed() && engine.CompareSequences(r.Sequence, sh.EndingSequence) >= 0 ||
				i > 0 && engine.CompareSequences(recs[i-1].Sequence, r.Sequence) >= 0 {
				t.Fatalf("record %s out of order in %+v", r.Sequence, sh)
			}
		}
		// (numbers of different shards are not comparable: a child may
		// number its records with fewer digits than its parents)
		for _, pid := range sh.ParentIDs() {
			if p := byID[pid]; !slices.Contains(p.Children, sh.ID) {
				t.Fatalf("%s not among the children of %s", sh.ID, pid)
			}
		}
	}
}
