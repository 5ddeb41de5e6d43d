package sim

import (
	"time"

	"github.com/shardlease/shardlease/engine"

	"github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// recorder is the run's trace: every record is numbered, stamped with the
// true time, hashed into the trace hash, fed to the online checkers and to
// the linearizability history, written to the sink (if any) and kept only
// when the run keeps its trace (Options.KeepTrace).
type recorder struct {
	n      int
	hash   trace.Hash
	sink   *trace.Writer
	checks *check.Online
	obs    func(trace.Record)      // Options.Observe
	lin    *linearizability.Online // nil: Lin is not checked

	keep   bool
	filter []*check.ExcerptFilter // keep only records one of these keeps (nil: all)
	recs   []trace.Record         // the current chunk
	chunks [][]trace.Record
}

const chunkSize = 4096

func (rc *recorder) init(o Options, w World) {
	rc.hash = trace.NewHash()
	if o.Trace != nil {
		rc.sink = trace.NewWriter(o.Trace)
	}
	rc.keep = o.KeepTrace
	rc.obs = o.Observe
	for _, v := range o.excerptsOf {
		rc.filter = append(rc.filter, check.InExcerpt(v, excerptPad(w)))
	}
	rc.checks = check.NewOnline(checkOptions(w))
	if o.LinBudget >= 0 {
		rc.lin = linearizability.NewOnline(linearizability.OnlineConfig{ReadLag: w.CallTimeout, Budget: o.LinBudget})
	}
}

// checkOptions are the checkers' options for a run of world w.
func checkOptions(w World) check.Options {
	return check.Options{End: w.Chaos + w.Quiet, Heal: w.Chaos, Bound: w.Bound, Balance: w.Balance, BalanceSlack: 1, Forget: true, Timing: w.timing()}
}

// timing is what the latency invariants (T1-T3) and B1 need of world w
// (check.Timing): its engine's timing, the pending index's lag, the drift
// its clocks have, and the ways its workers take leases.
func (w World) timing() *check.Timing {
	full, err := w.probeConfig().Validate()
	if err != nil {
		return nil
	}
	t := &check.Timing{LeaseDuration: full.LeaseDuration, RenewInterval: full.RenewInterval,
		AssignerScanInterval: full.AssignerScanInterval, PendingPollInterval: full.PendingPollInterval, TakeInterval: full.TakeInterval,
		IndexLag: w.Assignment.IndexLag, SafetyMargin: full.SafetyMargin, Drift: w.DriftBound, Capped: full.MaxLeasesForWorker > 0, FanOut: w.FanOut.On,
		BalanceByCount: full.BalanceBy == engine.BalanceLeases}
	if w.Config.AssignerScanInterval == 0 && w.Renewal.Mode != "" {
		// a session-renewal assigner scans every LeaseDuration/2 by
		// default (engine.Config.AssignerScanInterval): the slowest of
		// the fleet's assigners bounds the failovers
		t.AssignerScanInterval = max(t.AssignerScanInterval, full.LeaseDuration/2)
	}
	if w.Etcd.On {
		t.WatchResume = max(w.Etcd.Reconnect, watchRetry)
	}
	switch w.Assignment.Mode {
	case engine.AssignmentScan:
		t.Scan = true
	case engine.AssignmentAssigner:
		t.Assigner = true
	default:
		t.Assigner, t.Scan = true, true
	}
	if w.switchesMode {
		t.Assigner, t.Scan = true, true
	}
	return t
}

// emit records one trace record.
func (s *simulator) emit(r *trace.Record) {
	rc := &s.rec
	rc.n++
	r.Seq = uint64(rc.n)
	r.T = s.now
	rc.hash.Add(r)
	rc.checks.Observe(r)
	if rc.lin != nil {
		rc.lin.Observe(r)
	}
	if rc.keep && rc.wanted(r) {
		if len(rc.recs) == cap(rc.recs) {
			if rc.recs != nil {
				rc.chunks = append(rc.chunks, rc.recs)
			}
			rc.recs = make([]trace.Record, 0, chunkSize)
		}
		rc.recs = append(rc.recs, *r)
	}
	if rc.sink != nil {
		_ = rc.sink.Write(r)
	}
	if rc.obs != nil {
		rc.obs(*r)
	}
}

// wanted reports whether a kept trace keeps r.
func (rc *recorder) wanted(r *trace.Record) bool {
	if rc.filter == nil {
		return true
	}
	for _, f := range rc.filter {
		if f.Keeps(r) {
			return true
		}
	}
	return false
}

// excerptPad is how far around a violation's window its excerpt reaches.
func excerptPad(w World) time.Duration {
	ld := w.Engine.LeaseDuration
	if ld == 0 {
		ld = engine.DefaultLeaseDuration // the engine's default (config.go)
	}
	return 2*ld + time.Second
}

// kept returns the kept records in one slice (nil unless kept).
func (rc *recorder) kept() []trace.Record {
	if !rc.keep {
		return nil
	}
	all := make([]trace.Record, 0, rc.n)
	for _, c := range rc.chunks {
		all = append(all, c...)
	}
	all = append(all, rc.recs...)
	rc.chunks, rc.recs = nil, nil
	return all
}

// procRec fills the process fields of a record.
func (s *simulator) procRec(p *proc, r *trace.Record) *trace.Record {
	r.Worker = int32(p.slot)
	r.Proc = p.id
	r.Owner = p.owner
	r.Mono = p.clk.mono(s.now)
	r.Wall = p.clk.wallNanos(s.now)
	return r
}

// fault records an injected fault. Its Worker is -1, or the slot an action
// aimed at a shard's owner resolved to (faultWorker).
func (s *simulator) fault(desc, key string) {
	s.emit(&trace.Record{Kind: trace.KindFault, Worker: s.fs.faultWorker, Proc: -1, Key: key, Reason: desc})
}
