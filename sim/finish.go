package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/ddbcost"
	"github.com/shardlease/shardlease/sim/check"
)

// finish ends the run's checks and returns its result.
func (s *simulator) finish() (*Result, error) {
	if s.rec.sink != nil {
		if err := s.rec.sink.Flush(); err != nil {
			return nil, err
		}
	}
	recs := s.rec.kept()
	res := &Result{World: s.w, Schedule: s.fs.schedule, Drawn: s.fs.drawn, Inside: len(s.fs.outside) == 0, Outside: s.fs.outside,
		TraceHash: s.rec.hash.Sum(), Events: s.events, Records: s.rec.n, VirtualSeconds: s.end.Seconds(),
		Final: s.tbl.Snapshot().Leases, Replay: ReplayCommand(s.o), Ops: s.opCounts(), Moments: s.ops.moments.kept}
	rep, f := s.rec.checks.Finish(res.Final, true)
	lin := s.checkLin()
	res.Lin = lin.result
	if lin.violation != nil {
		rep.Violations = append(rep.Violations, *lin.violation)
	}
	for _, v := range rep.Violations {
		v.Seed = s.o.Seed
		v.Replay = res.Replay
		if recs != nil {
			v.Excerpt = check.Excerpt(recs, v, excerptPad(s.w), 40)
		}
		if !res.Inside && toleratedOutside(v) {
			res.Tolerated = append(res.Tolerated, v)
			continue
		}
		res.Violations = append(res.Violations, v)
	}
	res.Figures = NewFigures(f, s.full.LeaseDuration, s.wl.puts, rep.LostToRetention)
	if !s.w.Etcd.On {
		prices := s.o.Prices
		if prices == (ddbcost.Prices{}) {
			prices = ddbcost.DefaultPrices
		}
		res.Figures.Cost = s.cost.figures(f.ShardHours, prices)
	}
	res.Trace = recs
	return res, nil
}

// NewFigures summarizes the checkers' figures f of a run whose lease
// duration was lease, with puts records put and lost of them lost to
// retention (sim/driversim's runs are summarized the same way).
func NewFigures(f check.Figures, lease time.Duration, puts, lost int) Figures {
	out := Figures{LeaseDuration: lease,
		Failovers: len(f.Failovers), FailoverP50: check.Percentile(f.Failovers, 50), FailoverP99: check.Percentile(f.Failovers, 99), FailoverMax: check.Percentile(f.Failovers, 100),
		PlannedMoves: f.PlannedMoves, CheckpointedMoves: f.CheckpointedMoves, HandoffGapP50: check.Percentile(f.HandoffGaps, 50), HandoffGapP99: check.Percentile(f.HandoffGaps, 99), HandoffGapMax: check.Percentile(f.HandoffGaps, 100),
		Handoffs: f.Handoffs, Puts: puts, LostToRetention: lost, Bounded: f.Bounded}
	if f.PlannedMoves > 0 {
		out.RedeliveriesPerPlannedMove = float64(f.PlannedRedelivered) / float64(f.PlannedMoves)
	}
	if f.Handoffs > 0 {
		out.RedeliveriesPerHandoff = float64(f.Redelivered) / float64(f.Handoffs)
	}
	if f.ShardHours > 0 {
		out.TableOpsPerShardHour = float64(f.StoreCalls) / f.ShardHours
		out.TableRowsPerShardHour = float64(f.RowsRead) / f.ShardHours
		out.StreamOpsPerShardHour = float64(f.StreamCalls) / f.ShardHours
	}
	return out
}

// linCheck is the outcome of checkLin.
type linCheck struct {
	result    LinResult
	violation *check.Violation
}

// checkLin ends invariant Lin: the lease table's history in the run's
// records, checked online (linearizability.Online) key by key in windows,
// is linearizable. A key whose check ran out of budget is Unknown, which
// is not a violation.
func (s *simulator) checkLin() linCheck {
	if s.rec.lin == nil {
		return linCheck{result: LinResult{Skipped: true}}
	}
	r := s.rec.lin.Finish()
	out := linCheck{result: LinResult{Checked: true, Ok: r.Ok(), Unknown: len(r.TimedOut) > 0, Illegal: r.Illegal, TimedOut: len(r.TimedOut),
		Ops: r.Ops, Keys: r.Keys, UnknownWrites: r.UnknownWrites, Left: r.Skipped}}
	if len(r.Illegal) == 0 {
		return out
	}
	// the window: the first illegal key's first window that no order of
	// its calls explains
	key, w := r.Illegal[0], r.Windows[0]
	out.violation = &check.Violation{Invariant: Lin, Key: key, From: w[0], To: w[1],
		Detail: fmt.Sprintf("the lease table's history is not linearizable on %d of %d keys: %s (%d calls checked, %d writes of unknown outcome; no order of the calls of %s between %v and %v explains their outcomes)",
			len(r.Illegal), r.Keys, keyList(r.Illegal), r.Ops, r.UnknownWrites, key, w[0], w[1])}
	return out
}

// keyList joins keys, the first five of them.
func keyList(keys []string) string {
	if len(keys) > 5 {
		return strings.Join(keys[:5], ", ") + ", ..."
	}
	return strings.Join(keys, ", ")
}

// toleratedOutside reports whether a violation of a run outside the
// assumptions is one that those assumptions exist to prevent: S1 (two
// acting owners), the latency and balance bounds (T1-T3, B1, derived for
// clocks within the drift bound and pauses within the margin), S3's "a
// new owner starts at or after the checkpoint"
// (a second owner starts from the row it took while the first writes on),
// and G1 between two processes of one owner id (a second live process with
// a worker's id resumes "its own" lease at once, from the row as it read
// it, as a restart under the same id may: only a duplicate owner id, which
// is outside the assumptions, makes that a re-delivery). Every other
// violation breaks the run whatever its tier.
func toleratedOutside(v check.Violation) bool {
	switch v.Invariant {
	case check.S1, check.T1, check.T2, check.T3, check.B1:
		// the latency and balance bounds hold only inside the
		// assumptions, as single ownership does
		return true
	case check.S3:
		return strings.HasPrefix(v.Detail, check.S3StartPrefix)
	case check.G1:
		return len(v.Workers) == 2 && ownerOf(v.Workers[0]) == ownerOf(v.Workers[1])
	}
	return false
}

// ownerOf is the owner id of a process name "owner#proc".
func ownerOf(proc string) string {
	if i := strings.LastIndexByte(proc, '#'); i >= 0 {
		return proc[:i]
	}
	return proc
}
