package dynamostore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/internal/ddbcost"
)

// itemBytes is an item's size by DynamoDB's rules, read from the encoded
// item itself.
func itemBytes(t *testing.T, item Item) int {
	n := 0
	for name, v := range item {
		n += len(name)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			digits := strings.TrimLeft(strings.Map(func(r rune) rune {
				if r >= '0' && r <= '9' {
					return r
				}
				return -1
			}, strings.SplitN(strings.ToLower(v.Value), "e", 2)[0]), "0")
			digits = strings.TrimRight(digits, "0")
			n += (len(digits)+1)/2 + 1
		case *types.AttributeValueMemberSS:
			seen := map[string]bool{}
			for _, s := range v.Value {
				if !seen[s] {
					seen[s] = true
					n += len(s)
				}
			}
		default:
			t.Fatalf("attribute %s: type %T not sized here", name, v)
		}
	}
	return n
}

// TestItemSizeMatchesEncodeLease: ddbcost.ItemSize, which the simulator's
// cost figures use, agrees with the size of the item EncodeLease writes
// for leases with every attribute set or left out, so that an attribute
// added to the row cannot be left out of the cost estimate.
func TestItemSizeMatchesEncodeLease(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(s string) string {
		if r.IntN(2) == 0 {
			return ""
		}
		return s
	}
	num := func() int64 {
		return []int64{0, 1, 7, 10, 100, 120, 12345, 1 << 40, 999999999999}[r.IntN(9)]
	}
	for i := 0; i < 2000; i++ {
		l := engine.Lease{
			Key: fmt.Sprintf("shardId-%012d", r.IntN(1000)), Owner: pick("worker-" + fmt.Sprint(r.IntN(100))), Counter: num(),
			Checkpoint:    engine.Checkpoint{Sequence: pick(fmt.Sprintf("4959%052d", r.Int64())), SubSequence: num()},
			OwnerSwitches: num(), StartingHashKey: pick("0"), EndingHashKey: pick("340282366920938463463374607431768211455"),
			HandoffFrom: pick("w-a"), Writer: pick("9f3a"), StreamID: pick("arn:aws:kinesis:us-east-1:1:stream/s@1"),
			Pending: pick("w-b"), HandoffTo: pick("w-c"), Session: pick("7k2m"),
		}
		if l.Checkpoint.Sequence == "" {
			l.Checkpoint.Sequence = engine.TrimHorizon
		}
		for j := r.IntN(3); j > 0; j-- {
			l.Parents = append(l.Parents, fmt.Sprintf("shardId-%012d", r.IntN(3)))
		}
		for j := r.IntN(3); j > 0; j-- {
			l.Children = append(l.Children, fmt.Sprintf("shardId-%012d", r.IntN(3)))
		}
		if r.IntN(2) == 0 {
			l.ThroughputKBps = []float64{0.5, 12, 1024.25, 3e-7, 1e21}[r.IntN(5)]
		}
		if got, want := ddbcost.ItemSize(&l), itemBytes(t, EncodeLease(l)); got != want {
			t.Fatalf("lease %+v: ddbcost.ItemSize %d, the encoded item's size %d", l, got, want)
		}
	}
}

// TestItemSizeCatchesAMissingAttribute: the comparison above fails when
// the two disagree (an attribute the estimate leaves out).
func TestItemSizeCatchesAMissingAttribute(t *testing.T) {
	l := engine.Lease{Key: "shardId-000000000001", Counter: 3, Checkpoint: engine.Checkpoint{Sequence: engine.TrimHorizon}, Owner: "w"}
	item := EncodeLease(l)
	item["somethingNew"] = &types.AttributeValueMemberS{Value: "x"}
	if ddbcost.ItemSize(&l) == itemBytes(t, item) {
		t.Fatal("an attribute the estimate does not know went unnoticed")
	}
}
