package check

import (
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Settled reports whether the history so far ends, at now, in the state
// L1 asks of a run's end: every open shard has a process acting on it (an
// open tenure), no record put to an open shard at or before now-lag is
// still undelivered, and, with Options.Balance, the live workers hold
// their fair share of the unfinished leases of rows (the table as it is
// now) within BalanceSlack. It reads the checkers' state and changes
// none. A simulator that ends its healing phase once the world has
// settled asks it (sim's settle.go); it is false without the L1 checker.
func (c *Online) Settled(now time.Duration, rows []engine.Lease, lag time.Duration) bool {
	l := c.l1
	if l == nil || len(l.live) == 0 {
		return false
	}
	for _, ks := range l.order {
		if !ks.open {
			continue
		}
		if ks.cover == nil || ks.cover.openTenures <= 0 {
			return false
		}
		if p := ks.sp; p != nil {
			for _, x := range p.kept() {
				if x.t > now-lag {
					break
				}
				if x.received < 0 && x.trimmed < 0 {
					return false
				}
			}
		}
	}
	return !c.o.Balance || len(l.unbalanced(rows)) == 0
}

// SetEnd moves the end of the run to end, earlier than the Options' End
// the checkers started with (a simulator that ended its healing phase
// early: see Settled). Every end-of-run check (Finish) then reads the new
// end. Records that an online check judged against the old end are judged
// again at Finish: L1's late records are those put in [Heal+Bound,
// end-Bound]. S4's records forgotten during the run (each received and
// covered by an applied checkpoint, or trimmed) keep the bookkeeping of the
// old end: its end-of-run check may then also ask the final table to cover
// a record put after end-Bound that an applied checkpoint covered already,
// which a table whose checkpoints never go back does.
func (c *Online) SetEnd(end time.Duration) { c.o.End = end }
