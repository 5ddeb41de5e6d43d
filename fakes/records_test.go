package fakes

import (
	"math/rand/v2"
	"testing"
)

// TestRecordLog: the compact log returns what was appended, by index, by
// cursor from any index, and by search, across chunk boundaries.
func TestRecordLog(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var l recordLog
	var want []krec
	var n uint64
	var at int64
	for i := 0; i < 5*chunkRecords+17; i++ {
		n += 1 + uint64(r.IntN(3000))
		at += int64(r.IntN(2e9))
		x := krec{n: n, arrival: at, pkey: uint32(r.IntN(300))}
		if r.IntN(4) == 0 {
			x.data = uint32(1 + r.IntN(1000))
		}
		l.append(x)
		want = append(want, x)
	}
	if l.len() != len(want) {
		t.Fatalf("len %d, want %d", l.len(), len(want))
	}
	for i := range want {
		if got := l.get(i); got != want[i] {
			t.Fatalf("get(%d) = %+v, want %+v", i, got, want[i])
		}
	}
	for _, from := range []int{0, 1, chunkRecords - 1, chunkRecords, 2*chunkRecords + 5, len(want) - 1} {
		c := l.at(from)
		for i := from; i < len(want); i++ {
			if c.i != i || c.cur != want[i] {
				t.Fatalf("cursor from %d at %d: %d %+v, want %+v", from, i, c.i, c.cur, want[i])
			}
			c.next()
		}
	}
	for _, x := range want {
		if got := l.search(func(r *krec) bool { return r.n >= x.n }); want[got] != x {
			t.Fatalf("search for counter %d found %d", x.n, got)
		}
		if got := l.search(func(r *krec) bool { return r.n > x.n }); got < len(want) && want[got-1] != x {
			t.Fatalf("search after counter %d found %d", x.n, got)
		}
	}
	if got := l.search(func(r *krec) bool { return r.n > n }); got != len(want) {
		t.Fatalf("search past the end found %d", got)
	}
	// reads that go on from where the last one stopped (the hint), and
	// reads elsewhere, see the same records
	for step := 0; step < 2000; step++ {
		i := r.IntN(len(want))
		if step%3 != 0 && l.hint.l == &l {
			i = min(l.hint.i+r.IntN(3), len(want)-1) // on from the hint
		}
		c := l.at(i)
		if c.cur != want[i] {
			t.Fatalf("at(%d) after a hint at %d: %+v, want %+v", i, l.hint.i, c.cur, want[i])
		}
		for j := 0; j < r.IntN(5) && c.i < len(want)-1; j++ {
			c.next()
		}
		l.remember(c)
	}
	var empty recordLog
	if empty.search(func(*krec) bool { return true }) != 0 || empty.len() != 0 {
		t.Fatal("an empty log")
	}
	// a few bytes a record
	size := 0
	for _, c := range l.chunks {
		size += len(c.deltas) + 24
	}
	if per := float64(size) / float64(l.len()); per > 12 {
		t.Errorf("%.1f bytes a record", per)
	}
}
