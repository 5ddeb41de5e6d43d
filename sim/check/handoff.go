package check

import (
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// G1 is the graceful-handoff invariant: what a processor checkpointed
// before its lease was let go on purpose survives the move.
const G1 = "G1"

// Planned reports whether the reason of a TraceLeaseReleased names a
// planned move: a graceful shutdown ("shutdown") or a cooperative handoff
// ("handed over to W"). A release at a shard's end is not a move.
func Planned(releaseReason string) bool {
	return releaseReason == "shutdown" || strings.HasPrefix(releaseReason, handedOver)
}

const handedOver = "handed over to "

// HandedTo returns the owner a release's reason hands the lease to, or ""
// if it is no cooperative handoff.
func HandedTo(releaseReason string) string {
	to, _ := strings.CutPrefix(releaseReason, handedOver)
	if to == releaseReason {
		return ""
	}
	return to
}

// g1Checker checks G1 (see CheckG1). Per process and key it follows the
// processor's checkpoint requests that the worker accepted and has not
// answered (landed, or refused), and the highest one that landed; when
// the worker sends the release, the highest of them is what the
// processor checkpointed before it let go. A planned release then waits
// for the key's next owner, whose first act must start at or after it.
type g1Checker struct {
	o     Options
	procs map[pk]*g1State
	moves map[string]*plannedMove
	out   []Violation
	// checkpointed counts the planned moves whose processor had
	// checkpointed every record delivered to it
	checkpointed int
}

// g1State is one process's checkpoints on one key.
type g1State struct {
	landed  Pos
	pending []g1Req
	// frozen at the release's send
	sent   bool
	x      Pos
	xRaw   engine.Checkpoint
	xSeq   uint64
	sentAt time.Duration
	high   Seq // the highest record delivered to its processor
}

type g1Req struct {
	pos Pos
	cp  engine.Checkpoint
	seq uint64
}

// plannedMove is a planned release waiting for the key's next owner.
type plannedMove struct {
	from   int32
	who    string
	reason string
	x      Pos
	xRaw   engine.Checkpoint
	xSeq   uint64
	at     time.Duration
	relSeq uint64
	// clean: the processor had checkpointed every record delivered to it;
	// next is the next owner, waiting for its first batch (which must then
	// hold no record at or below x)
	clean bool
	next  int32
}

func newG1(o Options) *g1Checker {
	return &g1Checker{o: o, procs: map[pk]*g1State{}, moves: map[string]*plannedMove{}}
}

func (c *g1Checker) state(k pk) *g1State {
	s := c.procs[k]
	if s == nil {
		s = &g1State{}
		c.procs[k] = s
	}
	return s
}

// observe feeds the records G1 reads.
func (c *g1Checker) observe(r *trace.Record) {
	k := pk{r.Proc, r.Key}
	switch r.Kind {
	case trace.Delivered:
		if m := c.moves[r.Key]; m != nil && m.next == r.Proc {
			c.firstBatch(r, m)
		}
		s := c.state(k)
		if l := LastOf(r); l.Compare(s.high) > 0 {
			s.high = l
		}
	case trace.Acting:
		c.acting(r)
		s := c.state(k)
		if p := PosOf(r.Checkpoint); !s.sent && p.Compare(s.landed) > 0 {
			s.landed = p // the stored checkpoint it starts from
		}
	case trace.CheckpointRequested:
		s := c.state(k)
		if p := PosOf(r.Checkpoint); !s.sent && p.Compare(s.landed) > 0 {
			s.pending = append(s.pending, g1Req{pos: p, cp: r.Checkpoint, seq: r.Seq})
		}
	case trace.CheckpointRejected:
		s := c.procs[k]
		if s == nil || s.sent {
			return
		}
		p := PosOf(r.Checkpoint)
		for i := len(s.pending) - 1; i >= 0; i-- {
			if s.pending[i].pos.Compare(p) == 0 {
				s.pending = append(s.pending[:i], s.pending[i+1:]...)
				break
			}
		}
	case trace.CheckpointWritten:
		s := c.procs[k]
		if s == nil || s.sent {
			return
		}
		p := PosOf(r.Checkpoint)
		if p.Compare(s.landed) > 0 {
			s.landed = p
		}
		kept := s.pending[:0]
		for _, q := range s.pending {
			if q.pos.Compare(p) > 0 {
				kept = append(kept, q)
			}
		}
		s.pending = kept
	case trace.CallSent:
		if r.Reason != "release" {
			return
		}
		s := c.state(k)
		if !s.sent {
			s.freeze(r)
		}
	case trace.LeaseReleased:
		s := c.procs[k]
		delete(c.procs, k)
		if !Planned(r.Reason) {
			return
		}
		if s == nil {
			s = &g1State{}
		}
		if !s.sent {
			s.freeze(r) // a history without the release's send
		}
		m := &plannedMove{from: r.Proc, who: who(r), reason: r.Reason, x: s.x, xRaw: s.xRaw, xSeq: s.xSeq, at: r.T, relSeq: r.Seq, next: -1}
		m.clean = m.x.rank == 1 && !s.high.IsZero() && m.x.seq.Compare(s.high) >= 0
		if m.clean {
			c.checkpointed++
		}
		c.moves[r.Key] = m
	case trace.LeaseLost:
		delete(c.procs, k)
	}
}

// freeze records, at the release's send r, the highest checkpoint the
// processor had asked for and the worker had not refused.
func (s *g1State) freeze(r *trace.Record) {
	s.sent, s.sentAt = true, r.T
	s.x = s.landed
	for _, q := range s.pending {
		if q.pos.Compare(s.x) > 0 {
			s.x, s.xRaw, s.xSeq = q.pos, q.cp, q.seq
		}
	}
	s.pending = nil
}

// acting is the first act of a tenure (TraceActing): if it follows a
// planned move of its key by another process, it must start at or after
// what the old owner's processor checkpointed before the release.
func (c *g1Checker) acting(r *trace.Record) {
	m := c.moves[r.Key]
	if m == nil || m.next >= 0 {
		return
	}
	if m.from == r.Proc || len(c.out) >= c.o.max() {
		delete(c.moves, r.Key)
		return
	}
	y := PosOf(r.Checkpoint)
	if y.Compare(m.x) >= 0 {
		if m.clean {
			m.next = r.Proc // its first batch must re-deliver nothing
		} else {
			delete(c.moves, r.Key)
		}
		return
	}
	delete(c.moves, r.Key)
	seqs := []uint64{m.relSeq, r.Seq}
	if m.xSeq != 0 {
		seqs = []uint64{m.xSeq, m.relSeq, r.Seq}
	}
	c.out = append(c.out, Violation{Invariant: G1, Key: r.Key, Workers: []string{who(r), m.who}, From: m.at, To: r.T, Seqs: seqs,
		Detail: "after the planned release by " + m.who + " (" + m.reason + "), " + who(r) + " started at " + r.Checkpoint.String() +
			", before " + m.xRaw.String() + ", which " + m.who + "'s processor had checkpointed before the release was sent: the records between are delivered again"})
}

// firstBatch is the first batch the next owner delivered after a planned
// move whose processor had checkpointed everything it had received: it
// must hold no record the old owner had (none at or below x).
func (c *g1Checker) firstBatch(r *trace.Record, m *plannedMove) {
	delete(c.moves, r.Key)
	if r.Count == 0 || FirstOf(r).Compare(m.x.seq) > 0 || len(c.out) >= c.o.max() {
		return
	}
	c.out = append(c.out, Violation{Invariant: G1, Key: r.Key, Workers: []string{who(r), m.who}, From: m.at, To: r.T, Seqs: []uint64{m.relSeq, r.Seq},
		Detail: "after the planned release by " + m.who + " (" + m.reason + "), whose processor had checkpointed every record it received (up to " +
			m.xRaw.String() + "), " + who(r) + " delivered " + r.First + " again"})
}

// dropProc forgets a stopped process (Forget).
func (c *g1Checker) dropProc(proc int32) {
	for k := range c.procs {
		if k.proc == proc {
			delete(c.procs, k)
		}
	}
}
