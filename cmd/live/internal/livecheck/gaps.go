package livecheck

import (
	"sort"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/sim/check"
)

// HandoffGap is one handoff's time without an acting owner.
type HandoffGap struct {
	Key      string
	From, To string        // the old and the new owner's process
	At       time.Duration // the new owner's first act
	Gap      time.Duration
	Planned  bool // a shutdown or cooperative handoff (check.Tenure.MovedTo)
}

// longestGaps returns the n longest unplanned and the n longest planned
// handoff gaps of ts (tenures sorted by key then start), longest first.
func longestGaps(ts []check.Tenure, procs map[int32]*history.Proc, n int) []HandoffGap {
	var fo, pl []HandoffGap
	for i := 1; i < len(ts); i++ {
		a, b := &ts[i-1], &ts[i]
		if a.Key != b.Key || a.Proc == b.Proc {
			continue
		}
		d, planned, ok := check.HandoffGap(a, b)
		if !ok {
			continue
		}
		g := HandoffGap{Key: a.Key, From: procName(procs, a.Proc), To: procName(procs, b.Proc), At: b.Start, Gap: d, Planned: planned}
		if planned {
			pl = append(pl, g)
		} else {
			fo = append(fo, g)
		}
	}
	top := func(gs []HandoffGap) []HandoffGap {
		sort.SliceStable(gs, func(i, j int) bool { return gs[i].Gap > gs[j].Gap })
		return gs[:min(n, len(gs))]
	}
	return append(top(fo), top(pl)...)
}
