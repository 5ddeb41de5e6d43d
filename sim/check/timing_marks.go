package check

import (
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// Two facts of a lease's path the trace shows only indirectly: whether
// the row still carries the mark of a handoff (engine.Lease.HandoffFrom),
// and whether a process had begun a graceful shutdown.

// markAcquired updates the key's handoff mark at a take that applied
// (TraceLeaseAcquired, its reason): a steal marks the row (its thief must
// wait its previous owner out); a take of an expired lease acts at once
// and clears it; any other take of a marked row (unowned, resumed,
// assigned) waits a lease duration from its read, and keeps it. acqMarked
// is the mark the taker read.
func (tk *tkey) markAcquired(r *trace.Record) {
	tk.acqMarked = tk.marked
	tk.actingProc = -1
	switch r.Reason {
	case "stolen":
		tk.marked = true
	case "expired":
		tk.marked = false
	}
}

// markActing notes that r.Proc started acting on the key.
func (tk *tkey) markActing(r *trace.Record) {
	tk.actingProc, tk.actingT = r.Proc, r.T
}

// markApplied clears the handoff mark at the holder's first write sent
// once it acts (a renewal, a checkpoint, a release): the engine clears
// HandoffFrom with it. A write sent while it still waited keeps the mark.
func (tk *tkey) markApplied(r *trace.Record) {
	switch r.Reason {
	case trace.WriteRenew, trace.WriteCheckpoint, trace.WriteRelease, trace.WriteShardEnd:
		if r.Proc == tk.actingProc && r.Sent >= tk.actingT {
			tk.marked = false
		}
	}
}

// shutdownFault parses a graceful shutdown of a worker ("shutdown w4 for
// 3.668s", or "shutdown the holder ..." whose record names the slot it
// resolved to): the slot. A shutdown that found no process is none.
func shutdownFault(r *trace.Record) (int32, bool) {
	f := strings.Fields(r.Reason)
	if len(f) < 3 || f[1] != "shutdown" || strings.Contains(r.Reason, ": no live") {
		return 0, false
	}
	if n, ok := strings.CutPrefix(f[2], "w"); ok {
		if slot, err := strconv.Atoi(n); err == nil {
			return int32(slot), true
		}
	}
	return r.Worker, r.Worker >= 0
}

// lastChance is until when the process could take a lease handed to it:
// its stop, or the start of its graceful shutdown (a worker shutting
// down takes no new lease, explorer world t2-seed23).
func (p *tproc) lastChance() time.Duration {
	if p.down > 0 && (p.alive || p.down < p.stop) {
		return p.down
	}
	return p.stop
}
