package fakes

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// TestHistoryKeepsWhatAReadCanSee writes rows at random times (several at
// one instant too) with random lags and checks, after every write, that the
// history holds exactly the versions a naive history (every version kept,
// scanned from the newest) says a read within the lag can return, and that
// keepFrom finds the same version for every horizon.
func TestHistoryKeepsWhatAReadCanSee(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		lag := time.Duration(r.IntN(5)) * time.Second
		h := newHistory("k")
		var all []version // every version ever written, oldest first
		all = append(all, h.v[0])
		now := time.Unix(1000, 0)
		for n := 1; n <= 300; n++ {
			if r.IntN(4) != 0 {
				now = now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
			}
			v := version{at: now, state: rowPresent, lease: engine.Lease{Key: "k", Counter: int64(n)}}
			h.write(v, now.Add(-lag))
			all = append(all, v)
			horizon := now.Add(-lag)
			want := all[naiveKeepFrom(all, horizon):]
			if len(h.v) != len(want) {
				t.Fatalf("seed %d write %d: history holds %d versions, a read can see %d", seed, n, len(h.v), len(want))
			}
			for i := range want {
				if h.v[i].lease.Counter != want[i].lease.Counter || !h.v[i].at.Equal(want[i].at) {
					t.Fatalf("seed %d write %d: version %d is counter %d at %v, want %d at %v", seed, n, i, h.v[i].lease.Counter, h.v[i].at, want[i].lease.Counter, want[i].at)
				}
			}
			for _, back := range []time.Duration{0, lag / 3, lag / 2, lag, lag + time.Second} {
				at := now.Add(-back)
				if at.Before(horizon) {
					at = horizon
				}
				got := h.v[h.keepFrom(at)].lease.Counter
				if exp := h.v[naiveKeepFrom(h.v, at)].lease.Counter; got != exp {
					t.Fatalf("seed %d write %d: keepFrom(now-%v) finds counter %d, want %d", seed, n, back, got, exp)
				}
			}
		}
	}
}

// naiveKeepFrom is history.keepFrom as a scan from the newest version.
func naiveKeepFrom(v []version, horizon time.Time) int {
	for i := len(v) - 1; i > 0; i-- {
		if !v[i].at.After(horizon) {
			return i
		}
	}
	return 0
}
