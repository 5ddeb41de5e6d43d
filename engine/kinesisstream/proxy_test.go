package kinesisstream_test

// These tests put localaws.FaultProxy in front of kinesalite to produce
// what kinesalite cannot: throttling, expired iterators (it expires them
// only after 300 s), ChildShards in GetRecords, and a server without
// ListShards.

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/internal/localaws"
)

// proxied returns a stream created directly on kinesalite, a Stream whose
// calls go through a FaultProxy without SDK retries, and the proxy.
func proxied(t *testing.T, shards int) (string, *kinesisstream.Stream, *localaws.FaultProxy) {
	t.Helper()
	direct, tg := client(t)
	name := newStream(t, direct, shards)
	p := localaws.NewFaultProxy(t, tg.Endpoint)
	return name, kinesisstream.New(kinesis.NewFromConfig(noRetries(tg.WithEndpoint(p.URL).Config))), p
}

func TestErrorMapping(t *testing.T) {
	stream, s, p := proxied(t, 1)
	it, err := s.GetShardIterator(ctx(t), stream, "shardId-000000000000", engine.Position{Type: engine.IterTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"ListShards": func() error { _, err := s.ListShards(ctx(t), stream); return err },
		"GetShardIterator": func() error {
			_, err := s.GetShardIterator(ctx(t), stream, "shardId-000000000000", engine.Position{Type: engine.IterLatest})
			return err
		},
		"GetRecords":            func() error { _, err := s.GetRecords(ctx(t), it, 10); return err },
		"DescribeStreamSummary": func() error { _, err := s.DescribeStream(ctx(t), stream); return err },
		"PutRecords": func() error {
			_, err := s.PutRecords(ctx(t), stream, []kinesisstream.PutEntry{{PartitionKey: "k", Data: []byte("x")}})
			return err
		},
	}
	for _, tc := range []struct {
		op, errType string
		want        error
	}{
		{"GetRecords", "ProvisionedThroughputExceededException", engine.ErrThrottled},
		{"GetRecords", "KMSThrottlingException", engine.ErrThrottled},
		{"GetRecords", "ExpiredIteratorException", engine.ErrExpiredIterator},
		{"GetRecords", "ResourceNotFoundException", engine.ErrNotFound},
		{"GetShardIterator", "ProvisionedThroughputExceededException", engine.ErrThrottled},
		{"GetShardIterator", "ResourceNotFoundException", engine.ErrNotFound},
		{"ListShards", "LimitExceededException", engine.ErrThrottled},
		{"ListShards", "ResourceNotFoundException", engine.ErrNotFound},
		{"PutRecords", "ProvisionedThroughputExceededException", engine.ErrThrottled},
		{"DescribeStreamSummary", "ResourceNotFoundException", engine.ErrNotFound},
		{"DescribeStreamSummary", "ResourceNotFoundException", engine.ErrStreamMissing},
		{"DescribeStreamSummary", "UnrecognizedClientException", engine.ErrAccessDenied},
		{"GetRecords", "AccessDeniedException", engine.ErrAccessDenied},
		{"ListShards", "ExpiredTokenException", engine.ErrAccessDenied},
	} {
		t.Run(tc.op+"/"+tc.errType, func(t *testing.T) {
			p.Clear()
			p.Reject(tc.op, -1, http.StatusBadRequest, "com.amazonaws.kinesis.v20131202#"+tc.errType)
			err := calls[tc.op]()
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s answered %s = %v, want %v", tc.op, tc.errType, err, tc.want)
			}
			for _, other := range []error{engine.ErrThrottled, engine.ErrExpiredIterator, engine.ErrNotFound, engine.ErrConditionFailed, engine.ErrAccessDenied} {
				if other != tc.want && errors.Is(err, other) && !(tc.want == engine.ErrStreamMissing && other == engine.ErrNotFound) {
					t.Fatalf("error also matches %v: %v", other, err)
				}
			}
			if tc.want == engine.ErrNotFound && tc.op != "GetRecords" && !strings.Contains(err.Error(), stream) {
				t.Fatalf("not-found error %q does not name the stream", err)
			}
		})
	}
	p.Clear()
	p.Reject("GetRecords", -1, http.StatusBadRequest, "InvalidArgumentException")
	if err := calls["GetRecords"](); err == nil || errors.Is(err, engine.ErrThrottled) || errors.Is(err, engine.ErrExpiredIterator) {
		t.Fatalf("InvalidArgumentException = %v, want a plain error", err)
	}
}

// TestChildShardsMapping: kinesalite never returns ChildShards, so the
// proxy answers GetRecords with the last page of a closed shard as Kinesis
// sends it: no NextShardIterator, and the children (one of a split, one
// of a merge with two parents).
func TestChildShardsMapping(t *testing.T) {
	stream, s, p := proxied(t, 1)
	it, err := s.GetShardIterator(ctx(t), stream, "shardId-000000000000", engine.Position{Type: engine.IterTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	p.Respond("GetRecords", 1, http.StatusOK, `{
		"Records": [{"SequenceNumber": "49590338271490256608559692538361571095921575989136588802",
			"PartitionKey": "pk", "Data": "aGVsbG8=", "ApproximateArrivalTimestamp": 1700000000.123}],
		"MillisBehindLatest": 42,
		"ChildShards": [
			{"ShardId": "shardId-000000000001", "ParentShards": ["shardId-000000000000"],
			 "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": "99"}},
			{"ShardId": "shardId-000000000003", "ParentShards": ["shardId-000000000000", "shardId-000000000002"],
			 "HashKeyRange": {"StartingHashKey": "100", "EndingHashKey": "340282366920938463463374607431768211455"}}
		]}`)
	page, err := s.GetRecords(ctx(t), it, 10)
	if err != nil {
		t.Fatal(err)
	}
	if page.NextIterator != "" || page.MillisBehind != 42 {
		t.Fatalf("page next iterator %q, millis behind %d; want \"\" and 42", page.NextIterator, page.MillisBehind)
	}
	if len(page.Records) != 1 {
		t.Fatalf("%d records, want 1", len(page.Records))
	}
	r := page.Records[0]
	if r.Sequence != "49590338271490256608559692538361571095921575989136588802" || r.PartitionKey != "pk" ||
		string(r.Data) != "hello" || r.Arrival.UnixMilli() != 1700000000123 {
		t.Fatalf("record %+v (arrival %d ms)", r, r.Arrival.UnixMilli())
	}
	want := []engine.Shard{
		{ID: "shardId-000000000001", Parent: "shardId-000000000000", StartingHashKey: "0", EndingHashKey: "99"},
		{ID: "shardId-000000000003", Parent: "shardId-000000000000", AdjacentParent: "shardId-000000000002",
			StartingHashKey: "100", EndingHashKey: "340282366920938463463374607431768211455"},
	}
	if fmt.Sprint(page.ChildShards) != fmt.Sprint(want) {
		t.Fatalf("ChildShards\n got  %+v\n want %+v", page.ChildShards, want)
	}
}

// TestListShardsFallsBackToDescribeStream: a server that does not know
// ListShards still lists every shard, through DescribeStream, and the
// Stream stops asking ListShards.
func TestListShardsFallsBackToDescribeStream(t *testing.T) {
	stream, s, p := proxied(t, 3)
	p.Reject("ListShards", -1, http.StatusBadRequest, "UnknownOperationException")
	for i := 0; i < 2; i++ {
		shards, err := s.ListShards(ctx(t), stream)
		if err != nil {
			t.Fatal(err)
		}
		if len(shards) != 3 || shards[0].StartingSequence == "" || shards[2].EndingHashKey != "340282366920938463463374607431768211455" {
			t.Fatalf("shards through DescribeStream: %+v", shards)
		}
	}
	if n := p.Count("ListShards"); n != 1 {
		t.Fatalf("ListShards asked %d times, want once", n)
	}
	if n := p.Count("DescribeStream"); n != 2 {
		t.Fatalf("DescribeStream asked %d times, want 2", n)
	}
}
