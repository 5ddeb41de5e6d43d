package kinesisstream_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/engine/streamtest"
	"github.com/shardlease/shardlease/internal/localaws"
)

func ctx(t *testing.T) context.Context { return localaws.Context(t) }

func fastRetries(cfg aws.Config) aws.Config { return localaws.FastRetries(cfg) }

func noRetries(cfg aws.Config) aws.Config { return localaws.NoRetries(cfg) }

// client returns a Kinesis client for the local server (skipping the test
// when there is none).
func client(t *testing.T) (*kinesis.Client, localaws.Target) {
	t.Helper()
	tg := localaws.Kinesis(t)
	return kinesis.NewFromConfig(fastRetries(tg.Config)), tg
}

// harness is the streamtest.Harness on kinesalite, through the Kinesis API.
type harness struct {
	c      *kinesis.Client
	stream *kinesisstream.Stream
	puts   atomic.Int64
}

func (h *harness) Stream() engine.Stream { return h.stream }

func (h *harness) CreateStream(t *testing.T, shards int) string {
	t.Helper()
	return newStream(t, h.c, shards)
}

func (h *harness) Put(t *testing.T, stream, hashKey string, data []byte) streamtest.Written {
	t.Helper()
	pk := fmt.Sprintf("pk-%d", h.puts.Add(1))
	out, err := h.c.PutRecord(ctx(t), &kinesis.PutRecordInput{
		StreamName: aws.String(stream), PartitionKey: aws.String(pk),
		ExplicitHashKey: aws.String(hashKey), Data: data,
	})
	if err != nil {
		t.Fatalf("PutRecord: %v", err)
	}
	return streamtest.Written{PartitionKey: pk, Shard: aws.ToString(out.ShardId), Sequence: aws.ToString(out.SequenceNumber)}
}

func (h *harness) Split(t *testing.T, stream, shard, newStartingHashKey string) {
	t.Helper()
	if err := kinesisstream.SplitShard(ctx(t), h.c, stream, shard, newStartingHashKey); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) Merge(t *testing.T, stream, shard, adjacent string) {
	t.Helper()
	if err := kinesisstream.MergeShards(ctx(t), h.c, stream, shard, adjacent); err != nil {
		t.Fatal(err)
	}
}

// newStream creates a stream that is deleted when t ends.
func newStream(t *testing.T, c *kinesis.Client, shards int) string {
	t.Helper()
	name := localaws.UniqueName(t, "st")
	if err := kinesisstream.CreateStream(ctx(t), c, name, int32(shards)); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	t.Cleanup(func() {
		c2, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.DeleteStream(c2, &kinesis.DeleteStreamInput{StreamName: aws.String(name), EnforceConsumerDeletion: aws.Bool(true)})
	})
	return name
}
