package livecheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// tableWrites counts the lease-table writes the history shows sent, by
// class (trace.Write*: renew, checkpoint, take, assign, hello, release,
// shard-end, create, delete; every write of a session row, whatever it is,
// as session: session renewal), and per shard-hour of the shards the
// history shows open (check.Figures.ShardHours). Every write sent is an
// attempt the table bills unless it throttles it.
func tableWrites(recs []trace.Record, rep *Report) {
	rep.WritesByClass = map[string]int{}
	for i := range recs {
		if r := &recs[i]; r.Kind == trace.KindSend && r.Op.IsWrite() {
			c := r.Reason
			switch {
			case engine.IsSessionRow(r.Key):
				c = "session"
			case c == "":
				c = "other"
			}
			rep.WritesByClass[c]++
		}
	}
	if h := rep.Measure.ShardHours; h > 0 {
		rep.WritesPerShardHour = map[string]float64{}
		for c, n := range rep.WritesByClass {
			rep.WritesPerShardHour[c] = float64(n) / h
		}
	}
}

// writesLine is the writes by class, per shard-hour where known.
func (r *Report) writesLine() string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(r.WritesByClass)) {
		if ph, ok := r.WritesPerShardHour[c]; ok {
			parts = append(parts, fmt.Sprintf("%s %d (%.0f/shard-hour)", c, r.WritesByClass[c], ph))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", c, r.WritesByClass[c]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return fmt.Sprintf("%s over %.2f shard-hours", strings.Join(parts, ", "), r.Measure.ShardHours)
}
