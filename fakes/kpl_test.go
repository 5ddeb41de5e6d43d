package fakes_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kpl"
	"github.com/shardlease/shardlease/fakes"
)

// PutAggregated writes one Kinesis record in the KPL's format, to the
// shard that owns its first user record.
func TestPutAggregated(t *testing.T) {
	k := fakes.NewKinesis(fakes.KinesisOptions{})
	if err := k.CreateStream("s", 4); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 8; i++ {
		pk := fmt.Sprint("key-", i)
		recs := []kpl.UserRecord{{PartitionKey: pk, Data: []byte("a")}, {PartitionKey: pk, ExplicitHashKey: "5", Data: []byte("b")}}
		shard, seq, err := k.PutAggregated("s", recs)
		if err != nil {
			t.Fatal(err)
		}
		// The shard owns the first user record's hash key.
		shards, _ := k.ListShards(ctx, "s")
		h := kpl.PartitionKeyHash(pk)
		for _, sh := range shards {
			r, err := kpl.ParseHashRange(sh.StartingHashKey, sh.EndingHashKey)
			if err != nil {
				t.Fatal(err)
			}
			if r.Contains(h) != (sh.ID == shard) {
				t.Errorf("%s went to %s; shard %s %v owns %s: %v", pk, shard, sh.ID, r, h, r.Contains(h))
			}
		}
		it, err := k.GetShardIterator(ctx, "s", shard, engine.Position{Type: engine.IterAtSequenceNumber, Sequence: seq})
		if err != nil {
			t.Fatal(err)
		}
		page, err := k.GetRecords(ctx, it, 1)
		if err != nil || len(page.Records) != 1 || page.Records[0].Sequence != seq {
			t.Fatalf("read back %v, %v", page.Records, err)
		}
		got, err := kpl.Decode(page.Records[0].Data)
		if err != nil || len(got) != 2 || got[1].ExplicitHashKey != "5" || !bytes.Equal(got[0].Data, []byte("a")) || got[0].PartitionKey != pk {
			t.Errorf("decoded %v, %v", got, err)
		}
		if page.Records[0].PartitionKey != "a" {
			t.Errorf("the aggregate's partition key is %q, want the KPL's \"a\"", page.Records[0].PartitionKey)
		}
	}
	if _, _, err := k.PutAggregated("s", nil); err == nil {
		t.Error("an empty aggregate was put")
	}
	if _, _, err := k.PutAggregated("nope", []kpl.UserRecord{{PartitionKey: "k"}}); err == nil {
		t.Error("put to a missing stream")
	}
}
