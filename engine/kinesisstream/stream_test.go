package kinesisstream_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
)

// TestPutRecordsOnServer writes more than one batch through kinesalite and
// reads every record back from the shards it landed on.
func TestPutRecordsOnServer(t *testing.T) {
	c, _ := client(t)
	stream := newStream(t, c, 2)
	s := kinesisstream.New(c)
	entries := make([]kinesisstream.PutEntry, 1100)
	for i := range entries {
		entries[i] = kinesisstream.PutEntry{PartitionKey: fmt.Sprintf("pk-%d", i), Data: []byte(fmt.Sprint(i))}
	}
	res, err := s.PutRecords(ctx(t), stream, entries)
	if err != nil {
		t.Fatal(err)
	}
	perShard := map[string]int{}
	for i, r := range res {
		if r.Err != nil || r.Sequence == "" || r.Shard == "" {
			t.Fatalf("entry %d: %+v", i, r)
		}
		perShard[r.Shard]++
	}
	shards, err := s.ListShards(ctx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, sh := range shards {
		it, err := s.GetShardIterator(ctx(t), stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		page, err := s.GetRecords(ctx(t), it, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Records) != perShard[sh.ID] {
			t.Fatalf("shard %s holds %d records, PutRecords put %d there", sh.ID, len(page.Records), perShard[sh.ID])
		}
		total += len(page.Records)
	}
	if total != len(entries) {
		t.Fatalf("read %d records, wrote %d", total, len(entries))
	}
}

// TestHonoursContext: a cancelled context stops every call.
func TestHonoursContext(t *testing.T) {
	c, _ := client(t)
	stream := newStream(t, c, 1)
	s := kinesisstream.New(c)
	it, err := s.GetShardIterator(ctx(t), stream, "shardId-000000000000", engine.Position{Type: engine.IterTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]error{}
	_, calls["ListShards"] = s.ListShards(cctx, stream)
	_, calls["GetShardIterator"] = s.GetShardIterator(cctx, stream, "shardId-000000000000", engine.Position{Type: engine.IterLatest})
	_, calls["GetRecords"] = s.GetRecords(cctx, it, 10)
	_, calls["PutRecords"] = s.PutRecords(cctx, stream, []kinesisstream.PutEntry{{PartitionKey: "k"}})
	calls["CreateStream"] = kinesisstream.CreateStream(cctx, c, stream+"-x", 1)
	calls["WaitActive"] = kinesisstream.WaitActive(cctx, c, stream)
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context = %v, want context.Canceled", name, err)
		}
	}
}
