package kinesisstream

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// AdminAPI is the subset of *kinesis.Client that the stream administration
// helpers use.
type AdminAPI interface {
	CreateStream(ctx context.Context, in *kinesis.CreateStreamInput, opts ...func(*kinesis.Options)) (*kinesis.CreateStreamOutput, error)
	DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	SplitShard(ctx context.Context, in *kinesis.SplitShardInput, opts ...func(*kinesis.Options)) (*kinesis.SplitShardOutput, error)
	MergeShards(ctx context.Context, in *kinesis.MergeShardsInput, opts ...func(*kinesis.Options)) (*kinesis.MergeShardsOutput, error)
}

var _ AdminAPI = (*kinesis.Client)(nil)

// CreateStream creates a provisioned stream with shards shards and waits
// until it is ACTIVE. A stream that already exists is not an error;
// CreateStream then only waits for it. Give ctx a deadline.
func CreateStream(ctx context.Context, api AdminAPI, name string, shards int32) error {
	_, err := api.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(shards)})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("kinesisstream: create stream %q: %w", name, err)
	}
	return WaitActive(ctx, api, name)
}

// SplitShard splits shard of stream at newStartingHashKey (the first hash
// key of the second child) and waits until the stream is ACTIVE again.
func SplitShard(ctx context.Context, api AdminAPI, stream, shard, newStartingHashKey string) error {
	_, err := api.SplitShard(ctx, &kinesis.SplitShardInput{
		StreamName: aws.String(stream), ShardToSplit: aws.String(shard), NewStartingHashKey: aws.String(newStartingHashKey),
	})
	if err != nil {
		return fmt.Errorf("kinesisstream: split shard %s of %q at %s: %w", shard, stream, newStartingHashKey, err)
	}
	return WaitActive(ctx, api, stream)
}

// MergeShards merges shard with adjacent (the shard whose hash range
// follows or precedes it) and waits until the stream is ACTIVE again.
func MergeShards(ctx context.Context, api AdminAPI, stream, shard, adjacent string) error {
	_, err := api.MergeShards(ctx, &kinesis.MergeShardsInput{
		StreamName: aws.String(stream), ShardToMerge: aws.String(shard), AdjacentShardToMerge: aws.String(adjacent),
	})
	if err != nil {
		return fmt.Errorf("kinesisstream: merge shards %s and %s of %q: %w", shard, adjacent, stream, err)
	}
	return WaitActive(ctx, api, stream)
}

// WaitActive polls DescribeStreamSummary until stream is ACTIVE, backing
// off from 50 ms to 2 s between polls, until ctx ends.
func WaitActive(ctx context.Context, api AdminAPI, stream string) error {
	delay := 50 * time.Millisecond
	for {
		out, err := api.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		var notFound *types.ResourceNotFoundException
		switch {
		case errors.As(err, &notFound):
			// Right after CreateStream: poll again.
		case err != nil:
			return fmt.Errorf("kinesisstream: wait for stream %q: %w", stream, err)
		case out.StreamDescriptionSummary != nil && out.StreamDescriptionSummary.StreamStatus == types.StreamStatusActive:
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("kinesisstream: wait for stream %q to become ACTIVE: %w", stream, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// MidHashKey returns the hash key halfway between start and end (decimal
// 128-bit numbers, inclusive range): the NewStartingHashKey that splits a
// shard with that range into two halves.
func MidHashKey(start, end string) (string, error) {
	a, ok1 := new(big.Int).SetString(start, 10)
	b, ok2 := new(big.Int).SetString(end, 10)
	if !ok1 || !ok2 || a.Cmp(b) >= 0 {
		return "", fmt.Errorf("kinesisstream: bad hash key range %s..%s", start, end)
	}
	mid := new(big.Int).Add(a, b)
	mid.Add(mid, big.NewInt(1))
	return mid.Rsh(mid, 1).String(), nil
}
