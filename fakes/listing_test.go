package fakes

import (
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// TestListingShared checks that ListShards hands every caller one listing
// while the shards stay as they are, and a fresh one, equal to the shards
// listed from scratch, after a split, a merge and a closed shard's
// retention.
func TestListingShared(t *testing.T) {
	k, clk := newKinesis(t, KinesisOptions{Retention: time.Hour})
	must(t, k.CreateStream("s", 3))
	ids := func(shards []engine.Shard) []string {
		var out []string
		for _, sh := range shards {
			out = append(out, sh.ID)
		}
		return out
	}
	// the listing the fake would build anew, the reference
	fresh := func() []engine.Shard {
		now := clk.Now()
		s := k.streams["s"]
		var out []engine.Shard
		for _, sh := range s.shards {
			if k.listed(sh, now) {
				out = append(out, sh.info)
			}
		}
		return out
	}
	same := func(when string, a, b []engine.Shard) {
		t.Helper()
		if !slices.Equal(a, b) {
			t.Fatalf("%s: listing %v, want %v", when, a, b)
		}
	}
	a, b := listShards(t, k, "s"), listShards(t, k, "s")
	if &a[0] != &b[0] {
		t.Fatalf("two listings of an unchanged stream are not shared")
	}
	same("at start", a, fresh())
	_, err := k.SplitShardEvenly("s", "shardId-000000000000")
	must(t, err)
	c := listShards(t, k, "s")
	same("after a split", c, fresh())
	if len(c) != 5 || c[0].EndingSequence == "" {
		t.Fatalf("after a split: %v (the parent closed, two children)", ids(c))
	}
	_, err = k.MergeShards("s", "shardId-000000000001", "shardId-000000000002")
	must(t, err)
	same("after a merge", listShards(t, k, "s"), fresh())
	clk.Advance(time.Hour)
	same("at the parents' retention", listShards(t, k, "s"), fresh())
	clk.Advance(time.Millisecond)
	d := listShards(t, k, "s")
	same("past the parents' retention", d, fresh())
	if len(d) != 3 {
		t.Fatalf("past retention: %v, want the three open shards", ids(d))
	}
}
