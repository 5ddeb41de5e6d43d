package fakes

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

var ctx = context.Background()

func newTable(t testing.TB, lag time.Duration, seed uint64) (*LeaseTable, *ManualClock) {
	t.Helper()
	c := NewManualClock(defaultStart)
	return NewLeaseTable(LeaseTableOptions{Clock: c, Seed: seed, StaleLag: lag}), c
}

func lease(key, owner string, counter int64) engine.Lease {
	return engine.Lease{Key: key, Owner: owner, Counter: counter, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
}

func TestLeaseTableConditionalWrites(t *testing.T) {
	type step struct {
		name string
		do   func(tb *LeaseTable) error
		want error // sentinel, nil for success
	}
	create := func(l engine.Lease) func(*LeaseTable) error {
		return func(tb *LeaseTable) error { return tb.CreateLease(ctx, l) }
	}
	update := func(e engine.Expect, l engine.Lease) func(*LeaseTable) error {
		return func(tb *LeaseTable) error { return tb.UpdateLease(ctx, e, l) }
	}
	del := func(key string, e engine.Expect) func(*LeaseTable) error {
		return func(tb *LeaseTable) error { return tb.DeleteLease(ctx, key, e) }
	}
	steps := []step{
		{"create", create(lease("a", "", 0)), nil},
		{"create again", create(lease("a", "w1", 5)), engine.ErrConditionFailed},
		{"create empty key", create(lease("", "", 0)), ErrInvalidArgument},
		{"update missing row", update(engine.Expect{}, lease("b", "w1", 1)), engine.ErrConditionFailed},
		{"update wrong counter", update(engine.Expect{Counter: 3}, lease("a", "w1", 4)), engine.ErrConditionFailed},
		{"update wrong owner", update(engine.Expect{Owner: "w9", Counter: 0}, lease("a", "w1", 1)), engine.ErrConditionFailed},
		{"take", update(engine.Expect{Owner: "", Counter: 0}, lease("a", "w1", 1)), nil},
		{"stale take", update(engine.Expect{Owner: "", Counter: 0}, lease("a", "w2", 1)), engine.ErrConditionFailed},
		{"renew", update(engine.Expect{Owner: "w1", Counter: 1}, lease("a", "w1", 2)), nil},
		{"delete wrong counter", del("a", engine.Expect{Owner: "w1", Counter: 1}), engine.ErrConditionFailed},
		{"delete wrong owner", del("a", engine.Expect{Owner: "w2", Counter: 2}), engine.ErrConditionFailed},
		{"delete missing", del("zz", engine.Expect{}), engine.ErrConditionFailed},
		{"delete", del("a", engine.Expect{Owner: "w1", Counter: 2}), nil},
		{"delete twice", del("a", engine.Expect{Owner: "w1", Counter: 2}), engine.ErrConditionFailed},
		{"recreate after delete", create(lease("a", "", 0)), nil},
	}
	tb, _ := newTable(t, 0, 1)
	for _, s := range steps {
		err := s.do(tb)
		if s.want == nil && err != nil || s.want != nil && !errors.Is(err, s.want) {
			t.Fatalf("%s: got %v, want %v", s.name, err, s.want)
		}
	}
	got, err := tb.GetLease(ctx, "a")
	if err != nil || !got.Equal(lease("a", "", 0)) {
		t.Fatalf("GetLease(a) = %v, %v", got, err)
	}
	if _, err := tb.GetLease(ctx, "b"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("GetLease(b) = %v, want ErrNotFound", err)
	}
}

func TestLeaseTableConditionErrorMessage(t *testing.T) {
	tb, _ := newTable(t, 0, 1)
	must(t, tb.CreateLease(ctx, lease("k", "w1", 7)))
	err := tb.UpdateLease(ctx, engine.Expect{Owner: "w2", Counter: 6}, lease("k", "w2", 7))
	want := `fakes: UpdateLease k: condition failed: expected owner "w2" counter 6, found owner "w1" counter 7`
	if err == nil || err.Error() != want {
		t.Fatalf("got %q, want %q", err, want)
	}
	err = tb.CreateLease(ctx, lease("k", "", 0))
	want = `fakes: CreateLease k: condition failed: expected no row, found owner "w1" counter 7`
	if err == nil || err.Error() != want {
		t.Fatalf("got %q, want %q", err, want)
	}
}

func TestLeaseTableCopiesAndShares(t *testing.T) {
	tb, _ := newTable(t, 0, 1)
	in := lease("k", "", 0)
	in.Parents = []string{"p1", "p2"}
	must(t, tb.CreateLease(ctx, in))
	in.Parents[0] = "mutated-in"
	got, err := tb.GetLease(ctx, "k")
	must(t, err)
	if got.Parents[0] != "p1" {
		t.Fatalf("table aliases the caller's row: %v", got.Parents)
	}
	got.Parents[1] = "mutated-out"
	l, err := tb.ListLeases(ctx, true)
	must(t, err)
	if l.Leases[0].Parents[1] != "p2" {
		t.Fatalf("GetLease result aliases the table: %v", l.Leases[0].Parents)
	}
	// ListLeases shares the stored version, which no later write
	// changes: a listing keeps showing what it read
	up := lease("k", "w2", 1)
	up.Parents = []string{"p9"}
	must(t, tb.UpdateLease(ctx, engine.ExpectOf(got), up))
	if l.Leases[0].Parents[0] != "p1" || l.Leases[0].Owner != "" {
		t.Fatalf("a listing changed after a later write: %+v", l.Leases[0])
	}
	if now, _ := tb.ListLeases(ctx, true); now.Leases[0].Parents[0] != "p9" {
		t.Fatalf("the new version is not listed: %+v", now.Leases[0])
	}
}

func TestLeaseTableListSorted(t *testing.T) {
	tb, _ := newTable(t, 0, 1)
	keys := []string{"s:shardId-3", "legacy-1", "s:shardId-1", "a", "z", "s:shardId-2"}
	for _, k := range keys {
		must(t, tb.CreateLease(ctx, lease(k, "", 0)))
	}
	tb.InjectMalformed("m", "leaseCounter is a string")
	for _, consistent := range []bool{true, false} {
		l, err := tb.ListLeases(ctx, consistent)
		must(t, err)
		var got []string
		for _, x := range l.Leases {
			got = append(got, x.Key)
		}
		want := slices.Sorted(slices.Values(keys))
		if !slices.Equal(got, want) {
			t.Fatalf("consistent=%v: keys %v, want %v", consistent, got, want)
		}
		if len(l.Malformed) != 1 || l.Malformed[0].Key != "m" {
			t.Fatalf("malformed = %v", l.Malformed)
		}
	}
}

// staleModel records, per key, every state the test wrote and when, so
// that it can tell which versions a stale read may return.
type staleModel map[string][]modelVersion

type modelVersion struct {
	at      time.Time
	counter int64 // -1: no row
}

// allowed returns the counters (-1 for no row) that were current at some
// time within [now-lag, now].
func (m staleModel) allowed(key string, now time.Time, lag time.Duration) map[int64]bool {
	out := map[int64]bool{}
	horizon := now.Add(-lag)
	cur := int64(-1)
	for _, v := range m[key] {
		if v.at.After(horizon) {
			out[cur] = true
		}
		cur = v.counter
	}
	out[cur] = true
	return out
}

func TestLeaseTableStaleReads(t *testing.T) {
	const lag = 2 * time.Second
	tests := []struct {
		name  string
		step  time.Duration // time between writes
		write int           // writes per key
	}{
		{"writes faster than the lag", 300 * time.Millisecond, 40},
		{"writes at the lag", lag, 10},
		{"writes slower than the lag", 3 * time.Second, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, clock := newTable(t, lag, 42)
			model := staleModel{}
			keys := []string{"k1", "k2", "k3"}
			sawStale, sawAbsent, sawDeleted := false, false, false
			check := func() {
				now := clock.Now()
				l, err := tb.ListLeases(ctx, false)
				must(t, err)
				seen := map[string]int64{}
				for _, x := range l.Leases {
					seen[x.Key] = x.Counter
				}
				for _, k := range keys {
					c, ok := seen[k]
					if !ok {
						c = -1
					}
					allowed := model.allowed(k, now, lag)
					if !allowed[c] {
						t.Fatalf("at %v key %s: stale read returned counter %d, allowed %v", now.Sub(defaultStart), k, c, allowed)
					}
					latest := model.latest(k)
					if c != latest {
						sawStale = true
						if c == -1 && latest >= 0 {
							sawAbsent = true
						}
						if latest == -1 {
							sawDeleted = true
						}
					}
				}
				// A consistent read is always the latest.
				l, err = tb.ListLeases(ctx, true)
				must(t, err)
				if len(l.Leases) != countPresent(model) {
					t.Fatalf("consistent read returned %d rows, want %d", len(l.Leases), countPresent(model))
				}
				for _, x := range l.Leases {
					if latest := model.latest(x.Key); x.Counter != latest {
						t.Fatalf("consistent read of %s: counter %d, want %d", x.Key, x.Counter, latest)
					}
				}
			}
			for i, k := range keys {
				clock.Advance(time.Duration(i) * 100 * time.Millisecond)
				must(t, tb.CreateLease(ctx, lease(k, "", 0)))
				model[k] = append(model[k], modelVersion{clock.Now(), 0})
				check()
			}
			for n := 1; n <= tc.write; n++ {
				for _, k := range keys {
					clock.Advance(tc.step / 3)
					must(t, tb.UpdateLease(ctx, expectAt(n-1), lease(k, "w", int64(n))))
					model[k] = append(model[k], modelVersion{clock.Now(), int64(n)})
					for range 5 {
						check()
					}
				}
			}
			for _, k := range keys {
				clock.Advance(tc.step / 3)
				must(t, tb.DeleteLease(ctx, k, engine.Expect{Owner: "w", Counter: int64(tc.write)}))
				model[k] = append(model[k], modelVersion{clock.Now(), -1})
				for range 5 {
					check()
				}
			}
			for range 10 {
				clock.Advance(lag / 4)
				check()
			}
			if !sawStale || !sawAbsent {
				t.Errorf("never saw a stale version (stale=%v absent-after-create=%v)", sawStale, sawAbsent)
			}
			if tc.step/3 < lag && !sawDeleted {
				t.Errorf("never saw a deleted row within the lag")
			}
			if len(tb.keys) != 0 || len(tb.order) != 0 {
				t.Errorf("deleted keys not forgotten after the lag: %d rows, %d in order", len(tb.keys), len(tb.order))
			}
		})
	}
}

// expectAt returns the condition on the row after n updates by "w" (the
// unowned row as created for n = 0).
func expectAt(n int) engine.Expect {
	if n == 0 {
		return engine.Expect{}
	}
	return engine.Expect{Owner: "w", Counter: int64(n)}
}

// latest returns the counter written last (-1: no row).
func (m staleModel) latest(key string) int64 {
	if vs := m[key]; len(vs) > 0 {
		return vs[len(vs)-1].counter
	}
	return -1
}

func countPresent(m staleModel) int {
	n := 0
	for _, vs := range m {
		if vs[len(vs)-1].counter >= 0 {
			n++
		}
	}
	return n
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
