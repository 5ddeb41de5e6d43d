package engine

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestResumeDoesNotMistakeAPredecessorsWrite: a worker restarted under the
// same owner id resumes its lease from a stale view of the row. Meanwhile
// its crashed predecessor's last renewal lands, writing the very row the
// resume writes (same owner, counter and contents). The resume's condition
// fails; the re-read must not take the predecessor's row for its own write
// (its validity started at the predecessor's send, long before the resume's,
// and another worker may be about to take the lease as expired): only the
// row's Writer tells them apart (found by the simulator, swarm seed 135).
func TestResumeDoesNotMistakeAPredecessorsWrite(t *testing.T) {
	c := newCluster(t, 1, Config{})
	key := shardKey(0)
	old := c.start("A")
	c.runUntil(20*time.Second, "A holds the lease", func() bool { return old.w.Acting(key) })
	old.down = true // crashed; its last renewal is still in flight
	stale := c.row(key)
	predecessor := stale.Clone()
	predecessor.Counter++
	predecessor.Writer = old.w.writer

	landed := false
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id == "A" && tw != old && call.Op == OpUpdateLease && call.Key == key && !landed {
			landed = true
			if call.Expect != ExpectOf(stale) {
				t.Fatalf("the resume expects %v, want the stale version %v", call.Expect, ExpectOf(stale))
			}
			want := call.Lease.Clone()
			want.Writer = ""
			pre := predecessor.Clone()
			pre.Writer = ""
			if !want.Equal(pre) {
				t.Fatalf("the resume writes %v, the predecessor's renewal %v: they must differ only by Writer for this test", call.Lease, predecessor)
			}
			if err := c.store.UpdateLease(context.Background(), ExpectOf(stale), predecessor); err != nil {
				t.Fatal(err)
			}
		}
		return Result{}, false
	}
	restarted := c.start("A")
	c.runUntil(20*time.Second, "the restarted A acts on its lease", func() bool { return restarted.w.Acting(key) })
	if !landed {
		t.Fatal("the resume never raced the predecessor's renewal")
	}
	var how []string
	for _, e := range c.trace {
		if e.Kind == TraceResolved && e.Key == key && e.Owner == "A" {
			how = append(how, e.Reason)
		}
	}
	if len(how) == 0 || strings.HasSuffix(how[0], " applied") {
		t.Fatalf("resolutions %v: the predecessor's row was taken for the resume's own write", how)
	}
	// it acts on a version it wrote itself
	if row := c.row(key); row.Writer != restarted.w.writer || row.Counter <= predecessor.Counter {
		t.Fatalf("row %v (writer %q): want a version after %d written by the restarted process (%q)", row, row.Writer, predecessor.Counter, restarted.w.writer)
	}
}
