package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestRowTableInternFreeReuse(t *testing.T) {
	parsed := 0
	rt := newRowTable(func(key string) (ShardRef, bool) {
		parsed++
		return ShardRef{Stream: "s", Shard: key}, key != "other"
	})
	a := rt.intern("a")
	if got := rt.intern("a"); got != a {
		t.Fatalf("intern of a known key returned another row")
	}
	if parsed != 1 || a.ref.Shard != "a" || !a.ok {
		t.Fatalf("a parsed %d times, ref %v ok %v; want once, s/a, true", parsed, a.ref, a.ok)
	}
	b := rt.intern("b")
	if a.id == b.id || rt.get("b") != b || rt.get("c") != nil {
		t.Fatalf("ids %d and %d, get(b) %p (b %p), get(c) %v", a.id, b.id, rt.get("b"), b, rt.get("c"))
	}
	// a row that holds something is not freed
	b.observed = true
	rt.tidy(b)
	if b.freed || rt.get("b") != b {
		t.Fatalf("tidy freed an observed row")
	}
	for _, set := range []func(rs *rowState){
		func(rs *rowState) { rs.held = &holding{} },
		func(rs *rowState) { rs.write = &write{} },
		func(rs *rowState) { rs.ghosts = []ghost{{}} },
		func(rs *rowState) { rs.confirming = true },
	} {
		c := rt.intern("c")
		set(c)
		rt.tidy(c)
		if c.freed || rt.get("c") != c {
			t.Fatalf("tidy freed a row that holds something: %+v", c)
		}
		*c = rowState{key: "c", id: c.id, writing: -1}
		rt.tidy(c)
		if !c.freed || rt.get("c") != nil {
			t.Fatalf("tidy kept an empty row")
		}
	}
	// an empty row is freed, its id reused, and a pointer kept to it
	// falls back to the key's current row
	b.observed = false
	rt.tidy(b)
	if !b.freed || rt.get("b") != nil || rt.live != 1 {
		t.Fatalf("b not freed: freed %v, get %v, live %d", b.freed, rt.get("b"), rt.live)
	}
	if rt.current(b, "b") != nil {
		t.Fatalf("current of a freed row without a successor is not nil")
	}
	d := rt.intern("d")
	if d.id != b.id && d.id != a.id+2 {
		t.Fatalf("d got id %d: neither b's freed id %d nor a new one", d.id, b.id)
	}
	b2 := rt.intern("b")
	if b2 == b || rt.current(b, "b") != b2 || rt.current(b2, "b") != b2 {
		t.Fatalf("current does not find b's new row")
	}
	seen := map[rowID]string{}
	for _, rs := range rt.all {
		if rs == nil {
			continue
		}
		if k, dup := seen[rs.id]; dup {
			t.Fatalf("id %d used by %s and %s", rs.id, k, rs.key)
		}
		seen[rs.id] = rs.key
		if rt.all[rs.id] != rs || rt.ids[rs.key] != rs.id {
			t.Fatalf("row %s at id %d is not where its id says", rs.key, rs.id)
		}
	}
	if rt.live != len(seen) || len(seen) != 3 {
		t.Fatalf("live %d, rows in the table %d, want 3 (a, d, b)", rt.live, len(seen))
	}
}

// TestRowsFollowWorker runs a worker through takes, renewals, a loss and
// rescans and checks, after every step, that its row table holds exactly
// the rows its state names: every held lease, write in flight and
// observation has its row, and no row is kept that holds nothing.
func TestRowsFollowWorker(t *testing.T) {
	u := newUnit(t, Config{TakeInterval: 300 * time.Millisecond})
	steps := 0
	u.afterStep = func() {
		steps++
		if err := rowsConsistent(u.w); err != nil {
			t.Fatalf("after step %d: %v", steps, err)
		}
	}
	for i := 0; i < 4; i++ {
		u.stream.add(shardKey(i))
		u.stream.put(shardKey(i), 2)
		u.put(Lease{Key: shardKey(i), Checkpoint: startSeq()})
	}
	u.tick()
	check := func(when string) {
		t.Helper()
		if err := rowsConsistent(u.w); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	u.runTo(time.Second)
	check("holding four")
	if n := len(u.w.Held()); n != 4 {
		t.Fatalf("holding %d leases, want 4\n%s", n, u.dump())
	}
	stolen := u.row(shardKey(1))
	stolen.Owner, stolen.Counter = "thief", stolen.Counter+1
	u.put(stolen)
	u.runTo(3 * time.Second)
	check("one stolen")
	if u.w.holdingOf(shardKey(1)) != nil {
		t.Fatalf("the worker still holds the stolen lease")
	}
	if o := u.w.observed(shardKey(1)); o == nil || o.row.Owner != "thief" {
		t.Fatalf("the worker does not observe the thief's row")
	}
	// the thief goes away: its row is deleted, and the next scan forgets it
	if err := u.store.DeleteLease(context.Background(), shardKey(1), ExpectOf(u.row(shardKey(1)))); err != nil {
		t.Fatal(err)
	}
	u.runTo(5 * time.Second)
	check("the stolen row deleted")
	if u.w.rows.get(shardKey(1)) != nil {
		t.Fatalf("the row of a deleted key that the worker neither holds nor writes is kept")
	}
	u.step(Input{Kind: InputShutdown})
	u.runTo(10 * time.Second)
	check("after shutdown")
	if !u.stopped || len(u.w.held) != 0 || len(u.w.writing) != 0 {
		t.Fatalf("not stopped cleanly: stopped %v, %d held, %d writes", u.stopped, len(u.w.held), len(u.w.writing))
	}
	if steps < 20 {
		t.Fatalf("only %d steps checked", steps)
	}
}

// rowsConsistent checks w's row table against its other state.
func rowsConsistent(w *Worker) error {
	live := 0
	for id, rs := range w.rows.all {
		if rs == nil {
			continue
		}
		live++
		switch {
		case rs.freed:
			return fmt.Errorf("freed row %s still in the table", rs.key)
		case int(rs.id) != id || w.rows.ids[rs.key] != rs.id:
			return fmt.Errorf("row %s at %d has id %d, the map says %d", rs.key, id, rs.id, w.rows.ids[rs.key])
		case rs.empty():
			return fmt.Errorf("row %s holds nothing but is kept", rs.key)
		case rs.held != nil && rs.held.rs != rs:
			return fmt.Errorf("row %s holds a holding of another row", rs.key)
		case rs.write != nil && (rs.writing < 0 || int(rs.writing) >= len(w.writing) || w.writing[rs.writing] != rs):
			return fmt.Errorf("row %s has a write not listed in writing", rs.key)
		}
	}
	if live != w.rows.live || live != len(w.rows.ids) {
		return fmt.Errorf("%d rows in the table, live %d, %d ids", live, w.rows.live, len(w.rows.ids))
	}
	for _, h := range w.held {
		if rs := w.rows.get(h.key); rs == nil || rs.held != h {
			return fmt.Errorf("held lease %s is not its row's holding", h.key)
		}
	}
	for _, rs := range w.writing {
		if rs.freed || rs.write == nil {
			return fmt.Errorf("row %s in writing without a write", rs.key)
		}
	}
	return nil
}
