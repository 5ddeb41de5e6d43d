package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/linearizability"
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
	res := &Result{World: s.w, Schedule: s.fs.schedule, Inside: len(s.fs.outside) == 0, Outside: s.fs.outside,
		TraceHash: s.rec.hash.Sum(), Events: s.events, Records: s.rec.n, VirtualSeconds: s.end.Seconds(),
		Final: s.tbl.Snapshot().Leases, Replay: ReplayCommand(s.o)}
	rep, f := s.rec.checks.Finish(res.Final, true)
	lin, err := s.checkLin()
	if err != nil {
		return nil, err
	}
	res.Lin = lin.result
	if lin.violation != nil {
		rep.Violations = append(rep.Violations, *lin.violation)
	}
	for _, v := range rep.Violations {
		v.Seed = s.o.Seed
		v.Replay = res.Replay
		if recs != nil {
			v.Excerpt = check.Excerpt(recs, v, 2*s.w.Engine.LeaseDuration+time.Second, 40)
		}
		if !res.Inside && (v.Invariant == check.S1 || (v.Invariant == check.S3 && strings.HasPrefix(v.Detail, check.S3StartPrefix))) {
			res.Tolerated = append(res.Tolerated, v)
			continue
		}
		res.Violations = append(res.Violations, v)
	}
	res.Figures = Figures{Failovers: len(f.Failovers), FailoverP50: check.Percentile(f.Failovers, 50), FailoverMax: check.Percentile(f.Failovers, 100),
		Handoffs: f.Handoffs, Puts: s.wl.puts, LostToRetention: rep.LostToRetention}
	if f.Handoffs > 0 {
		res.Figures.RedeliveriesPerHandoff = float64(f.Redelivered) / float64(f.Handoffs)
	}
	if f.ShardHours > 0 {
		res.Figures.TableOpsPerShardHour = float64(f.StoreCalls) / f.ShardHours
		res.Figures.TableRowsPerShardHour = float64(f.RowsRead) / f.ShardHours
		res.Figures.StreamOpsPerShardHour = float64(f.StreamCalls) / f.ShardHours
	}
	res.Trace = recs
	return res, nil
}

// linCheck is the outcome of checkLin.
type linCheck struct {
	result    LinResult
	violation *check.Violation
}

// checkLin checks invariant Lin: the history of the lease-table calls in
// the run's records (linearizability.FromTrace) is linearizable. The check
// runs with a wall-time limit (Options.LinTimeout); a check that runs out
// of time is Unknown, which is not a violation.
func (s *simulator) checkLin() (linCheck, error) {
	timeout := s.o.LinTimeout
	if timeout < 0 {
		return linCheck{result: LinResult{Skipped: true}}, nil
	}
	if timeout == 0 {
		timeout = DefaultLinTimeout
	}
	h, err := s.rec.lin.History()
	if err != nil {
		return linCheck{}, fmt.Errorf("sim: seed %d: %w", s.o.Seed, err)
	}
	r, err := linearizability.Check(h, timeout)
	if err != nil {
		return linCheck{}, fmt.Errorf("sim: seed %d: %w", s.o.Seed, err)
	}
	out := linCheck{result: LinResult{Checked: true, Ok: r.Ok, Unknown: r.Unknown, Illegal: r.Illegal, TimedOut: len(r.TimedOut),
		Ops: r.Ops, Keys: r.Keys, UnknownWrites: r.UnknownWrites, Left: r.Skipped}}
	if len(r.Illegal) == 0 {
		return out, nil
	}
	// The window: the span of the first illegal key's calls.
	key := r.Illegal[0]
	from, to := time.Duration(-1), time.Duration(0)
	for i := range h {
		op := &h[i]
		if op.Input.Key != key && op.Input.Row.Key != key {
			continue
		}
		if from < 0 {
			from = time.Duration(op.Call)
		}
		if op.Return != linearizability.Never {
			to = max(to, time.Duration(op.Return))
		}
		to = max(to, time.Duration(op.Call))
	}
	from = max(from, 0)
	out.violation = &check.Violation{Invariant: Lin, Key: key, From: from, To: to,
		Detail: fmt.Sprintf("the lease table's history is not linearizable on %d of %d keys: %s (%d calls checked, %d writes of unknown outcome; linearizability.Visualize shows why)",
			len(r.Illegal), r.Keys, keyList(r.Illegal), r.Ops, r.UnknownWrites)}
	return out, nil
}

// keyList joins keys, the first five of them.
func keyList(keys []string) string {
	if len(keys) > 5 {
		return strings.Join(keys[:5], ", ") + ", ..."
	}
	return strings.Join(keys, ", ")
}
