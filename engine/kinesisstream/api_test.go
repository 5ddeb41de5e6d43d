package kinesisstream_test

// Tests against a scripted API, without a server: the request shapes the
// real service needs and kinesalite does not check.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
)

// scripted is a kinesisstream.API whose answers the test sets; it records
// the requests.
type scripted struct {
	kinesisstream.API // nil: unexpected calls panic
	shards            []types.Shard
	pageSize          int
	ignoreToken       bool
	listIn            []*kinesis.ListShardsInput
	describeIn        []*kinesis.DescribeStreamInput
	iterIn            []*kinesis.GetShardIteratorInput
	recordsIn         []*kinesis.GetRecordsInput
	putIn             []*kinesis.PutRecordsInput
	putFail           map[int]string // entry index in a call -> error code
}

func shard(i int) types.Shard {
	return types.Shard{ShardId: aws.String(fmt.Sprintf("shardId-%012d", i)),
		HashKeyRange:        &types.HashKeyRange{StartingHashKey: aws.String(fmt.Sprint(i * 10)), EndingHashKey: aws.String(fmt.Sprint(i*10 + 9))},
		SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String(fmt.Sprint(1000 + i))}}
}

func (s *scripted) ListShards(_ context.Context, in *kinesis.ListShardsInput, _ ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	s.listIn = append(s.listIn, in)
	if in.NextToken != nil && in.StreamName != nil {
		return nil, errors.New("NextToken and StreamName cannot be provided together")
	}
	start := 0
	if in.NextToken != nil && !s.ignoreToken {
		_, _ = fmt.Sscan(*in.NextToken, &start)
	}
	end := min(start+s.pageSize, len(s.shards))
	out := &kinesis.ListShardsOutput{Shards: s.shards[start:end]}
	if end < len(s.shards) || s.ignoreToken {
		out.NextToken = aws.String(fmt.Sprint(end))
	}
	return out, nil
}

func (s *scripted) DescribeStream(_ context.Context, in *kinesis.DescribeStreamInput, _ ...func(*kinesis.Options)) (*kinesis.DescribeStreamOutput, error) {
	s.describeIn = append(s.describeIn, in)
	start := 0
	for in.ExclusiveStartShardId != nil && aws.ToString(s.shards[start].ShardId) <= *in.ExclusiveStartShardId {
		start++
	}
	end := min(start+s.pageSize, len(s.shards))
	return &kinesis.DescribeStreamOutput{StreamDescription: &types.StreamDescription{
		Shards: s.shards[start:end], HasMoreShards: aws.Bool(end < len(s.shards))}}, nil
}

func (s *scripted) GetShardIterator(_ context.Context, in *kinesis.GetShardIteratorInput, _ ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	s.iterIn = append(s.iterIn, in)
	return &kinesis.GetShardIteratorOutput{ShardIterator: aws.String("it")}, nil
}

func (s *scripted) GetRecords(_ context.Context, in *kinesis.GetRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	s.recordsIn = append(s.recordsIn, in)
	return &kinesis.GetRecordsOutput{}, nil // NextShardIterator nil: end of a closed shard
}

func (s *scripted) PutRecords(_ context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	s.putIn = append(s.putIn, in)
	out := &kinesis.PutRecordsOutput{}
	for i := range in.Records {
		if code, ok := s.putFail[i]; ok {
			out.Records = append(out.Records, types.PutRecordsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("scripted")})
			continue
		}
		out.Records = append(out.Records, types.PutRecordsResultEntry{ShardId: aws.String("shardId-000000000000"), SequenceNumber: aws.String(fmt.Sprint(len(s.putIn)*1000 + i))})
	}
	return out, nil
}

func manyShards(n int) []types.Shard {
	var out []types.Shard
	for i := 0; i < n; i++ {
		out = append(out, shard(i))
	}
	return out
}

func TestListShardsPaginates(t *testing.T) {
	api := &scripted{shards: manyShards(23), pageSize: 5}
	shards, err := kinesisstream.New(api, kinesisstream.WithShardPageSize(5)).ListShards(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 23 || shards[22].ID != "shardId-000000000022" || shards[3].StartingHashKey != "30" || shards[3].StartingSequence != "1003" {
		t.Fatalf("got %d shards: %+v", len(shards), shards)
	}
	if len(api.listIn) != 5 {
		t.Fatalf("%d ListShards calls, want 5", len(api.listIn))
	}
	if aws.ToString(api.listIn[0].StreamName) != "s" || aws.ToInt32(api.listIn[0].MaxResults) != 5 {
		t.Fatalf("first request %+v: want StreamName and MaxResults", api.listIn[0])
	}
}

// TestListShardsServerIgnoringNextToken: a server that ignores NextToken
// (and keeps sending one) yields every shard once and the loop ends.
func TestListShardsServerIgnoringNextToken(t *testing.T) {
	api := &scripted{shards: manyShards(4), pageSize: 100, ignoreToken: true}
	shards, err := kinesisstream.New(api).ListShards(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 4 || len(api.listIn) != 2 {
		t.Fatalf("%d shards in %d calls, want 4 in 2", len(shards), len(api.listIn))
	}
}

func TestDescribeStreamFallbackPaginates(t *testing.T) {
	api := &scripted{shards: manyShards(7), pageSize: 3}
	s := kinesisstream.New(&unknownListShards{api}, kinesisstream.WithShardPageSize(3))
	shards, err := s.ListShards(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 7 || len(api.describeIn) != 3 || aws.ToString(api.describeIn[2].ExclusiveStartShardId) != "shardId-000000000005" {
		t.Fatalf("%d shards in %d DescribeStream calls (%+v)", len(shards), len(api.describeIn), api.describeIn)
	}
}

// unknownListShards answers ListShards as a server without it does.
type unknownListShards struct{ *scripted }

func (u *unknownListShards) ListShards(context.Context, *kinesis.ListShardsInput, ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "UnknownOperationException", Message: "no ListShards"}
}

func TestGetShardIteratorRequests(t *testing.T) {
	api := &scripted{}
	s := kinesisstream.New(api)
	ts := time.Unix(1700000000, 123e6)
	for _, pos := range []engine.Position{
		{Type: engine.IterTrimHorizon}, {Type: engine.IterLatest},
		{Type: engine.IterAtSequenceNumber, Sequence: "123"}, {Type: engine.IterAfterSequenceNumber, Sequence: "124"},
		{Type: engine.IterAtTimestamp, Timestamp: ts},
	} {
		if _, err := s.GetShardIterator(context.Background(), "st", "sh", pos); err != nil {
			t.Fatalf("%s: %v", pos.Type, err)
		}
		in := api.iterIn[len(api.iterIn)-1]
		if aws.ToString(in.StreamName) != "st" || aws.ToString(in.ShardId) != "sh" || string(in.ShardIteratorType) != string(pos.Type) ||
			aws.ToString(in.StartingSequenceNumber) != pos.Sequence || (pos.Type == engine.IterAtTimestamp) != (in.Timestamp != nil) {
			t.Fatalf("%s: request %+v", pos.Type, in)
		}
		if in.Timestamp != nil && !in.Timestamp.Equal(ts) {
			t.Fatalf("timestamp %v, want %v", in.Timestamp, ts)
		}
	}
	for _, bad := range []engine.Position{
		{Type: "SOMEWHERE"}, {Type: engine.IterAtSequenceNumber}, {Type: engine.IterAfterSequenceNumber, Sequence: "x1"}, {Type: engine.IterAtTimestamp},
	} {
		if _, err := s.GetShardIterator(context.Background(), "st", "sh", bad); err == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
	if len(api.iterIn) != 5 {
		t.Fatalf("invalid positions reached the service")
	}
}

func TestGetRecordsLimitAndEnd(t *testing.T) {
	api := &scripted{}
	s := kinesisstream.New(api)
	for limit, want := range map[int]int32{0: 10000, -3: 10000, 5: 5, 10000: 10000, 20000: 10000} {
		page, err := s.GetRecords(context.Background(), "it", limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := aws.ToInt32(api.recordsIn[len(api.recordsIn)-1].Limit); got != want {
			t.Fatalf("limit %d sent as %d, want %d", limit, got, want)
		}
		if page.NextIterator != "" {
			t.Fatalf("nil NextShardIterator mapped to %q", page.NextIterator)
		}
	}
}

func TestPutRecordsBatches(t *testing.T) {
	api := &scripted{putFail: map[int]string{3: "ProvisionedThroughputExceededException", 4: "InternalFailure"}}
	s := kinesisstream.New(api)
	entries := make([]kinesisstream.PutEntry, 1203)
	for i := range entries {
		entries[i] = kinesisstream.PutEntry{PartitionKey: fmt.Sprint(i), Data: []byte{byte(i)}}
	}
	entries[7].ExplicitHashKey = "42"
	res, err := s.PutRecords(context.Background(), "st", entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(api.putIn) != 3 || len(api.putIn[0].Records) != 500 || len(api.putIn[2].Records) != 203 {
		t.Fatalf("%d calls, want batches of 500, 500, 203", len(api.putIn))
	}
	if aws.ToString(api.putIn[0].Records[7].ExplicitHashKey) != "42" || api.putIn[0].Records[8].ExplicitHashKey != nil {
		t.Fatal("ExplicitHashKey not passed as given")
	}
	if len(res) != len(entries) {
		t.Fatalf("%d results for %d entries", len(res), len(entries))
	}
	for _, i := range []int{3, 503, 1003} {
		if !errors.Is(res[i].Err, engine.ErrThrottled) {
			t.Fatalf("result %d: %v, want ErrThrottled", i, res[i].Err)
		}
	}
	if res[4].Err == nil || errors.Is(res[4].Err, engine.ErrThrottled) {
		t.Fatalf("result 4: %v, want a plain error", res[4].Err)
	}
	if res[5].Err != nil || res[5].Sequence != "1005" || res[505].Sequence != "2005" {
		t.Fatalf("results 5, 505: %+v %+v", res[5], res[505])
	}
}

func TestMidHashKey(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"0", "1", "1"}, {"0", "9", "5"}, {"0", "340282366920938463463374607431768211455", "170141183460469231731687303715884105728"},
	} {
		if got, err := kinesisstream.MidHashKey(tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("MidHashKey(%s, %s) = %s, %v; want %s", tc.a, tc.b, got, err, tc.want)
		}
	}
	if _, err := kinesisstream.MidHashKey("5", "5"); err == nil {
		t.Error("MidHashKey of a one-key range succeeded")
	}
}
