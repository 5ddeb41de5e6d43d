package driversim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// Stats count what a run did: the faults that fired and what reached the
// driver's own code.
type Stats struct {
	// timed and triggered faults
	HandoffPauses, Pauses, Holds, HoldsReleasedByMove, Partitions, Crashes, Shutdowns, Restarts int
	Splits, Merges, IteratorExpiries, ScaleOuts                                                 int
	// per-call and per-batch faults
	Timeouts, LostReplies, Throttled, SlowCalls int
	SlowBatches, FailedBatches, Panics          int
	// seen in the consumers' logs: batches the runner held back because
	// the lease was no longer valid at the hand-off, shutdowns that hit
	// their deadline, processor errors and panics the runner caught
	HeldBack, ShutdownTimeouts, ProcessorErrors int
	PolicyDecisions                             int // calls of the failure policy
	SubscriptionsDropped                        int
	Puts                                        int
}

// Result is the outcome of one run.
type Result struct {
	World      World
	Violations []check.Violation
	// LostToRetention counts records retention removed before any
	// processor got them (none: the stream keeps a day).
	LostToRetention int
	Figures         check.Figures
	Stats           Stats
	// TraceHash hashes the history in a canonical order (see
	// canonicalHash), with Options.Hash: runs of one seed agree on the
	// faults and the verdict, not always on the hash (see the package
	// doc).
	TraceHash uint64
	End       time.Duration
	// Lin is the verdict of the linearizability check of the lease
	// table's history (an illegal key is also in Violations, as Lin; a
	// key whose check ran out of budget is unknown, not a violation).
	Lin linearizability.OnlineResult
	// Records is the length of the history; History the history itself,
	// with Options.KeepRecords.
	Records int
	History []trace.Record
	Final   []engine.Lease
	// RunErrors are the errors Run of a consumer returned before the end
	// (a shutdown that could not release every lease, for instance).
	RunErrors []string
}

// ErrNoBubble is returned by Run outside a testing/synctest bubble.
var ErrNoBubble = errors.New("driversim: Run must be called inside a testing/synctest bubble (synctest.Test): it runs real consumers on the bubble's virtual time")

// Run runs the world of o.Seed: real engine.Consumers, each with its own
// clock, store, stream and processors over one shared fakes.LeaseTable and
// fakes.Kinesis, the faults of the world's schedule, then a quiet phase;
// and checks the history with every checker of sim/check (check.All) and
// the linearizability of the table's history (Lin). It must be called
// inside a synctest bubble, which it leaves with no goroutine running.
func Run(o Options) (*Result, error) {
	if y := time.Now().UTC().Year(); y != 2000 {
		// a bubble's clock starts at 2000-01-01 and a run lasts minutes
		return nil, ErrNoBubble
	}
	if o.Mutation != "" {
		if err := planted.Set(&engine.Config{}, o.Mutation); err != nil {
			return nil, fmt.Errorf("driversim: %w", err)
		}
	}
	wd, err := drawWorld(o)
	if err != nil {
		return nil, err
	}
	w := &world{o: o, w: wd, rWork: newRNG(o.Seed, streamWorkload)}
	w.rSched = newRNG(o.Seed, streamSchedule^0xa11ce)
	clk := fakes.ClockFunc(time.Now) // the bubble's time: one true clock for every fake
	w.tbl = fakes.NewLeaseTable(fakes.LeaseTableOptions{Clock: clk, Seed: o.Seed, StaleLag: wd.StaleLag, IndexLag: wd.IndexLag})
	w.kin = fakes.NewKinesis(fakes.KinesisOptions{Clock: clk, Seed: o.Seed})
	if err := w.kin.CreateStream(streamName, wd.Shards); err != nil {
		return nil, err
	}
	w.setupFanOut()
	w.wake()
	for i := 0; i < 64; i++ {
		w.pkeys = append(w.pkeys, "pk-"+strconv.Itoa(i))
	}
	w.maxOpen = 2*wd.Shards + 2
	w.start = time.Now()
	schedule := w.drawSchedule(newRNG(o.Seed, streamSchedule))

	w.mu.Lock()
	w.emitWorld(trace.Record{Kind: trace.KindPhase, Reason: "chaos"})
	for _, sh := range w.openShards() {
		w.emitWorld(trace.Record{Kind: trace.KindShardCreated, Key: sh.ID})
	}
	w.aux.Add(1)
	go func() {
		defer w.aux.Done()
		w.producer()
	}()
	w.mu.Unlock()
	// the consumers start apart: timers of consumers that started at one
	// instant would fire at one instant, and their calls reach the table
	// in an order the seed does not fix
	stagger := newRNG(o.Seed, streamSchedule^0x57a6)
	for i := 0; i < wd.Workers; i++ {
		time.Sleep(stagger.between(time.Millisecond, 50*time.Millisecond))
		w.mu.Lock()
		w.startNode(w.newSlot())
		w.mu.Unlock()
	}

	// the director: the schedule, healing, the end
	for _, a := range schedule {
		time.Sleep(a.at - w.now())
		w.mu.Lock()
		w.do(a)
		w.mu.Unlock()
	}
	time.Sleep(wd.Chaos - w.now())
	w.mu.Lock()
	w.heal()
	w.mu.Unlock()
	time.Sleep(wd.End() - w.now())

	w.mu.Lock()
	w.emitWorld(trace.Record{Kind: trace.KindPhase, Reason: "end"})
	end := w.now()
	final := w.finalTable()
	w.ended = true
	var running []*node
	for _, n := range w.nodes {
		if !n.exited {
			running = append(running, n)
			n.unfreeze()
			n.releaseHolds()
		}
	}
	w.mu.Unlock()
	for _, n := range running {
		n.cancel()
	}
	w.wg.Wait()
	w.aux.Wait()
	// Goroutines the consumers leave behind (a call or a processor that
	// outlives its Run) may still wait on the bubble's clock, which stops
	// when this goroutine returns: give them all the virtual time they can
	// need (it costs nothing when nobody waits).
	time.Sleep(5*time.Minute + 10*wd.Engine.LeaseDuration)

	recs := w.history()
	v := wd.verdict(recs, final, end)
	res := &Result{World: wd, Violations: v.Violations, LostToRetention: v.LostToRetention, Lin: v.Lin,
		Figures: v.Figures, Stats: w.stats, End: end, Final: final, RunErrors: w.runErrs, Records: len(recs)}
	if o.KeepRecords {
		res.History = recs
	}
	if o.Hash {
		res.TraceHash = canonicalHash(recs)
	}
	for i := range res.Violations {
		v := &res.Violations[i]
		v.Seed = o.Seed
		v.Excerpt = check.Excerpt(recs, *v, 2*wd.Engine.LeaseDuration, 40)
		v.Replay = Replay(o)
	}
	return res, nil
}

// verdict is what the checkers make of a history.
type verdict struct {
	Violations      []check.Violation
	LostToRetention int
	Figures         check.Figures
	Lin             linearizability.OnlineResult
}

// verdict runs every checker over the history recs of a run of w that
// ended at end with the table final: every checker of sim/check
// (check.All: whatever it runs, the driver's history gets it too), with
// the options the world implies, the linearizability of the table's
// history (Lin), and the figures.
func (w World) verdict(recs []trace.Record, final []engine.Lease, end time.Duration) verdict {
	rep := check.All(check.History{Records: recs, Final: final, FinalKnown: true}, w.checkOptions(end))
	lin, linV := checkLin(recs, w.CallTimeout)
	if linV != nil {
		rep.Violations = append(rep.Violations, *linV)
	}
	return verdict{Violations: rep.Violations, LostToRetention: rep.LostToRetention, Figures: check.Measure(recs, end), Lin: lin}
}

// Replay is the go test command that re-runs o: TestDriverSim on its seed
// and settings (with the build tag of the planted bugs if o plants one).
func Replay(o Options) string {
	var b strings.Builder
	b.WriteString("go test ")
	if o.Mutation != "" {
		b.WriteString("-tags " + planted.Tag + " ")
	}
	b.WriteString("./sim/driversim -run 'TestDriverSim$' -driversim.seed=" + strconv.FormatUint(o.Seed, 10))
	if o.Workers > 0 {
		b.WriteString(" -driversim.workers=" + strconv.Itoa(o.Workers))
	}
	if o.Shards > 0 {
		b.WriteString(" -driversim.shards=" + strconv.Itoa(o.Shards))
	}
	if o.Chaos > 0 {
		b.WriteString(" -driversim.chaos=" + o.Chaos.String())
	}
	if o.Quiet > 0 {
		b.WriteString(" -driversim.quiet=" + o.Quiet.String())
	}
	for _, f := range []struct{ name, v string }{{"faults", o.Faults}, {"assignment", o.Assignment}, {"consumer", o.Consumer}, {"plant", o.Mutation}} {
		if f.v != "" && (f.name != "faults" || f.v != "swarm") {
			b.WriteString(" -driversim." + f.name + "=" + f.v)
		}
	}
	b.WriteString(" -v")
	return b.String()
}

// canonicalHash hashes recs (sim/trace.Hash) without what the order of
// goroutines woken at one instant decides alone: the records of one
// instant are hashed as a set (sorted by their contents), and the
// history's positions and call numbers are left out. Two runs with the
// same canonical hash saw the same events at the same virtual times.
func canonicalHash(recs []trace.Record) uint64 {
	c := slices.Clone(recs)
	for i := range c {
		c[i].Seq, c[i].Call = 0, 0
	}
	slices.SortStableFunc(c, func(a, b trace.Record) int {
		if x := cmp.Compare(a.T, b.T); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Proc, b.Proc); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Key, b.Key); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Kind, b.Kind); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Counter, b.Counter); x != 0 {
			return x
		}
		if x := cmp.Compare(a.First, b.First); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Reason, b.Reason); x != 0 {
			return x
		}
		return cmp.Compare(a.Outcome, b.Outcome)
	})
	return trace.HashRecords(c)
}
