package fakes

import (
	"testing"
	"time"
)

func TestManualClock(t *testing.T) {
	start := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	c := NewManualClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now %v", c.Now())
	}
	if got := c.Advance(90 * time.Second); !got.Equal(start.Add(90*time.Second)) || !c.Now().Equal(got) {
		t.Fatalf("Advance %v, Now %v", got, c.Now())
	}
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Set: Now %v", c.Now())
	}
	var zero ManualClock
	if !zero.Now().IsZero() {
		t.Fatal("zero ManualClock is not at the zero time")
	}
	// Fakes without a clock get their own ManualClock.
	if tb := NewLeaseTable(LeaseTableOptions{}); !tb.Clock().Now().Equal(defaultStart) {
		t.Fatalf("default table clock %v", tb.Clock().Now())
	}
	k := NewKinesis(KinesisOptions{})
	k.Clock().(*ManualClock).Advance(time.Hour)
	if !k.Clock().Now().Equal(defaultStart.Add(time.Hour)) {
		t.Fatalf("default stream clock %v", k.Clock().Now())
	}
}
