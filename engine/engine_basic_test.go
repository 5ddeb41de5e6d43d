package engine

import (
	"testing"
	"time"
)

func TestSingleWorkerConsumesEverything(t *testing.T) {
	c := newCluster(t, 3, Config{})
	for i := 0; i < 3; i++ {
		c.stream.put(shardKey(i), 5)
	}
	a := c.start("A")
	c.runUntil(30*time.Second, "all records delivered", func() bool {
		n := 0
		for _, v := range a.got {
			n += len(v)
		}
		return n == 15
	})
	c.run(2 * time.Second)
	for i := 0; i < 3; i++ {
		row := c.row(shardKey(i))
		if row.Owner != "A" {
			t.Errorf("%s owner %q, want A", row.Key, row.Owner)
		}
		want := c.stream.recs[shardKey(i)][4].Sequence
		if row.Checkpoint.Sequence != want {
			t.Errorf("%s checkpoint %s, want %s", row.Key, row.Checkpoint, want)
		}
	}
}
