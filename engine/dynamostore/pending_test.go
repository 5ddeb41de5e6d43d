package dynamostore_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/internal/localaws"
)

// pendingKeys polls ListPending until it shows want (the index is
// eventually consistent) or a few seconds pass.
func pendingKeys(t *testing.T, s *dynamostore.Store, who string, want []string) []string {
	t.Helper()
	var got []string
	for i := 0; i < 50; i++ {
		ls, err := s.ListPending(ctx(t), who)
		if err != nil {
			t.Fatalf("ListPending(%s): %v", who, err)
		}
		got = got[:0]
		for _, l := range ls {
			got = append(got, l.Key)
			if l.Pending != who {
				t.Fatalf("ListPending(%s) returned %v", who, l)
			}
		}
		if slices.Equal(got, want) {
			return got
		}
		time.Sleep(50 * time.Millisecond) // an index is eventually consistent
	}
	return got
}

// A table made by CreateTable has the pending index: rows with a pending
// attribute are found by who they wait for, sorted; rows without one are
// not in the index; a row's pending round-trips with its other attributes.
func TestPendingIndex(t *testing.T) {
	c, _ := client(t)
	s := dynamostore.New(c, newTable(t, c))
	put := func(key, pending string, counter int64) {
		l := engine.Lease{Key: key, Counter: counter, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon), Pending: pending, HandoffTo: "x", ThroughputKBps: 12.5}
		if counter == 0 {
			if err := s.CreateLease(ctx(t), l); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := s.UpdateLease(ctx(t), engine.Expect{Counter: counter - 1}, l); err != nil {
			t.Fatal(err)
		}
	}
	put("b", "w1", 0)
	put("a", "w1", 0)
	put("c", "w2", 0)
	put("d", "", 0)
	if got := pendingKeys(t, s, "w1", []string{"a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("w1: %v", got)
	}
	put("a", "", 1) // assignment taken: the attribute is removed
	if got := pendingKeys(t, s, "w1", []string{"b"}); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("w1 after the update: %v", got)
	}
	if l, err := s.GetLease(ctx(t), "b"); err != nil || l.Pending != "w1" || l.HandoffTo != "x" || l.ThroughputKBps != 12.5 {
		t.Fatalf("GetLease(b) = %v, %v", l, err)
	}
}

// A table without the index (made before it existed) says so plainly with
// engine.ErrNoIndex; EnsureIndex adds it.
func TestEnsureIndex(t *testing.T) {
	c, _ := client(t)
	name := localaws.UniqueName(t, "noindex")
	if _, err := c.CreateTable(ctx(t), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(dynamostore.AttrKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(dynamostore.AttrKey), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	s := dynamostore.New(c, name)
	if _, err := s.ListPending(ctx(t), "w1"); !errors.Is(err, engine.ErrNoIndex) {
		t.Fatalf("ListPending on a table without the index = %v, want ErrNoIndex", err)
	}
	// dynalite accepts UpdateTable's index creation but never builds the
	// index (measured: it implements throughput updates only); DynamoDB
	// builds it. EnsureIndex must say so rather than wait for ever.
	err := dynamostore.EnsureIndex(ctx(t), c, name)
	if err == nil {
		if _, err := s.ListPending(ctx(t), "w1"); err != nil {
			t.Fatalf("ListPending after EnsureIndex: %v", err)
		}
		return
	}
	if !strings.Contains(err.Error(), "does not build it") {
		t.Fatalf("EnsureIndex = %v, want an index or a plain error", err)
	}
	// A table made with the index has it already.
	made := newTable(t, c)
	if err := dynamostore.EnsureIndex(ctx(t), c, made); err != nil {
		t.Fatalf("EnsureIndex on a table made with the index: %v", err)
	}
}
