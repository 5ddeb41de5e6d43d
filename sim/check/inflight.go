package check

import (
	"github.com/shardlease/shardlease/sim/trace"
)

// W2 is the invariant that at most one write per held lease is in
// flight: a holder sends its next write of a lease (a renewal, a
// checkpoint, a release, a shard end) only once the last one's outcome is
// known (its reply, or the re-read that resolved it), so that the version
// each write expects is always the row's.
const W2 = "W2"

// w2Checker checks W2. Per process and key it keeps the holder write in
// flight: sent, not answered ok or throttled, or answered otherwise and
// not yet resolved (TraceResolved), until the lease is lost, released or
// taken again.
type w2Checker struct {
	o        Options
	inflight map[int32]map[string]w2Write
	out      []Violation
}

type w2Write struct {
	call      uint64
	reason    string
	seq       uint64
	resolving bool
}

func newW2(o Options) *w2Checker {
	return &w2Checker{o: o, inflight: map[int32]map[string]w2Write{}}
}

func holderWrite(reason string) bool {
	switch reason {
	case trace.WriteRenew, trace.WriteCheckpoint, trace.WriteRelease, trace.WriteShardEnd:
		return true
	}
	return false
}

func (c *w2Checker) observe(r *trace.Record) {
	if r.Proc < 0 {
		return
	}
	switch r.Kind {
	case trace.KindSend:
		if !holderWrite(r.Reason) {
			return
		}
		m := c.inflight[r.Proc]
		if m == nil {
			m = map[string]w2Write{}
			c.inflight[r.Proc] = m
		}
		if w, ok := m[r.Key]; ok && w.call != r.Call && len(c.out) < c.o.max() {
			what := "still in flight"
			if w.resolving {
				what = "of unknown outcome and not yet resolved"
			}
			c.out = append(c.out, Violation{Invariant: W2, Key: r.Key, Workers: []string{who(r)}, To: r.T, Seqs: []uint64{w.seq, r.Seq},
				Detail: who(r) + " sent a " + r.Reason + " of the lease while its " + w.reason + " was " + what + ": two writes expect the same version"})
		}
		m[r.Key] = w2Write{call: r.Call, reason: r.Reason, seq: r.Seq}
	case trace.KindReply:
		m := c.inflight[r.Proc]
		w, ok := m[r.Key]
		if !ok || w.call != r.Call {
			return
		}
		switch r.Outcome {
		case trace.OutcomeOK, trace.OutcomeThrottled:
			delete(m, r.Key)
		default:
			w.resolving = true // the worker re-reads the row to resolve it
			m[r.Key] = w
		}
	case trace.Resolved, trace.LeaseLost, trace.LeaseReleased, trace.LeaseAcquired:
		// A take of the lease again (its write applied on the row's
		// version then) ends an unresolved write of an earlier tenure: the
		// row moved past the version that write expects, so it can no
		// longer apply (seed 1215: a renewal sent as the lease was lost,
		// timed out, never resolved; the process took the lease again).
		if m := c.inflight[r.Proc]; m != nil {
			delete(m, r.Key)
		}
	case trace.KindProcStop:
		delete(c.inflight, r.Proc)
	}
}
