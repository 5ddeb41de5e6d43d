package driversim

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// Report is the outcome of one run in a form that travels between
// processes as JSON (Serve writes one per request): what a command that
// cannot run the driver itself (cmd/simrun, which is not a test binary)
// needs to print, count and save it.
type Report struct {
	Seed uint64 `json:"seed"`
	// Options are the run's options as requested.
	Options Options `json:"options"`
	// World is World.String(); Workers, Shards, Faults and LeaseDuration
	// its parts that a summary shows.
	World         string        `json:"world"`
	Workers       int           `json:"workers"`
	Shards        int           `json:"shards"`
	Faults        []string      `json:"faults"`
	LeaseDuration time.Duration `json:"lease_duration"`
	// Violations carry their excerpts and Replay (the go test command).
	Violations      []check.Violation            `json:"violations"`
	Figures         check.Figures                `json:"figures"`
	Puts            int                          `json:"puts"`
	LostToRetention int                          `json:"lost_to_retention"`
	Lin             linearizability.OnlineResult `json:"lin"`
	Stats           Stats                        `json:"stats"`
	// TraceHash is Result.TraceHash (Options.Hash is always set by
	// Serve): equal hashes, same events at the same virtual times.
	TraceHash      uint64   `json:"trace_hash"`
	VirtualSeconds float64  `json:"virtual_seconds"`
	Records        int      `json:"records"`
	RunErrors      []string `json:"run_errors,omitempty"`
	// Summary is Result.Summary: the world, the figures, the checks and
	// every violation with its excerpt, for a person.
	Summary     string  `json:"summary"`
	WallSeconds float64 `json:"wall_seconds"`
	// Reruns, when the request asked for them and the run broke an
	// invariant: how many times the seed ran again and how many of those
	// broke one too (a driver world is not bit-identical run to run: see
	// the package doc).
	Reruns *Reruns `json:"reruns,omitempty"`
	// Error is set, and nothing else but Seed and Options, when the run
	// could not start (its options were rejected).
	Error string `json:"error,omitempty"`
}

// Reruns count the re-runs of a failing seed.
type Reruns struct {
	Runs   int `json:"runs"`
	Failed int `json:"failed"`
	// Hashes counts the distinct trace hashes among the first run and
	// the re-runs.
	Hashes int `json:"hashes"`
}

// OK reports whether the run broke no invariant.
func (r *Report) OK() bool { return r.Error == "" && len(r.Violations) == 0 }

// Reproduced describes how often a failing seed failed again: "3 of 4
// re-runs", or "" when it was not re-run.
func (r *Report) Reproduced() string {
	if r.Reruns == nil {
		return ""
	}
	return fmt.Sprintf("%d of %d re-runs", r.Reruns.Failed, r.Reruns.Runs)
}

// NewReport makes the Report of res, a run of o that took wall.
func NewReport(o Options, res *Result, wall time.Duration) *Report {
	w := res.World
	r := &Report{Seed: o.Seed, Options: o, World: w.String(), Workers: w.Workers, Shards: w.Shards, Faults: w.Faults,
		LeaseDuration: w.Engine.LeaseDuration, Violations: res.Violations, Figures: res.Figures, Puts: res.Stats.Puts,
		LostToRetention: res.LostToRetention, Lin: res.Lin, Stats: res.Stats, TraceHash: res.TraceHash,
		VirtualSeconds: res.End.Seconds(), Records: res.Records, RunErrors: res.RunErrors, Summary: res.Summary(),
		WallSeconds: wall.Seconds()}
	if r.Faults == nil {
		r.Faults = []string{}
	}
	if r.Violations == nil {
		r.Violations = []check.Violation{}
	}
	return r
}

// Summary describes the run for a person: the world, what the faults
// reached, the figures, the checks, and every violation with its excerpt
// and replay command.
func (r *Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver world: %s\n", r.World)
	fmt.Fprintf(&b, "stats: %+v\n", r.Stats)
	f := r.Figures
	fmt.Fprintf(&b, "figures: handoffs %d (%d planned), re-delivered %d, failovers %d, store calls %d, stream calls %d; %d records in %v of virtual time; trace hash %016x\n",
		f.Handoffs, f.PlannedMoves, f.Redelivered, len(f.Failovers), f.StoreCalls, f.StreamCalls, r.Records, r.End, r.TraceHash)
	l := r.Lin
	fmt.Fprintf(&b, "lin: %d keys, %d calls in %d windows, %d writes of unknown outcome; illegal %v, unknown %v\n",
		l.Keys, l.Ops, l.Checks, l.UnknownWrites, l.Illegal, l.TimedOut)
	if len(r.RunErrors) > 0 {
		fmt.Fprintf(&b, "Run returned: %s\n", strings.Join(r.RunErrors, "; "))
	}
	if len(r.Violations) == 0 {
		b.WriteString("no invariant broken\n")
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "VIOLATION %s\n  replay: %s\n", v.String(), v.Replay)
		for _, l := range v.Excerpt {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	return b.String()
}

// writeTrace writes the history of res (kept: Options.KeepRecords) to
// path as JSON Lines.
func writeTrace(path string, res *Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := trace.NewWriter(f)
	for i := range res.History {
		if err := tw.Write(&res.History[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
