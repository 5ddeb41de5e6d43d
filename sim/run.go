package sim

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// simulator is one run. Each concern keeps its state in its own part, in
// its own file:
//
//   - rec (recorder.go): the trace, its hash, the online checkers;
//   - net (network.go): the calls in flight on the virtual network;
//   - svc (services.go): the table's and the stream's fault state, and how
//     a call is executed against the fakes;
//   - cl (procs.go): worker slots, processes and their clocks;
//   - pm (processor.go): the processor model behind each process;
//   - wl (workload.go): producers, retention and the stream's shard changes;
//   - fs (faults.go, actions.go): the fault schedule and its actions;
//   - the event loop (loop.go) and the end of the run (finish.go).
type simulator struct {
	o    Options
	w    World
	full engine.Config // the drawn engine configuration, validated
	ctx  context.Context

	q      queue
	now    time.Duration
	end    time.Duration
	events uint64
	healed bool

	tbl *fakes.LeaseTable
	st  *fakes.Kinesis

	rec  recorder
	fo   fanOutSim // enhanced fan-out (fanout.go)
	net  network
	svc  services
	cl   cluster
	pm   processorModel
	wl   workload
	kpl  kplState
	fs   faultState
	bd   boundaryState // boundary seeking (boundary.go)
	ops  opState       // operations in progress (ops.go)
	aim  aimState      // aimed faults (aim.go)
	sr   syncRaceState // sync races (syncrace.go)
	sk   strikeState   // a strike armed at the assigner (strike.go)
	stl  stealReleases // the combination steal-release's strikes (combos_steal.go)
	etcd etcdState     // an etcd world's store (etcd.go, watch.go)
	// delivered: the processes that delivered records of a lease since
	// they acquired it (config.go)
	delivered map[procKey]bool
	skipped   map[string]bool // shards skipped under LATEST (config.go)
	// keys is how rows are keyed (streams.go)
	keys engine.KeyFormat
	// settle ends the healing phase once the world has settled (settle.go)
	settle settleState
	// cost counts what the table's calls would cost on DynamoDB (cost.go)
	cost tableCost
}

// Run runs one simulation. The checkers run as it goes; the trace is kept
// only if o asks for it (KeepTrace). A run that breaks an invariant is run
// again with its trace kept, to fill in each violation's excerpt (unless
// o.NoExcerpts): the replay is exact, and its trace hash must be the
// first run's.
func Run(o Options) (*Result, error) {
	res, err := run(o)
	if err != nil || o.KeepTrace || o.NoExcerpts || len(res.Violations)+len(res.Tolerated) == 0 {
		return res, err
	}
	again := o
	again.KeepTrace, again.Trace, again.Observe = true, nil, nil
	again.excerptsOf = append(append([]check.Violation(nil), res.Violations...), res.Tolerated...)
	res2, err := run(again)
	if err != nil {
		return nil, err
	}
	if res2.TraceHash != res.TraceHash || res2.Events != res.Events {
		return nil, fmt.Errorf("sim: seed %d is not deterministic (D1): a re-run to show its violations had trace hash %016x after %d events, the run %016x after %d",
			o.Seed, res2.TraceHash, res2.Events, res.TraceHash, res.Events)
	}
	res2.Trace = nil
	return res2, nil
}

// run runs one simulation.
func run(o Options) (*Result, error) {
	if err := checkMutation(o.Mutation); err != nil {
		return nil, err
	}
	w, err := drawWorld(o)
	if err != nil {
		return nil, err
	}
	s := &simulator{o: o, w: w, ctx: context.Background()}
	s.net.rng = newRNG(o.Seed, streamNetwork)
	s.cl.rng = newRNG(o.Seed, streamEngine)
	s.pm.rng = newRNG(o.Seed, streamProcessor)
	s.wl.rng = newRNG(o.Seed, streamWorkload)
	s.kpl.init(o.Seed)
	s.fs.rng = newRNG(o.Seed, streamFaults)
	s.fs.steps = newRNG(o.Seed, streamClockSteps)
	s.bd.rng = newRNG(o.Seed^0xb0da, streamBoundary) // not the stream that drew the world's knobs
	s.fs.pauseProc = map[uint64]int32{}
	s.sk.rng = newRNG(o.Seed, streamStrike)
	s.stl.rng = newRNG(o.Seed, streamStealRun)
	s.ops.init()
	s.ops.moments.on = o.moments
	s.fs.faultWorker = -1
	s.rec.init(o, w)
	s.full, _ = w.engineConfig("probe", 1).Validate()
	s.keys = w.keyFormat()
	s.initAim()
	s.initSyncRace()
	// The world: the fakes, on the run's true virtual time.
	clk := fakes.ClockFunc(func() time.Time { return epoch.Add(s.now) })
	s.tbl = fakes.NewLeaseTable(fakes.LeaseTableOptions{Clock: clk, Seed: o.Seed, StaleLag: max(s.tableLag(), w.Etcd.SerializableLag),
		IndexLag: w.Assignment.IndexLag, Watch: w.Etcd.On})
	s.st = fakes.NewKinesis(fakes.KinesisOptions{Clock: clk, Seed: o.Seed, Retention: w.Retention, OnTrimRange: s.onTrim, FreeTrimmed: true})
	s.wl.init(w)
	if err := s.st.CreateGeneratedStream(streamName, w.Shards, s.wl.records(w)); err != nil {
		return nil, err
	}
	s.setupFanOut()
	s.end = w.Chaos + w.Quiet
	s.setup()
	s.loop()
	if o.AtEnd != nil {
		o.AtEnd()
	}
	return s.finish()
}

func (s *simulator) setup() {
	s.emit(&trace.Record{Kind: trace.KindPhase, Worker: -1, Proc: -1, Reason: "chaos"})
	shards, _ := s.st.Shards(streamName)
	for _, sh := range shards {
		s.emit(&trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: s.shardKey(streamName, sh.ID)})
	}
	s.setupSecond() // streams.go
	s.setupLegacy() // legacy.go
	s.wl.drawIdle(len(shards), s.w.has("idle-shards"))
	cr := newRNG(s.o.Seed, streamClock)
	for i := 0; i < s.w.Workers; i++ {
		s.addSlot(cr)
	}
	s.fs.schedule = s.drawSchedule()
	if s.o.Schedule != nil {
		// a schedule that replaces the drawn one is held to the chaos
		// phase, as the drawn one is (what a world shorter than the one
		// it was written for cannot hold is left out), and its mid-act
		// pauses to the slack this world's margin leaves, as the drawn
		// ones are (a world with other overrides may draw a smaller one)
		s.fs.schedule = nil
		slack := s.midActSlack().Round(time.Millisecond)
		for _, a := range s.o.Schedule {
			switch {
			case a.Kind != ActPause || !a.MidAct || a.Dur <= slack:
			case slack < time.Millisecond:
				a.MidAct = false // no slack at all: a plain pause
			default:
				a.Dur = slack
			}
			if a.At < s.w.Chaos {
				s.fs.schedule = append(s.fs.schedule, a)
			}
		}
	}
	s.fs.drawn = append([]Action(nil), s.fs.schedule...)
	s.fs.schedule = append(s.fs.schedule, s.boundarySchedule()...)
	s.fs.schedule = append(s.fs.schedule, s.comboSchedule()...)
	s.fs.schedule = append(s.fs.schedule, s.setupEtcd()...)
	s.fs.schedule = append(s.fs.schedule, s.o.Actions...)
	sort.SliceStable(s.fs.schedule, func(i, j int) bool { return s.fs.schedule[i].At < s.fs.schedule[j].At })
	for i, a := range s.fs.schedule {
		s.q.push(event{at: a.At, kind: evAction, a: uint64(i)})
	}
	for _, sl := range s.cl.slots {
		s.startProc(sl)
	}
	s.q.push(event{at: s.w.Chaos, kind: evHeal})
	s.startSettle()
	s.startPuts(shards)
	if s.w.Retention < s.end {
		s.q.push(event{at: 5 * time.Second, kind: evRetention})
	}
}

// rate returns r during the chaos phase and 0 after healing.
func (s *simulator) rate(r float64) float64 {
	if s.healed {
		return 0
	}
	return r
}
