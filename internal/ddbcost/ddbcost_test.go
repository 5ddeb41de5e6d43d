package ddbcost

import (
	"fmt"
	"math"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

func TestNumberSizes(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want int
	}{
		{0, 1}, {1, 2}, {9, 2}, {10, 2}, {12, 2}, {123, 3}, {1200, 2}, {1234, 3}, {-1234, 3}, {math.MaxInt64, 11},
	} {
		if got := intBytes(c.v); got != c.want {
			t.Errorf("intBytes(%d) = %d, want %d", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		want int
	}{
		{0.5, 2}, {12, 2}, {1024.25, 4}, {1e21, 2}, {3e-7, 2},
	} {
		if got := floatBytes(c.v); got != c.want {
			t.Errorf("floatBytes(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}

func TestItemSize(t *testing.T) {
	l := engine.Lease{Key: "shardId-000000000001", Owner: "w1", Counter: 12,
		Checkpoint: engine.Checkpoint{Sequence: "TRIM_HORIZON"}, Parents: []string{"a", "a", "bc"}}
	want := len("leaseKey") + 20 + len("leaseOwner") + 2 + len("leaseCounter") + 2 + len("checkpoint") + 12 +
		len("checkpointSubSequenceNumber") + 1 + len("ownerSwitchesSinceCheckpoint") + 1 + len("parentShardId") + 3
	if got := ItemSize(&l); got != want {
		t.Fatalf("ItemSize = %d, want %d", got, want)
	}
	if IndexEntrySize(&l) != 0 {
		t.Fatal("a row with no pending attribute has an index entry")
	}
	l.Pending = "w2"
	if got, want := IndexEntrySize(&l), len("leaseKey")+20+len("pending")+2; got != want {
		t.Fatalf("IndexEntrySize = %d, want %d", got, want)
	}
}

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		before, after int
		want          int64
	}{
		{0, 0, 1}, {0, 200, 1}, {1024, 0, 1}, {1025, 200, 2}, {300, 3000, 3},
	} {
		if got := WriteUnits(c.before, c.after); got != c.want {
			t.Errorf("WriteUnits(%d, %d) = %d, want %d", c.before, c.after, got, c.want)
		}
	}
	for _, c := range []struct {
		n          int
		consistent bool
		want       int64
	}{
		{0, false, 1}, {0, true, 2}, {4096, true, 2}, {4097, true, 4}, {10000, false, 3},
	} {
		if got := ReadUnits(c.n, c.consistent); got != c.want {
			t.Errorf("ReadUnits(%d, %v) = %d halves, want %d", c.n, c.consistent, got, c.want)
		}
	}
}

func TestCost(t *testing.T) {
	// a million write units and two million halves (a million read units)
	if got := DefaultPrices.Cost(1e6, 2e6); math.Abs(got-(0.625+0.125)) > 1e-12 {
		t.Fatalf("Cost = %v, want 0.75", got)
	}
}

// The renewals of one lease, every 3 s for a month, at us-east-1's price:
// the figure issue 19 starts from.
func ExamplePrices_Cost() {
	renewals := int64(HoursPerMonth * 3600 / 3)
	fmt.Printf("%d writes, USD %.2f\n", renewals, DefaultPrices.Cost(renewals*WriteUnits(200, 200), 0))
	// Output: 876000 writes, USD 0.55
}
