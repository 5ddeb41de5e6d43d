package engine

import (
	"testing"
	"time"
)

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

// A sync round whose scan is processed long after it was sent (the worker
// was paused with the reply held; found by the rapid suite: a worker paused
// 7 s and then 23 s right after its first sync scan) is abandoned: its scan
// shows no row at all, and meanwhile a shard may have been created, read to
// its end, its children started and its row deleted. A fresh round decides.
func TestSyncAbandonsAStaleRound(t *testing.T) {
	u := newUnit(t, Config{})
	p, c1, c2 := shardKey(0), shardKey(1), shardKey(2)
	u.stream.add(p)
	u.stream.split(p, c1, c2)
	u.hold = func(c Call) bool { return c.Op == OpListLeases && c.Consistent }
	u.tick()
	scan := u.mustPending(OpListLeases, "")
	stale := u.apply(scan) // the empty table, as it was
	// Meanwhile the parent was consumed and deleted, its children started.
	u.put(Lease{Key: c1, Owner: "other", Counter: 4, Checkpoint: SequenceCheckpoint("9"), Parents: []string{p}})
	u.put(Lease{Key: c2, Owner: "other", Counter: 4, Checkpoint: SequenceCheckpoint("9"), Parents: []string{p}})
	u.now = maxSyncAge(u.w.cfg) + time.Millisecond
	u.hold = nil
	u.reply(scan, stale)
	u.runTo(u.now + time.Second)
	if n := len(u.sentOf(OpCreateLease, p, 0, u.now)); n != 0 {
		t.Fatalf("the finished, deleted parent %s was re-created from a stale round", p)
	}
	if len(u.traceOf(TraceSyncAbandoned, "")) == 0 {
		t.Fatal("the stale round was not abandoned")
	}
	// A round just under the bound decides (a live application's new
	// table: the closed shard that existed at the first start gets a row).
	u = newUnit(t, Config{})
	u.stream.add(p)
	u.stream.split(p, c1, c2)
	u.hold = func(c Call) bool { return c.Op == OpListLeases && c.Consistent }
	u.tick()
	scan = u.mustPending(OpListLeases, "")
	u.now = maxSyncAge(u.w.cfg) - time.Second
	u.hold = nil
	u.reply(scan, u.apply(scan))
	if n := len(u.sentOf(OpCreateLease, p, 0, u.now)); n != 1 {
		t.Fatalf("a fresh round created the closed shard %d times, want 1", n)
	}
}

// A finished row is deleted only once this worker has seen it finished for
// deleteGrace, however early its children started.
func TestFinishedRowDeletedAfterTheGrace(t *testing.T) {
	u := newUnit(t, Config{})
	p, c1, c2 := shardKey(0), shardKey(1), shardKey(2)
	u.stream.add(p)
	u.stream.split(p, c1, c2)
	u.put(Lease{Key: p, Counter: 5, Checkpoint: SentinelCheckpoint(ShardEnd), Children: []string{c1, c2}})
	u.put(Lease{Key: c1, Owner: "other", Counter: 4, Checkpoint: SequenceCheckpoint("9"), Parents: []string{p}})
	u.put(Lease{Key: c2, Owner: "other", Counter: 4, Checkpoint: SequenceCheckpoint("9"), Parents: []string{p}})
	grace := deleteGrace(u.w.cfg)
	u.tick()
	u.runTo(grace - DefaultShardSyncInterval)
	if n := len(u.sentOf(OpDeleteLease, p, 0, u.now)); n != 0 {
		t.Fatalf("deleted the finished row after %v, before the grace of %v", u.now, grace)
	}
	u.runTo(grace + 2*DefaultShardSyncInterval)
	if n := len(u.sentOf(OpDeleteLease, p, 0, u.now)); n != 1 {
		t.Fatalf("%d deletes of the finished row by %v, want 1", n, u.now)
	}
}
