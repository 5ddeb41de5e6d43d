package engine

import "testing"

// Shard sync lists the shards only after its consistent scan has
// returned: a listing older than the scan could show a finished, deleted
// parent as an open shard without its children, and the parent would be
// re-created (found by the rapid property suite: a worker paused between
// its listing and its scan re-created two merged parents).
func TestSyncListsShardsAfterItsScan(t *testing.T) {
	u := newUnit(t, Config{})
	u.hold = func(c Call) bool { return c.Op == OpListLeases || c.Op == OpListShards }
	u.tick()
	scan := u.mustPending(OpListLeases, "")
	if !scan.Consistent {
		t.Fatalf("the sync scan %v is not consistent", scan)
	}
	if c, ok := u.pending(OpListShards, ""); ok {
		t.Fatalf("%v sent before the sync scan returned", c)
	}
	u.reply(scan, u.apply(scan))
	u.mustPending(OpListShards, "")
}

// The sync decides from its own consistent scan, not from what later,
// eventually consistent take scans showed: a take scan whose view misses
// both a deleted parent and its new child must not make the sync re-create
// the parent.
func TestSyncDecidesFromItsOwnScan(t *testing.T) {
	u := newUnit(t, Config{})
	u.stream.add("shardId-000000000000")
	u.stream.close("shardId-000000000000")
	u.stream.add("shardId-000000000001", "shardId-000000000000")
	// The parent is finished and gone; its child has a started row.
	u.put(Lease{Key: "shardId-000000000001", Owner: "other", Counter: 3, Checkpoint: SequenceCheckpoint("7"), Parents: []string{"shardId-000000000000"}})
	u.hold = func(c Call) bool { return c.Op == OpListShards }
	u.tick() // the sync scan returns at once; its listing is held
	list := u.mustPending(OpListShards, "")
	// Meanwhile an eventually consistent take scan sees an empty table.
	u.step(Input{Kind: InputResult, Result: Result{ID: u.w.call(Call{Op: OpListLeases}, pendingCall{purpose: forScan})}})
	u.reply(list, u.apply(list))
	for _, s := range u.sent {
		if s.c.Op == OpCreateLease {
			t.Errorf("sync created %s, a finished parent whose child has a row", s.c.Lease.Key)
		}
	}
}
