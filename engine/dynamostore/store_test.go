package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
)

// countingAPI counts the Scan calls that go through it.
type countingAPI struct {
	dynamostore.API
	scans atomic.Int64
}

func (c *countingAPI) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.scans.Add(1)
	return c.API.Scan(ctx, in, opts...)
}

func TestListLeasesFollowsPages(t *testing.T) {
	c, _ := client(t)
	table := newTable(t, c)
	api := &countingAPI{API: c}
	s := dynamostore.New(api, table, dynamostore.WithScanPageSize(7))
	for i := 0; i < 60; i++ {
		l := engine.Lease{Key: fmt.Sprintf("shardId-%012d", i), Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
		if err := s.CreateLease(ctx(t), l); err != nil {
			t.Fatal(err)
		}
	}
	for _, consistent := range []bool{true, false} {
		api.scans.Store(0)
		got, err := s.ListLeases(ctx(t), consistent)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Leases) != 60 {
			t.Fatalf("ListLeases(consistent=%v) returned %d rows, want 60", consistent, len(got.Leases))
		}
		if n := api.scans.Load(); n < 9 {
			t.Fatalf("ListLeases made %d Scan calls, want at least 9 pages of 7", n)
		}
	}
}

// TestMalformedRowsOnServer writes each malformed row through dynalite and
// checks that a scan reports it with a reason naming the attribute,
// beside the good rows, and that GetLease fails on it.
func TestMalformedRowsOnServer(t *testing.T) {
	c, _ := client(t)
	table := newTable(t, c)
	s := dynamostore.New(c, table)
	good := engine.Lease{Key: "good", Owner: "w", Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.Latest)}
	if err := s.CreateLease(ctx(t), good); err != nil {
		t.Fatal(err)
	}
	for i, tc := range malformedItems {
		item := dynamostore.Item{}
		for k, v := range tc.item {
			item[k] = v
		}
		item["leaseKey"] = &types.AttributeValueMemberS{Value: fmt.Sprintf("bad-%02d-%s", i, tc.name)}
		putRaw(t, c, table, item)
	}
	got, err := s.ListLeases(ctx(t), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Leases) != 1 || !got.Leases[0].Equal(good) {
		t.Fatalf("good rows = %+v, want only %+v", got.Leases, good)
	}
	if len(got.Malformed) != len(malformedItems) {
		t.Fatalf("%d malformed rows reported, want %d: %+v", len(got.Malformed), len(malformedItems), got.Malformed)
	}
	for i, tc := range malformedItems {
		m := got.Malformed[i] // sorted by key, and the keys sort in table order
		if want := fmt.Sprintf("bad-%02d-%s", i, tc.name); m.Key != want || !strings.Contains(m.Reason, tc.attr) {
			t.Errorf("malformed row %+v: want key %s and a reason naming %s", m, want, tc.attr)
		}
		if _, err := s.GetLease(ctx(t), m.Key); err == nil || !strings.Contains(err.Error(), tc.attr) {
			t.Errorf("GetLease(%s) = %v, want an error naming %s", m.Key, err, tc.attr)
		}
	}
}

// TestEmptyOwnerAttributeIsUnowned: a row whose leaseOwner is "" (as some
// writers leave it) is unowned for reads and for conditions.
func TestEmptyOwnerAttributeIsUnowned(t *testing.T) {
	c, _ := client(t)
	table := newTable(t, c)
	s := dynamostore.New(c, table)
	putRaw(t, c, table, dynamostore.Item{
		"leaseKey":     &types.AttributeValueMemberS{Value: "k"},
		"leaseOwner":   &types.AttributeValueMemberS{Value: ""},
		"leaseCounter": &types.AttributeValueMemberN{Value: "4"},
		"checkpoint":   &types.AttributeValueMemberS{Value: "TRIM_HORIZON"},
	})
	l, err := s.GetLease(ctx(t), "k")
	if err != nil || l.Owner != "" || l.Counter != 4 {
		t.Fatalf("GetLease = %+v, %v; want unowned counter 4", l, err)
	}
	n := l
	n.Owner, n.Counter = "w1", 5
	if err := s.UpdateLease(ctx(t), engine.Expect{Owner: "w1", Counter: 4}, n); !errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("UpdateLease expecting owner w1 = %v, want ErrConditionFailed", err)
	}
	if err := s.UpdateLease(ctx(t), engine.Expect{Owner: "", Counter: 4}, n); err != nil {
		t.Fatalf("UpdateLease expecting unowned: %v", err)
	}
}

// TestConcurrentCompareAndSwap: writers racing on one row through
// read-modify-conditional-write never lose an increment.
func TestConcurrentCompareAndSwap(t *testing.T) {
	c, _ := client(t)
	s := dynamostore.New(c, newTable(t, c))
	if err := s.CreateLease(ctx(t), engine.Lease{Key: "k", Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}); err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 8, 15
	var wins atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < perWriter; {
				l, err := s.GetLease(ctx(t), "k")
				if err != nil {
					t.Error(err)
					return
				}
				n := l.Clone()
				n.Counter++
				n.Owner = fmt.Sprintf("w%d", w)
				switch err := s.UpdateLease(ctx(t), engine.ExpectOf(l), n); {
				case err == nil:
					wins.Add(1)
					done++
				case !errors.Is(err, engine.ErrConditionFailed):
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	l, err := s.GetLease(ctx(t), "k")
	if err != nil {
		t.Fatal(err)
	}
	if l.Counter != wins.Load() || l.Counter != writers*perWriter {
		t.Fatalf("counter %d after %d successful writes, want %d", l.Counter, wins.Load(), writers*perWriter)
	}
}

// TestHonoursContext: a cancelled context stops every call.
func TestHonoursContext(t *testing.T) {
	c, _ := client(t)
	s := dynamostore.New(c, newTable(t, c))
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := engine.Lease{Key: "k", Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	calls := map[string]error{
		"CreateLease": s.CreateLease(cctx, l),
		"UpdateLease": s.UpdateLease(cctx, engine.Expect{}, l),
		"DeleteLease": s.DeleteLease(cctx, "k", engine.Expect{}),
		"CheckTable":  s.CheckTable(cctx),
	}
	_, calls["GetLease"] = s.GetLease(cctx, "k")
	_, calls["ListLeases"] = s.ListLeases(cctx, true)
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context = %v, want context.Canceled", name, err)
		}
	}
}

// TestRefusesInvalidLease: an invalid row is never written.
func TestRefusesInvalidLease(t *testing.T) {
	c, _ := client(t)
	table := newTable(t, c)
	s := dynamostore.New(c, table)
	bad := engine.Lease{Key: "k"} // no checkpoint
	if err := s.CreateLease(ctx(t), bad); err == nil || errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("CreateLease of an invalid lease = %v, want a plain error", err)
	}
	if err := s.UpdateLease(ctx(t), engine.Expect{}, bad); err == nil || errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("UpdateLease with an invalid lease = %v, want a plain error", err)
	}
	out, err := c.Scan(ctx(t), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil || len(out.Items) != 0 {
		t.Fatalf("table holds %d rows (err %v), want none", len(out.Items), err)
	}
}

// TestUpdateKeepsUnknownAttributes: a row adopted from KCL carries
// attributes shardlease does not know (KCL 2.x's pending checkpoint, a
// user's own). Updates change the known attributes, remove the known ones
// the lease leaves empty, and keep the rest, so the table can be handed
// back to KCL.
func TestUpdateKeepsUnknownAttributes(t *testing.T) {
	c, _ := client(t)
	table := newTable(t, c)
	s := dynamostore.New(c, table)
	putRaw(t, c, table, dynamostore.Item{
		"leaseKey":                    &types.AttributeValueMemberS{Value: "shardId-000000000002"},
		"leaseOwner":                  &types.AttributeValueMemberS{Value: "kcl-worker"},
		"leaseCounter":                &types.AttributeValueMemberN{Value: "7"},
		"checkpoint":                  &types.AttributeValueMemberS{Value: "49590338271490256608559692538361571095921575989136588898"},
		"checkpointSubSequenceNumber": &types.AttributeValueMemberN{Value: "0"},
		"parentShardId":               &types.AttributeValueMemberSS{Value: []string{"shardId-000000000000"}},
		"pendingCheckpoint":           &types.AttributeValueMemberS{Value: "49590338271490256608559692538361571095921575989136588999"},
		"throughputKBps":              &types.AttributeValueMemberN{Value: "12.5"},
	})
	l, err := s.GetLease(ctx(t), "shardId-000000000002")
	if err != nil {
		t.Fatal(err)
	}
	n := l
	n.Owner, n.Counter, n.Parents = "w1", 8, nil // a take that also drops the (finished) parent
	if err := s.UpdateLease(ctx(t), engine.ExpectOf(l), n); err != nil {
		t.Fatalf("UpdateLease: %v", err)
	}
	res, err := c.GetItem(ctx(t), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: dynamostore.Item{"leaseKey": &types.AttributeValueMemberS{Value: "shardId-000000000002"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pendingCheckpoint", "throughputKBps"} {
		if _, ok := res.Item[name]; !ok {
			t.Errorf("attribute %s was dropped by the update: row %v", name, res.Item)
		}
	}
	if _, ok := res.Item["parentShardId"]; ok {
		t.Errorf("parentShardId was kept although the lease no longer has parents")
	}
	got, _, err := dynamostore.DecodeLease(res.Item)
	if err != nil || !got.Equal(n) {
		t.Fatalf("row after the update reads %+v, %v; want %+v", got, err, n)
	}
	// The condition still guards the update: the old expectation fails now.
	if err := s.UpdateLease(ctx(t), engine.ExpectOf(l), n); !errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("UpdateLease on a stale expectation = %v, want ErrConditionFailed", err)
	}
	// And a missing row is not created.
	m := n
	m.Key = "shardId-000000000009"
	if err := s.UpdateLease(ctx(t), engine.Expect{Counter: 0}, m); !errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("UpdateLease of a missing row = %v, want ErrConditionFailed", err)
	}
	if _, err := s.GetLease(ctx(t), m.Key); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("UpdateLease created a missing row: GetLease = %v", err)
	}
}
