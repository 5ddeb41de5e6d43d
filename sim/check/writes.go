package check

import (
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// rows is the checkers' replay of the lease table from the applied writes
// (each key's keyState.row).
type rows struct{ keys *keyTable }

// row is the replay of one lease row.
type row struct {
	exists     bool
	known      bool // false until the first applied write of the key is seen
	owner      string
	counter    int64
	checkpoint engine.Checkpoint
	cp         Pos // checkpoint, parsed
	// high is the highest checkpoint the key ever stored (survives deletes).
	high    engine.Checkpoint
	highPos Pos
	hasHigh bool
	lastT   time.Duration
	lastSeq uint64
	lastBy  string
}

func (rs *rows) get(ks *keyState) *row {
	w := ks.row
	if w == nil {
		w = &ks.rowv
		ks.row = w
	}
	return w
}

// apply updates the replayed row with an applied write.
func (w *row) apply(r *trace.Record, cp Pos) {
	w.known = true
	w.lastT, w.lastSeq, w.lastBy = r.T, r.Seq, who(r)
	if r.Op == engine.OpDeleteLease {
		w.exists = false
		return
	}
	w.exists = true
	w.owner = r.RowOwner
	w.counter = r.Counter
	w.checkpoint = r.Checkpoint
	w.cp = cp
	if !w.hasHigh || w.cp.Compare(w.highPos) > 0 {
		w.high = r.Checkpoint
		w.highPos = w.cp
		w.hasHigh = true
	}
}

// s2Checker reports writes that landed although their writer did not hold
// the row (see CheckS2).
type s2Checker struct {
	o   *Options
	out []Violation
}

// applied checks an applied write r against the row w it landed on
// (before r is applied).
func (c *s2Checker) applied(r *trace.Record, w *row) {
	if engine.IsWorkerRow(r.Key) {
		// workers' hello and leaving rows hold no lease: created and deleted again and
		// again with the same contents, a history recorded from real
		// processes cannot tell their incarnations apart
		return
	}
	add := func(detail string) {
		if len(c.out) >= c.o.max() {
			return
		}
		ws := []string{who(r)}
		if w.lastBy != "" && w.lastBy != who(r) {
			ws = append(ws, w.lastBy)
		}
		c.out = append(c.out, Violation{Invariant: S2, Key: r.Key, Workers: ws, From: w.lastT, To: r.T,
			Detail: detail, Seqs: []uint64{w.lastSeq, r.Seq}})
	}
	switch r.Op {
	case engine.OpCreateLease:
		if w.known && w.exists {
			add("a create landed over an existing row of owner " + q(w.owner))
		}
	case engine.OpUpdateLease, engine.OpDeleteLease:
		if !w.known {
			break
		}
		if !w.exists {
			add(r.Op.String() + " (" + r.Reason + ") landed on a row that did not exist")
			break
		}
		// a holder's write must come from the row's owner; a delete
		// (cleanup of a finished row) may also remove an unowned row
		// (a take or the assigner's write is fenced by its condition
		// only: checked below)
		holderWrite := r.Reason != trace.WriteTake && r.Reason != trace.WriteAssign && !(r.Op == engine.OpDeleteLease && w.owner == "")
		if holderWrite && w.owner != r.Owner {
			add(r.Reason + " write from " + q(r.Owner) + " landed while the row was held by " + q(w.owner) + " at counter " + itoa(int(w.counter)) + fenceNote(r))
		} else if w.counter != r.ExpCounter || w.owner != r.ExpOwner {
			add(r.Reason + " write from " + q(r.Owner) + " expecting owner " + q(r.ExpOwner) + " counter " + itoa(int(r.ExpCounter)) + " landed on owner " + q(w.owner) + " counter " + itoa(int(w.counter)) + fenceNote(r))
		}
	}
}

func fenceNote(r *trace.Record) string {
	if r.Unconditional {
		return " (the write carried no condition)"
	}
	return ""
}

func q(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// S3StartPrefix begins the detail of an S3 violation of the clause "a new
// owner resumes at or after the stored checkpoint". Only that clause
// depends on single ownership: with two live owners (a run outside the
// assumptions) a process may start from the row it took while the other
// writes on; the simulator tolerates it there, like S1.
const S3StartPrefix = "new owner starts"

// reactsAfterMargin reports whether an acting record's reason is a
// holder's acting again after its safety margin, within one tenure.
func reactsAfterMargin(reason string) bool { return strings.HasSuffix(reason, "after the margin") }

// s3Checker reports lost checkpoints (see CheckS3).
type s3Checker struct {
	o    *Options
	rows *rows
	out  []Violation
}

func (c *s3Checker) add(v Violation) {
	if len(c.out) < c.o.max() {
		v.Invariant = S3
		c.out = append(c.out, v)
	}
}

// applied checks an applied write r against the row w (before r).
func (c *s3Checker) applied(r *trace.Record, w *row, cp Pos) {
	if r.Op == engine.OpDeleteLease {
		return
	}
	if w.hasHigh && cp.Compare(w.highPos) < 0 {
		c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: w.lastT, To: r.T, Seqs: []uint64{w.lastSeq, r.Seq},
			Detail: "stored checkpoint went back from " + w.high.String() + " to " + r.Checkpoint.String() + " (" + r.Op.String() + " " + r.Reason + ")"})
	}
}

// acked checks a checkpoint acknowledged to the processor.
func (c *s3Checker) acked(r *trace.Record, ks *keyState, cp Pos) {
	if r.Outcome != trace.OutcomeOK {
		return
	}
	w := ks.row
	if w == nil || !w.hasHigh || w.highPos.Compare(cp) < 0 {
		stored := "nothing"
		if w != nil && w.hasHigh {
			stored = w.high.String()
		}
		c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
			Detail: "checkpoint " + r.Checkpoint.String() + " acknowledged to the processor while the table held " + stored})
	}
}

// acting checks the engine's own start on a key: it read the row it took,
// and no one else may write it until it stops (the processor may be told
// later, so its start is not compared here).
//
// A holder that acts again after its safety margin (its renewal, or its
// session's, applied late) is no new owner: it goes on from where it was,
// and the row it reports may not show a checkpoint write of its own whose
// outcome it does not know yet (swarm seed 2334 in session renewal).
func (c *s3Checker) acting(r *trace.Record, ks *keyState, cp Pos) {
	w := ks.row
	if w == nil || !w.exists || !w.hasHigh || r.Checkpoint.Sequence == "" || reactsAfterMargin(r.Reason) {
		return
	}
	if cp.Compare(w.cp) < 0 {
		c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: w.lastT, To: r.T, Seqs: []uint64{w.lastSeq, r.Seq},
			Detail: S3StartPrefix + " at " + r.Checkpoint.String() + " before the stored checkpoint " + w.checkpoint.String()})
	}
}

// finish compares the final table with the replayed rows and returns the
// violations ordered by time.
func (c *s3Checker) finish(final []engine.Lease, finalKnown bool) []Violation {
	if finalKnown {
		fin := map[string]engine.Lease{}
		for _, l := range final {
			fin[l.Key] = l
		}
		for _, ks := range c.rows.keys.sorted(func(ks *keyState) bool { return ks.row != nil }) {
			key, w := ks.name, ks.row
			l, ok := fin[key]
			switch {
			case w.exists && !ok:
				c.add(Violation{Key: key, From: w.lastT, To: c.o.End, Detail: "row missing from the final table; last write stored checkpoint " + w.checkpoint.String()})
			case ok && w.exists && PosOf(l.Checkpoint).Compare(w.cp) < 0:
				c.add(Violation{Key: key, From: w.lastT, To: c.o.End, Detail: "final table checkpoint " + l.Checkpoint.String() + " is behind the last write " + w.checkpoint.String()})
			}
		}
	}
	out := c.out
	c.out = nil
	sortViolations(out)
	return out
}
