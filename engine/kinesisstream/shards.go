package kinesisstream

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/shardlease/shardlease/engine"
)

// ListShards returns every shard of stream that the service lists, in the
// service's order, following NextToken. A server that ignores NextToken
// (kinesalite) still yields every shard once: repeated shards are dropped
// and paging stops when a page brings nothing new. If the server does not
// know ListShards, DescribeStream is used instead (and from then on).
func (s *Stream) ListShards(ctx context.Context, stream string) ([]engine.Shard, error) {
	if !s.noListShards.Load() {
		shards, err := s.listShards(ctx, stream)
		if err == nil || !unsupported(err) {
			return shards, err
		}
		s.noListShards.Store(true)
	}
	return s.describeShards(ctx, stream)
}

func (s *Stream) listShards(ctx context.Context, stream string) ([]engine.Shard, error) {
	var out []engine.Shard
	seen := map[string]bool{}
	in := &kinesis.ListShardsInput{StreamName: aws.String(stream)}
	if s.pageSize > 0 {
		in.MaxResults = aws.Int32(s.pageSize)
	}
	for page := 1; ; page++ {
		res, err := s.api.ListShards(ctx, in)
		if err != nil {
			if unsupported(err) {
				return nil, err
			}
			return nil, s.mapError(fmt.Sprintf("list shards of %q (page %d)", stream, page), fmt.Sprintf("stream %q", stream), err)
		}
		added := 0
		for _, sh := range res.Shards {
			if id := aws.ToString(sh.ShardId); !seen[id] {
				seen[id] = true
				out = append(out, shardOf(sh))
				added++
			}
		}
		if aws.ToString(res.NextToken) == "" || added == 0 {
			return out, nil
		}
		// A NextToken request must not name the stream.
		in = &kinesis.ListShardsInput{NextToken: res.NextToken, MaxResults: in.MaxResults}
	}
}

// describeShards lists shards with DescribeStream, following
// HasMoreShards with ExclusiveStartShardId.
func (s *Stream) describeShards(ctx context.Context, stream string) ([]engine.Shard, error) {
	var out []engine.Shard
	seen := map[string]bool{}
	in := &kinesis.DescribeStreamInput{StreamName: aws.String(stream)}
	if s.pageSize > 0 {
		in.Limit = aws.Int32(s.pageSize)
	}
	for page := 1; ; page++ {
		res, err := s.api.DescribeStream(ctx, in)
		if err != nil {
			return nil, s.mapError(fmt.Sprintf("describe stream %q (page %d)", stream, page), fmt.Sprintf("stream %q", stream), err)
		}
		if res.StreamDescription == nil {
			return nil, fmt.Errorf("kinesisstream: describe stream %q: no stream description in the reply", stream)
		}
		added, last := 0, ""
		for _, sh := range res.StreamDescription.Shards {
			last = aws.ToString(sh.ShardId)
			if !seen[last] {
				seen[last] = true
				out = append(out, shardOf(sh))
				added++
			}
		}
		if !aws.ToBool(res.StreamDescription.HasMoreShards) || added == 0 {
			return out, nil
		}
		in.ExclusiveStartShardId = aws.String(last)
	}
}

// shardOf maps a Kinesis shard description.
func shardOf(sh types.Shard) engine.Shard {
	out := engine.Shard{
		ID:             aws.ToString(sh.ShardId),
		Parent:         aws.ToString(sh.ParentShardId),
		AdjacentParent: aws.ToString(sh.AdjacentParentShardId),
	}
	if r := sh.HashKeyRange; r != nil {
		out.StartingHashKey = aws.ToString(r.StartingHashKey)
		out.EndingHashKey = aws.ToString(r.EndingHashKey)
	}
	if r := sh.SequenceNumberRange; r != nil {
		out.StartingSequence = aws.ToString(r.StartingSequenceNumber)
		out.EndingSequence = aws.ToString(r.EndingSequenceNumber)
	}
	return out
}

// childOf maps a child shard that GetRecords returns at the end of a
// closed shard. Its sequence range is not known from GetRecords.
func childOf(c types.ChildShard) engine.Shard {
	out := engine.Shard{ID: aws.ToString(c.ShardId)}
	if len(c.ParentShards) > 0 {
		out.Parent = c.ParentShards[0]
	}
	if len(c.ParentShards) > 1 {
		out.AdjacentParent = c.ParentShards[1]
	}
	if r := c.HashKeyRange; r != nil {
		out.StartingHashKey = aws.ToString(r.StartingHashKey)
		out.EndingHashKey = aws.ToString(r.EndingHashKey)
	}
	return out
}
