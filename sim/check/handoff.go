package check

import (
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// G1 is the graceful-handoff invariant: what a processor checkpointed
// before its lease was let go on purpose survives the move, and the next
// owner delivers none of it again.
const G1 = "G1"

// G2 is the final-checkpoint invariant: a lease let go on purpose (a
// shutdown, a cooperative handoff) is released only after every
// checkpoint its processor asked for has landed; none is refused for the
// handoff's sake, and an initialized processor is asked to shut down
// (ShutdownRequested) and answers before the release. The one exception is
// documented: a handoff whose processor does not let go within half a
// lease duration is released anyway, refusing what comes later.
const G2 = "G2"

// handoffRefusals are the reasons of a checkpoint refused because its
// lease is being let go (not because the checkpoint was invalid or the
// lease near its own-view expiry).
var handoffRefusals = map[string]bool{"the lease is being handed over": true, "the lease is being released": true, "the lease was released": true}

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
	o   *Options
	out []Violation
	// checkpointed counts the planned moves whose processor had
	// checkpointed every record delivered to it
	checkpointed int
}

// g1State is one process's checkpoints on one key.
type g1State struct {
	landed    Pos
	landedRaw engine.Checkpoint
	pending   []g1Req
	// frozen at the release's send
	sent   bool
	x      Pos
	xRaw   engine.Checkpoint
	xSeq   uint64
	sentAt time.Duration
	high   Seq // the highest record delivered to its processor
	// G2: pendingAtSend are the requests unanswered when the release was
	// sent; refused the first refusal for the handoff's sake before it;
	// handAt when a handoff began (0: none); initialized, notified and
	// answered: the processor was initialized, asked to shut down, and
	// answered
	pendingAtSend []g1Req
	refused       *trace.Record
	handAt        time.Duration
	initialized   bool
	notified      bool
	answered      bool
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

func newG1(o *Options) *g1Checker {
	return &g1Checker{o: o}
}

// state returns proc's state on ks, created if new.
func (c *g1Checker) state(ks *keyState, proc int32) *g1State {
	sl := ks.slotNew(proc)
	if sl.g1 == nil {
		sl.g1 = &g1State{}
	}
	return sl.g1
}

// stateOf returns proc's state on ks, or nil.
func stateOf(ks *keyState, proc int32) *g1State {
	if sl := ks.slot(proc); sl != nil {
		return sl.g1
	}
	return nil
}

// observe feeds the records G1 reads; ks is r.Key's.
func (c *g1Checker) observe(r *trace.Record, ks *keyState) {
	switch r.Kind {
	case trace.Delivered:
		if m := ks.move; m != nil && m.next == r.Proc {
			c.firstBatch(r, ks, m)
		}
		s := c.state(ks, r.Proc)
		if l := LastOf(r); l.Compare(s.high) > 0 {
			s.high = l
		}
	case trace.Acting:
		c.acting(r, ks)
		s := c.state(ks, r.Proc)
		if p := PosOf(r.Checkpoint); !s.sent && p.Compare(s.landed) > 0 {
			s.landed, s.landedRaw = p, r.Checkpoint // the stored checkpoint it starts from
		}
	case trace.CheckpointRequested:
		s := c.state(ks, r.Proc)
		if p := PosOf(r.Checkpoint); !s.sent && p.Compare(s.landed) > 0 {
			s.pending = append(s.pending, g1Req{pos: p, cp: r.Checkpoint, seq: r.Seq})
		}
	case trace.CheckpointRejected:
		s := stateOf(ks, r.Proc)
		if s == nil || s.sent {
			return
		}
		if handoffRefusals[r.Reason] && s.refused == nil {
			x := *r
			s.refused = &x
		}
		p := PosOf(r.Checkpoint)
		for i := len(s.pending) - 1; i >= 0; i-- {
			if s.pending[i].pos.Compare(p) == 0 {
				s.pending = append(s.pending[:i], s.pending[i+1:]...)
				break
			}
		}
	case trace.CheckpointWritten:
		s := stateOf(ks, r.Proc)
		if s == nil || s.sent {
			return
		}
		p := PosOf(r.Checkpoint)
		if p.Compare(s.landed) > 0 {
			s.landed, s.landedRaw = p, r.Checkpoint
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
		s := c.state(ks, r.Proc)
		if !s.sent {
			s.freeze(r)
		}
	case trace.LeaseReleased:
		var s *g1State
		if sl := ks.slot(r.Proc); sl != nil {
			s, sl.g1 = sl.g1, nil
		}
		if !Planned(r.Reason) {
			return
		}
		if s == nil {
			s = &g1State{}
		}
		if !s.sent {
			s.freeze(r) // a history without the release's send
		}
		c.final(r, s)
		m := &plannedMove{from: r.Proc, who: who(r), reason: r.Reason, x: s.x, xRaw: s.xRaw, xSeq: s.xSeq, at: r.T, relSeq: r.Seq, next: -1}
		m.clean = m.x.rank == 1 && !s.high.IsZero() && m.x.seq.Compare(s.high) >= 0
		if m.clean {
			c.checkpointed++
		}
		ks.move = m
	case trace.LeaseLost:
		if sl := ks.slot(r.Proc); sl != nil {
			sl.g1 = nil
		}
	case trace.HandingOver:
		c.state(ks, r.Proc).handAt = r.T
	case trace.KindInitialized:
		s := c.state(ks, r.Proc)
		s.initialized, s.notified, s.answered = true, false, false
	case trace.KindNotice:
		if r.Reason == engine.NoticeShutdownRequested.String() {
			c.state(ks, r.Proc).notified = true
		}
	case trace.KindDone:
		if s := stateOf(ks, r.Proc); s != nil && s.notified && r.First == "" {
			s.answered = true
		}
	}
}

// timedOut reports whether a handoff begun at handAt had passed the
// engine's deadline (half a lease duration on the holder's clock) by t:
// then the holder lets go whatever its processor does.
func (c *g1Checker) timedOut(handAt, t time.Duration) bool {
	tm := c.o.Timing
	if handAt == 0 || tm == nil {
		return false
	}
	return t >= handAt+time.Duration(float64(tm.LeaseDuration/2)/(1+tm.Drift))-timingSlack
}

// final checks G2 at the planned release r of s's lease.
func (c *g1Checker) final(r *trace.Record, s *g1State) {
	if len(c.out) >= c.o.max() {
		return
	}
	v := Violation{Invariant: G2, Key: r.Key, Workers: []string{who(r)}, From: s.sentAt, To: r.T, Seqs: []uint64{r.Seq}}
	switch {
	case len(s.pendingAtSend) > 0:
		q := s.pendingAtSend[len(s.pendingAtSend)-1]
		v.Seqs = []uint64{q.seq, r.Seq}
		v.Detail = who(r) + " released the lease (" + r.Reason + ") with " + itoa(len(s.pendingAtSend)) + " checkpoint(s) its processor had asked for not written (the last " + q.cp.String() + "): the next owner delivers them again"
	case s.refused != nil && c.o.Timing != nil && !c.timedOut(s.handAt, s.refused.T):
		v.From, v.Seqs = s.refused.T, []uint64{s.refused.Seq, r.Seq}
		v.Detail = who(r) + " refused the checkpoint " + s.refused.Checkpoint.String() + " its processor asked for (" + s.refused.Reason + ") before it let the lease go (" + r.Reason + "), within half a lease duration of the handoff's start"
	case c.o.Timing != nil && s.initialized && !(s.notified && s.answered) && !c.timedOut(s.handAt, s.sentAt):
		what := "never asked its processor to shut down"
		if s.notified {
			what = "did not wait for its processor's answer to ShutdownRequested"
		}
		v.Detail = who(r) + " released the lease (" + r.Reason + ") but " + what + ": the processor had no chance to checkpoint"
	default:
		return
	}
	c.out = append(c.out, v)
}

// freeze records, at the release's send r, the highest checkpoint the
// processor had asked for and the worker had not refused.
func (s *g1State) freeze(r *trace.Record) {
	s.sent, s.sentAt = true, r.T
	s.x, s.xRaw = s.landed, s.landedRaw
	for _, q := range s.pending {
		if q.pos.Compare(s.x) > 0 {
			s.x, s.xRaw, s.xSeq = q.pos, q.cp, q.seq
		}
	}
	s.pendingAtSend = s.pending
	s.pending = nil
}

// acting is the first act of a tenure (TraceActing): if it follows a
// planned move of its key by another process, it must start at or after
// what the old owner's processor checkpointed before the release.
func (c *g1Checker) acting(r *trace.Record, ks *keyState) {
	m := ks.move
	if m == nil || m.next >= 0 {
		return
	}
	if m.from == r.Proc || len(c.out) >= c.o.max() {
		ks.move = nil
		return
	}
	y := PosOf(r.Checkpoint)
	if y.Compare(m.x) >= 0 {
		if m.x.rank == 1 {
			m.next = r.Proc // its first batch must hold nothing checkpointed
		} else {
			ks.move = nil
		}
		return
	}
	ks.move = nil
	seqs := []uint64{m.relSeq, r.Seq}
	if m.xSeq != 0 {
		seqs = []uint64{m.xSeq, m.relSeq, r.Seq}
	}
	c.out = append(c.out, Violation{Invariant: G1, Key: r.Key, Workers: []string{who(r), m.who}, From: m.at, To: r.T, Seqs: seqs,
		Detail: "after the planned release by " + m.who + " (" + m.reason + "), " + who(r) + " started at " + r.Checkpoint.String() +
			", before " + m.xRaw.String() + ", which " + m.who + "'s processor had checkpointed before the release was sent: the records between are delivered again"})
}

// firstBatch is the first batch the next owner delivered after a planned
// move: it must hold no record at or below x, what the old owner's
// processor had checkpointed ("a planned move re-delivers nothing the
// processor checkpointed"; when that covered everything it had
// received, the move re-delivers nothing at all).
func (c *g1Checker) firstBatch(r *trace.Record, ks *keyState, m *plannedMove) {
	ks.move = nil
	if r.Count == 0 || FirstOf(r).Compare(m.x.seq) > 0 || len(c.out) >= c.o.max() {
		return
	}
	what := "whose processor had checkpointed " + m.xRaw.String()
	if m.clean {
		what = "whose processor had checkpointed every record it received (up to " + m.xRaw.String() + ")"
	}
	c.out = append(c.out, Violation{Invariant: G1, Key: r.Key, Workers: []string{who(r), m.who}, From: m.at, To: r.T, Seqs: []uint64{m.relSeq, r.Seq},
		Detail: "after the planned release by " + m.who + " (" + m.reason + "), " + what + ", " + who(r) + " delivered " + r.First + " again"})
}
