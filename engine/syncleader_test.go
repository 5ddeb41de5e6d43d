package engine

import (
	"testing"
	"time"
)

// TestShardSyncLeader: the periodic shard sync runs every ShardSyncInterval
// on one worker only, the one with the smallest owner id among the
// owners in its listing; the others sync BackupSyncFactor times less
// often. When the leader dies, the next smallest owner takes over once the
// dead worker's leases have been taken.
func TestShardSyncLeader(t *testing.T) {
	c := newCluster(t, 6, Config{})
	syncs := map[string]int{} // ListShards calls: one per sync round
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if call.Op == OpListShards {
			syncs[tw.id]++
		}
		return Result{}, false
	}
	a := c.start("A")
	c.start("B")
	c.start("C")
	c.run(60 * time.Second)
	for _, id := range []string{"A", "B", "C"} {
		if n := len(c.worker(id).w.Held()); n == 0 {
			t.Fatalf("%s holds no lease after a minute:\n%s", id, c.table())
		}
	}
	interval := c.worker("A").w.Config().ShardSyncInterval
	window := 20 * interval
	clear(syncs)
	c.run(window)
	t.Logf("sync rounds in %v: %v", window, syncs)
	leader, backup := int(window/interval), int(window/(BackupSyncFactor*interval))
	if syncs["A"] < leader*3/4 {
		t.Errorf("the leader A synced %d times in %v, want about %d", syncs["A"], window, leader)
	}
	for _, id := range []string{"B", "C"} {
		if syncs[id] > backup+2 {
			t.Errorf("%s (not the leader) synced %d times in %v, want about %d", id, syncs[id], window, backup)
		}
	}

	a.down = true
	c.runUntil(2*time.Minute, "A's leases taken", func() bool {
		for _, r := range listAll(c) {
			if r.Owner == "A" {
				return false
			}
		}
		return true
	})
	c.run(2 * interval)
	clear(syncs)
	c.run(window)
	if syncs["B"] < leader*3/4 {
		t.Errorf("after A died, B synced %d times in %v, want about %d (the new leader)", syncs["B"], window, leader)
	}
	if syncs["C"] > backup+2 {
		t.Errorf("after A died, C synced %d times in %v, want about %d", syncs["C"], window, backup)
	}
}

func listAll(c *cluster) []Lease {
	l, err := c.store.ListLeases(c.t.Context(), true)
	if err != nil {
		c.t.Fatal(err)
	}
	return l.Leases
}
