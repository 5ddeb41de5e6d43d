package livecheck

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim/trace"
)

// Lin is the invariant that the lease table's history (every lease-table
// call of every worker of the run, as the callers saw it) is linearizable,
// checked by package linearizability (porcupine).
const Lin = "Lin"

// DefaultLinSkew is the clock-skew bound `live check` widens call windows
// by unless told otherwise: processes on one host share a clock.
const DefaultLinSkew = 50 * time.Millisecond

// maxVisualized caps the HTML pages written for illegal keys.
const maxVisualized = 10

// LinReport is the result of the linearizability check.
type LinReport struct {
	// Ok: every key's history is linearizable and no check timed out.
	Ok bool
	// Unknown: the check of some keys (TimedOut) ran out of time: neither
	// a pass nor a violation.
	Unknown bool
	// Illegal are the keys whose histories are not linearizable.
	Illegal  []string
	TimedOut []string
	// Ops operations checked on Keys keys, UnknownWrites of them writes of
	// unknown outcome (timeouts, errors, and every write that did not end
	// ok: the SDK's hidden retries); Skipped operations left out
	// (throttled calls, eventually consistent scans, operations on
	// Uncreated keys); Scans the consistent
	// scans checked.
	Ops, Keys, UnknownWrites, Skipped, Scans int
	// Uncreated are the keys left out because no CreateLease of the
	// history created them (their operations count as Skipped): their row
	// may predate the history.
	Uncreated int
	// Skew is how much every call's window was widened on each side.
	Skew    time.Duration
	Elapsed time.Duration
	Info    string
	// Error: the history could not be interpreted (a violation).
	Error string
	// Visualizations are the HTML pages written for illegal keys.
	Visualizations []string
}

// linHistory returns the lease-table history of the merged records, as
// the callers saw it: FromTrace's writes and GetLease reads, plus the
// scans whose replies carry their rows (see history.EncodeScanRows), with
// every write that did not end ok made unknown (the recorder cannot see
// the SDK's retries) and every window widened by skew.
func linHistory(recs []trace.Record, skew time.Duration) (h []linearizability.Op, f linFigures, err error) {
	h, err = linearizability.FromTrace(recs)
	if err != nil {
		return nil, f, err
	}
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindReply || r.Op != engine.OpListLeases || r.Outcome != trace.OutcomeOK {
			continue
		}
		s, err := history.DecodeScanRows(r)
		if err != nil {
			return nil, f, err
		}
		op := linearizability.Op{Client: int(r.Proc), ID: r.Call, Call: int64(r.Sent), Return: int64(r.T),
			Input:  linearizability.Input{Op: engine.OpListLeases, Consistent: s.Consistent},
			Output: linearizability.Output{Outcome: linearizability.OutcomeOK, Malformed: s.Malformed}}
		if s.Consistent && !s.Known {
			continue
		}
		if s.Consistent {
			f.scans++
		}
		for _, l := range s.Leases {
			op.Output.Rows = append(op.Output.Rows, linearizability.TraceRowOf(l))
		}
		h = append(h, op)
	}
	slices.SortStableFunc(h, func(a, b linearizability.Op) int { return cmp.Compare(a.Call, b.Call) })
	h, uncreated, dropped := createdKeysOnly(h)
	h = linearizability.AssumeHiddenRetries(h)
	if skew > 0 {
		h = linearizability.Widen(h, skew)
	}
	f.uncreated, f.dropped = uncreated, dropped
	return h, f, nil
}

type linFigures struct{ scans, uncreated, dropped int }

// createdKeysOnly returns h without the operations on keys that no
// CreateLease of h created (ended ok): such a row may have existed before
// the history began, in a version the history does not show (a table
// reused across runs), and the check starts from an empty table. It also
// returns how many keys and operations it left out.
func createdKeysOnly(h []linearizability.Op) ([]linearizability.Op, int, int) {
	created := map[string]bool{}
	named := map[string]bool{}
	for i := range h {
		in := &h[i].Input
		key := in.Key
		if key == "" {
			key = in.Row.Key
		}
		if in.Op == engine.OpListLeases {
			for _, r := range h[i].Output.Rows {
				named[r.Key] = true
			}
			continue
		}
		named[key] = true
		if in.Op == engine.OpCreateLease && h[i].Output.Outcome == linearizability.OutcomeOK {
			created[key] = true
		}
	}
	uncreated := 0
	for k := range named {
		if !created[k] {
			uncreated++
		}
	}
	if uncreated == 0 {
		return h, 0, 0
	}
	out := make([]linearizability.Op, 0, len(h))
	dropped := 0
	for _, op := range h {
		in := &op.Input
		if in.Op == engine.OpListLeases {
			rows := make([]linearizability.Row, 0, len(op.Output.Rows))
			for _, r := range op.Output.Rows {
				if created[r.Key] {
					rows = append(rows, r)
				}
			}
			var mal []string
			for _, k := range op.Output.Malformed {
				if created[k] {
					mal = append(mal, k)
				}
			}
			op.Output.Rows, op.Output.Malformed = rows, mal
			out = append(out, op)
			continue
		}
		key := in.Key
		if key == "" {
			key = in.Row.Key
		}
		if !created[key] {
			dropped++
			continue
		}
		out = append(out, op)
	}
	return out, uncreated, dropped
}

// checkLin runs the linearizability check into rep.
func checkLin(recs []trace.Record, o Options, rep *Report) {
	lr := &rep.Lin
	lr.Skew = o.LinSkew
	h, f, err := linHistory(recs, o.LinSkew)
	if err == nil {
		var res linearizability.Result
		res, err = linearizability.Config{Timeout: o.LinTimeout}.Check(h)
		if err == nil {
			lr.Ok, lr.Unknown, lr.Illegal, lr.TimedOut = res.Ok, res.Unknown, res.Illegal, res.TimedOut
			lr.Ops, lr.Keys, lr.UnknownWrites, lr.Skipped = res.Ops, res.Keys, res.UnknownWrites, res.Skipped+f.dropped
			lr.Scans, lr.Uncreated, lr.Elapsed, lr.Info = f.scans, f.uncreated, res.Elapsed, res.Info
			rep.linHist, rep.linTimeout = h, o.LinTimeout
		}
	}
	rep.Invariants[Lin] = len(lr.Illegal)
	if err != nil {
		lr.Error = err.Error()
		rep.Invariants[Lin] = 1
	}
}

// VisualizeLin writes porcupine's HTML visualization of each key whose
// history is not linearizable (up to 10) into dir, as lin-<key>.html, and
// lists them in Lin.Visualizations.
func (r *Report) VisualizeLin(dir string) error {
	for i, key := range r.Lin.Illegal {
		if i == maxVisualized {
			break
		}
		path := filepath.Join(dir, "lin-"+safeName(key)+".html")
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = linearizability.Config{Timeout: r.linTimeout}.Visualize(f, r.linHist, key)
		if e := f.Close(); err == nil {
			err = e
		}
		if err != nil {
			return fmt.Errorf("visualizing %s: %w", key, err)
		}
		r.Lin.Visualizations = append(r.Lin.Visualizations, path)
	}
	return nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// linLine is the result of the check, for people.
func (l *LinReport) line() string {
	var verdict string
	switch {
	case l.Error != "":
		return "ERROR: " + l.Error
	case len(l.Illegal) > 0:
		verdict = "ILLEGAL keys: " + strings.Join(l.Illegal, ", ")
		if l.Unknown {
			verdict += fmt.Sprintf("; timed out on %d keys", len(l.TimedOut))
		}
	case l.Unknown:
		verdict = "UNKNOWN (timed out, neither pass nor violation) on keys: " + strings.Join(l.TimedOut, ", ")
	default:
		verdict = "ok"
	}
	s := fmt.Sprintf("%s; %d ops checked on %d keys (%d writes of unknown outcome, %d consistent scans), %d skipped",
		verdict, l.Ops, l.Keys, l.UnknownWrites, l.Scans, l.Skipped)
	if l.Uncreated > 0 {
		s += fmt.Sprintf(" (incl. those on %d keys not created in the history)", l.Uncreated)
	}
	return s + fmt.Sprintf("; windows widened by %v; %s", l.Skew, secs(l.Elapsed))
}
