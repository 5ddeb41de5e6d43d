package reference

import (
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// row is the checkers' replay of one lease row from the applied writes.
type row struct {
	exists     bool
	known      bool // false until the first applied write of the key is seen
	owner      string
	counter    int64
	checkpoint engine.Checkpoint
	// high is the highest checkpoint the key ever stored (survives deletes).
	high    engine.Checkpoint
	hasHigh bool
	lastT   time.Duration
	lastSeq uint64
	lastBy  string
}

// CheckS2 replays the applied table writes in apply order and reports every
// write that landed although its writer did not hold the row: a holder's
// write (renew, checkpoint, release, delete) over a row another owner held
// or over a version it had not seen, a take over a version it had not seen,
// a create over an existing row.
func CheckS2(recs []trace.Record, o Options) []Violation {
	rows := map[string]*row{}
	var out []Violation
	add := func(r *trace.Record, prev *row, detail string) {
		if len(out) >= maxOf(o) {
			return
		}
		ws := []string{who(r)}
		if prev.lastBy != "" && prev.lastBy != who(r) {
			ws = append(ws, prev.lastBy)
		}
		from := prev.lastT
		out = append(out, Violation{Invariant: S2, Key: r.Key, Workers: ws, From: from, To: r.T,
			Detail: detail, Seqs: []uint64{prev.lastSeq, r.Seq}})
	}
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindApply || r.Outcome != trace.OutcomeOK || engine.IsWorkerRow(r.Key) {
			// (workers' hello and leaving rows hold no lease: created and deleted again
			// and again with the same contents, a history recorded from
			// real processes cannot tell their incarnations apart)
			continue
		}
		w := rows[r.Key]
		if w == nil {
			w = &row{}
			rows[r.Key] = w
		}
		switch r.Op {
		case engine.OpCreateLease:
			if w.known && w.exists {
				add(r, w, "a create landed over an existing row of owner "+q(w.owner))
			}
		case engine.OpUpdateLease, engine.OpDeleteLease:
			if !w.known {
				break
			}
			if !w.exists {
				add(r, w, r.Op.String()+" ("+r.Reason+") landed on a row that did not exist")
				break
			}
			// a holder's write must come from the row's owner; a delete
			// (cleanup of a finished row) may also remove an unowned row
			// (a take or the assigner's write is fenced by its condition
			// only: checked below)
			holderWrite := r.Reason != trace.WriteTake && r.Reason != trace.WriteAssign && !(r.Op == engine.OpDeleteLease && w.owner == "")
			if holderWrite && w.owner != r.Owner {
				add(r, w, r.Reason+" write from "+q(r.Owner)+" landed while the row was held by "+q(w.owner)+" at counter "+itoa(int(w.counter))+fenceNote(r))
			} else if w.counter != r.ExpCounter || w.owner != r.ExpOwner {
				add(r, w, r.Reason+" write from "+q(r.Owner)+" expecting owner "+q(r.ExpOwner)+" counter "+itoa(int(r.ExpCounter))+" landed on owner "+q(w.owner)+" counter "+itoa(int(w.counter))+fenceNote(r))
			}
		}
		apply(w, r)
	}
	return out
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

// apply updates the replayed row with an applied write.
func apply(w *row, r *trace.Record) {
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
	if !w.hasHigh || cmpCP(r.Checkpoint, w.high) > 0 {
		w.high = r.Checkpoint
		w.hasHigh = true
	}
}

// S3StartPrefix begins the detail of an S3 violation of the clause "a new
// owner resumes at or after the stored checkpoint". Only that clause
// depends on single ownership: with two live owners (a run outside the
// assumptions) a process may start from the row it took while the other
// writes on; the simulator tolerates it there, like S1.
const S3StartPrefix = "new owner starts"

// CheckS3 reports a stored checkpoint that decreases (also across a delete
// and re-create of the row), an acknowledged checkpoint that the table does
// not hold when it is acknowledged or loses later, a new owner that starts
// before the stored checkpoint, and a final table behind the writes that
// landed.
func CheckS3(h History, o Options) []Violation {
	rows := map[string]*row{}
	var out []Violation
	add := func(v Violation) {
		if len(out) < maxOf(o) {
			v.Invariant = S3
			out = append(out, v)
		}
	}
	for i := range h.Records {
		r := &h.Records[i]
		switch r.Kind {
		case trace.KindApply:
			if r.Outcome != trace.OutcomeOK || r.Op == engine.OpDeleteLease {
				if r.Outcome == trace.OutcomeOK {
					if w := rows[r.Key]; w != nil {
						apply(w, r)
					}
				}
				continue
			}
			w := rows[r.Key]
			if w == nil {
				w = &row{}
				rows[r.Key] = w
			}
			if w.hasHigh && cmpCP(r.Checkpoint, w.high) < 0 {
				add(Violation{Key: r.Key, Workers: []string{who(r)}, From: w.lastT, To: r.T, Seqs: []uint64{w.lastSeq, r.Seq},
					Detail: "stored checkpoint went back from " + w.high.String() + " to " + r.Checkpoint.String() + " (" + r.Op.String() + " " + r.Reason + ")"})
			}
			apply(w, r)
		case trace.KindCheckpointAck:
			if r.Outcome != trace.OutcomeOK {
				continue
			}
			w := rows[r.Key]
			if w == nil || !w.hasHigh || cmpCP(w.high, r.Checkpoint) < 0 {
				stored := "nothing"
				if w != nil && w.hasHigh {
					stored = w.high.String()
				}
				add(Violation{Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
					Detail: "checkpoint " + r.Checkpoint.String() + " acknowledged to the processor while the table held " + stored})
			}
		case trace.Acting:
			// the engine's own start: it read the row it took, and no one
			// else may write it until it stops (the processor may be told
			// later, so its start is not compared here)
			// (a holder acting again after its margin goes on within its
			// tenure: not a start)
			w := rows[r.Key]
			if w == nil || !w.exists || !w.hasHigh || r.Checkpoint.Sequence == "" || strings.HasSuffix(r.Reason, "after the margin") {
				continue
			}
			if cmpCP(r.Checkpoint, w.checkpoint) < 0 {
				add(Violation{Key: r.Key, Workers: []string{who(r)}, From: w.lastT, To: r.T, Seqs: []uint64{w.lastSeq, r.Seq},
					Detail: S3StartPrefix + " at " + r.Checkpoint.String() + " before the stored checkpoint " + w.checkpoint.String()})
			}
		}
	}
	if h.FinalKnown {
		final := map[string]engine.Lease{}
		for _, l := range h.Final {
			final[l.Key] = l
		}
		for key, w := range rows {
			l, ok := final[key]
			switch {
			case w.exists && !ok:
				add(Violation{Key: key, From: w.lastT, To: o.End, Detail: "row missing from the final table; last write stored checkpoint " + w.checkpoint.String()})
			case ok && w.exists && cmpCP(l.Checkpoint, w.checkpoint) < 0:
				add(Violation{Key: key, From: w.lastT, To: o.End, Detail: "final table checkpoint " + l.Checkpoint.String() + " is behind the last write " + w.checkpoint.String()})
			}
		}
	}
	sortViolations(out)
	return out
}
