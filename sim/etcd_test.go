package sim

import "testing"

// TestEtcdHelloDeleteFailureRejoins: in an etcd world the assigner learns
// of hellos from its watch, not from polls of the index. When the delete
// of a hello it has read does not apply (seed 188: a timeout; seed 125:
// throttled), the row still waits for the assigner but no later write
// reports it: the assigner must read it again (as a poll would), or the
// worker stays out of the member list for good and L1 finds it holding
// nothing to the end.
func TestEtcdHelloDeleteFailureRejoins(t *testing.T) {
	for _, seed := range []uint64{125, 188} {
		r, err := Run(Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if !r.World.Etcd.On {
			t.Fatalf("seed %d is no longer an etcd world: pick another", seed)
		}
		for _, v := range r.Violations {
			t.Errorf("seed %d: %v", seed, v)
		}
	}
}
