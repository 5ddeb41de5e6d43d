package sim

import (
	"testing"

	"github.com/shardlease/shardlease/sim/check"
)

// TestToleratedOutside: a run outside the assumptions tolerates the
// violations those assumptions exist to prevent (S1, the latency and
// balance bounds, S3's late start, G1 between two processes of one owner
// id) and no other, whoever is involved.
func TestToleratedOutside(t *testing.T) {
	cases := []struct {
		v    check.Violation
		want bool
	}{
		{check.Violation{Invariant: check.S1, Workers: []string{"w1#1", "w3#4"}}, true},
		{check.Violation{Invariant: check.T1}, true},
		{check.Violation{Invariant: check.T2}, true},
		{check.Violation{Invariant: check.T3}, true},
		{check.Violation{Invariant: check.B1}, true},
		{check.Violation{Invariant: check.S3, Detail: check.S3StartPrefix + " at 5 below the checkpoint 9"}, true},
		{check.Violation{Invariant: check.S3, Detail: "checkpoint moved back from 9 to 5"}, false},
		// a duplicate of w1 (w1#5) re-delivers what w1#1 checkpointed
		{check.Violation{Invariant: check.G1, Workers: []string{"w1#1", "w1#5"}}, true},
		{check.Violation{Invariant: check.G1, Workers: []string{"w1-r2#1", "w1-r2#7"}}, true},
		// two owner ids: a re-delivery no assumption excuses
		{check.Violation{Invariant: check.G1, Workers: []string{"w1#1", "w2#5"}}, false},
		{check.Violation{Invariant: check.G1, Workers: []string{"w1#1"}}, false},
		{check.Violation{Invariant: check.S4}, false},
		{check.Violation{Invariant: check.S2}, false},
		{check.Violation{Invariant: check.L1}, false},
		{check.Violation{Invariant: Lin}, false},
	}
	for _, tc := range cases {
		if got := toleratedOutside(tc.v); got != tc.want {
			t.Errorf("%v: tolerated %v, want %v", tc.v, got, tc.want)
		}
	}
}
