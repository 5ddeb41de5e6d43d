package check

import (
	"fmt"
	"testing"
)

// TestKeyTable: every key, shard id or not, has one state, found again by
// get and lookup whichever way it was stored; the states are listed in
// the order the keys were first seen.
func TestKeyTable(t *testing.T) {
	kt := newKeyTable()
	keys := []string{
		"shardId-000000000007", "shardId-000000000000", "hello-w1",
		"shardId-999999999999", // too large for byNum: in m
		"shardId-000000005000", // too large for byNum when first seen: in m
		"shardId-00000000001x", "shardId-0000000000001", "shardid-000000000003", "",
	}
	for i := 0; i < 3000; i++ { // byNum grows past the large ones' reach
		keys = append(keys, fmt.Sprintf("shardId-%012d", 10+i))
	}
	// larger than any before, within reach now; then byNum reaches past 5000
	keys = append(keys, "shardId-000000004000", "shardId-000000006000")
	seen := map[string]*keyState{}
	for round := 0; round < 2; round++ {
		for _, k := range keys {
			ks := kt.get(k)
			if ks.name != k {
				t.Fatalf("get(%q) returned the state of %q", k, ks.name)
			}
			if prev, ok := seen[k]; ok && prev != ks {
				t.Fatalf("get(%q) returned a second state", k)
			}
			seen[k] = ks
			kt.last = nil // look it up, not the key before
			if kt.lookup(k) != ks {
				t.Fatalf("lookup(%q) did not return its state", k)
			}
		}
	}
	if len(kt.all) != len(keys) {
		t.Fatalf("%d states for %d keys", len(kt.all), len(keys))
	}
	for i, ks := range kt.all {
		if ks.name != keys[i] {
			t.Fatalf("state %d is %q, want %q", i, ks.name, keys[i])
		}
	}
	if kt.lookup("shardId-000000000001") != nil || kt.lookup("other") != nil {
		t.Errorf("lookup found a key never seen")
	}
	if kt.byNum == nil || len(kt.m) != 7 {
		t.Errorf("shard ids in byNum %d, other keys in m %d (want 7: the large, malformed and non-shard keys)", len(kt.byNum), len(kt.m))
	}
}

// TestKeySlots: a process's slot is found again; a freed slot is taken by
// the next process that needs one, and the key keeps no more slots than
// processes with state on it at once.
func TestKeySlots(t *testing.T) {
	ks := newKeyTable().get("s0")
	for p := int32(0); p < 10; p++ {
		ks.slotNew(p).s4 = &readState{}
		if p > 0 {
			ks.slot(p - 1).s4 = nil // the previous one stopped
		}
		if s := ks.slot(p); s == nil || s.s4 == nil || s.proc != p {
			t.Fatalf("slot of %d: %+v", p, s)
		}
	}
	if len(ks.procs) != 2 {
		t.Errorf("%d slots for at most 2 processes at once", len(ks.procs))
	}
	ks.slotNew(20).ms = &mproc{}
	ks.slotNew(21).ms = &mproc{}
	ks.slotNew(22).ms = &mproc{}
	if len(ks.procs) != 4 || ks.slot(20).ms == nil || ks.slot(22).ms == nil || ks.slot(9).s4 == nil {
		t.Errorf("slots: %d", len(ks.procs))
	}
}
