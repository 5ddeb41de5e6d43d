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
	DescribeStream(ctx context.Context, in *kinesis.DescribeStreamInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamOutput, error)
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

// Waiter timing: the SDK's StreamExistsWaiter with a short first delay, so
// that local servers that create streams at once are not waited on for the
// SDK's default 10 s; against Kinesis the waiter backs off (with jitter)
// up to waitMaxDelay, well inside DescribeStream's limit of 10 calls per
// second per account.
const (
	waitMinDelay = 50 * time.Millisecond
	waitMaxDelay = 5 * time.Second
	// waitDefault bounds the wait when ctx has no deadline.
	waitDefault = 10 * time.Minute
)

// WaitActive waits with the SDK's StreamExistsWaiter (DescribeStream)
// until stream is ACTIVE. Unlike the SDK's default, a
// ResourceNotFoundException is waited out (a stream is not visible at once
// after CreateStream). It ends with ctx, or after 10 minutes if ctx has no
// deadline.
func WaitActive(ctx context.Context, api AdminAPI, stream string) error {
	// With a deadline, the waiter's own bound lies past it, so that ctx
	// ends the wait (and the error wraps ctx's).
	maxWait := waitDefault
	if d, ok := ctx.Deadline(); ok {
		maxWait = time.Until(d) + waitMaxDelay
	}
	if ctx.Err() != nil {
		return fmt.Errorf("kinesisstream: wait for stream %q to become ACTIVE: %w", stream, ctx.Err())
	}
	w := kinesis.NewStreamExistsWaiter(api, func(o *kinesis.StreamExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = waitMinDelay, waitMaxDelay
		o.Retryable = streamActive
	})
	err := w.Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(stream), Limit: aws.Int32(1)}, maxWait)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("kinesisstream: wait for stream %q to become ACTIVE: %w (%w)", stream, ctx.Err(), err)
		}
		return fmt.Errorf("kinesisstream: wait for stream %q to become ACTIVE: %w", stream, err)
	}
	return nil
}

// streamActive is the waiter's Retryable: done when the stream is ACTIVE,
// wait again while it is CREATING or UPDATING or not yet found, fail on any
// other error.
func streamActive(_ context.Context, _ *kinesis.DescribeStreamInput, out *kinesis.DescribeStreamOutput, err error) (bool, error) {
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return true, nil
	case err != nil:
		return false, err
	case out.StreamDescription != nil && out.StreamDescription.StreamStatus == types.StreamStatusActive:
		return false, nil
	}
	return true, nil
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
