package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim/trace"
)

// cluster is the workers: one slot per worker position (its clock, its
// links, its owner id), and every process that ever ran in a slot.
type cluster struct {
	rng   rng // clock origins and engine seeds of new processes
	slots []*slot
	procs []*proc
	// stepSent are the writes the engine announced (TraceCallSent) during
	// the step in progress, for writeClass.
	stepSent []sentInfo
	// sentBy indexes stepSent by key and counter when it is long (the
	// assigner's round, a worker's start), built when first needed
	sentBy map[sentKey]string
}

type sentKey struct {
	key     string
	counter int64
}

type slot struct {
	idx        int
	proc       int32 // current process, -1 none
	desired    bool  // should be running after healing
	restarts   int
	drift      float64
	wallOffset time.Duration
	steps      time.Duration
	table      link
	stream     link
	owner      string // the owner id of the next start
	dup        bool   // a duplicate-owner slot (outside the assumptions)
	consumes   string // the stream its processes consume ("": streamName)
	mode       string // how its next processes take leases (ActSwitchMode; "": the world's)
	// throttleScans is how many consistent scans of its next process
	// are throttled (ActCrashAfterRenew)
	throttleScans int
	// staleScans is how many eventually consistent scans of its next
	// process read every row as stale as the world's lag allows, and the
	// row staleKey as of just before staleAt, when the renewal of the
	// process that crashed applied (ActCrashAfterRenew: DynamoDB bounds
	// no staleness)
	staleScans int
	staleKey   string
	staleAt    time.Duration
	// cutAfterRead: the next process's table link is cut just after its
	// first read of staleKey replies (ActCrashAfterRenew)
	cutAfterRead bool
}

// proc is one process: an incarnation of a worker slot running the engine.
type proc struct {
	id       int32
	slot     int
	owner    string
	core     *engine.Worker
	clk      wclock
	alive    bool
	paused   bool
	holdNext bool // a mid-act pause: hold the effects of the next step
	stopping bool
	held     []engine.Input
	hCalls   []engine.Call
	hNotices []engine.Notice
	tickGen  uint64
	tickAt   time.Duration
	keys     map[string]*pkey
	keyOrder []string
	token    uint64
	restart  time.Duration // restart this long after a graceful exit (0: no)
	killAt   time.Duration
	// boundary seeking (boundary.go): an action armed for the next
	// applied renewal, the versions seen in scans, keys of writes of
	// unknown outcome
	afterRenew    ActionKind
	afterRenewDur time.Duration
	// afterRenewTries: renewals that applied while it was armed, no
	// other worker's scan waiting for them
	afterRenewTries int
	seen            map[string]seenVersion
	unknown         map[string]bool
	renewSent       map[string]time.Duration // the send time of its latest applied renewal of each key
	// a delivery within [pauseDeliveryFrom, pauseDeliveryUntil) is paused
	// in the middle for pauseDeliveryFor (ActCutAfterRenew)
	pauseDeliveryFrom, pauseDeliveryUntil, pauseDeliveryFor time.Duration
	// lastActs: its act-until time and view of expiry on the lease
	// lastKey it was cut from (true times: armExpiryPause)
	lastActs [2]time.Duration
	lastKey  string
}

type sentInfo struct {
	key     string
	counter int64
	reason  string
}

// addSlot adds a worker slot, drawing its clock and link speeds from cr.
func (s *simulator) addSlot(cr rng) *slot {
	sl := &slot{idx: len(s.cl.slots), proc: -1, desired: true}
	sl.drift = cr.rangeF(-s.w.DriftBound, s.w.DriftBound)
	switch {
	case sl.idx < len(s.o.Drifts):
		sl.drift = s.o.Drifts[sl.idx] * s.w.DriftBound
	case s.w.Boundary.Drift:
		sl.drift = s.boundaryDrift()
	}
	sl.wallOffset = cr.between(-5*time.Minute, 5*time.Minute)
	sl.table = link{lat: s.w.TableLatency}
	sl.stream = link{lat: s.w.StreamLatency}
	sl.table.lat.Base = time.Duration(float64(sl.table.lat.Base) * cr.rangeF(0.5, 2))
	sl.stream.lat.Base = time.Duration(float64(sl.stream.lat.Base) * cr.rangeF(0.5, 2))
	sl.owner = "w" + strconv.Itoa(sl.idx)
	s.cl.slots = append(s.cl.slots, sl)
	return sl
}

func (s *simulator) slotOf(i int) *slot {
	if len(s.cl.slots) == 0 {
		return nil
	}
	if i < 0 {
		i = -i
	}
	return s.cl.slots[i%len(s.cl.slots)]
}

// live returns the slot's running process, or nil.
func (s *simulator) live(sl *slot) *proc {
	if sl == nil || sl.proc < 0 {
		return nil
	}
	if p := s.cl.procs[sl.proc]; p.alive {
		return p
	}
	return nil
}

func (s *simulator) desiredCount() int {
	n := 0
	for _, sl := range s.cl.slots {
		if sl.desired {
			n++
		}
	}
	return n
}

// startProc starts a new process in sl, unless one is running.
func (s *simulator) startProc(sl *slot) {
	if sl.proc >= 0 && s.cl.procs[sl.proc].alive {
		return
	}
	s.switchOnRestart(sl) // migrate.go
	id := int32(len(s.cl.procs))
	p := &proc{id: id, slot: sl.idx, owner: sl.owner, alive: true, tickAt: -1, keys: map[string]*pkey{}}
	p.clk = wclock{monoOrigin: s.cl.rng.between(time.Second, time.Hour), drift: sl.drift, wallOffset: sl.wallOffset, steps: sl.steps}
	cfg := s.w.engineConfig(p.owner, s.cl.rng.Uint64())
	if s.o.Engine != nil {
		s.o.Engine(&cfg)
		cfg.Owner = p.owner
	}
	s.configure(sl, &cfg)
	cfg.Trace = func(e engine.TraceEvent) { s.traceEngine(p, e) }
	if m, ok := strings.CutPrefix(s.o.Mutation, EngineMutationPrefix); ok {
		if err := planted.Set(&cfg, m); err != nil {
			panic(fmt.Sprintf("sim: %v", err)) // Run checked it
		}
	}
	core, err := engine.NewWorker(cfg)
	if err != nil {
		panic(fmt.Sprintf("sim: engine config rejected: %v", err))
	}
	p.core = core
	s.cl.procs = append(s.cl.procs, p)
	sl.proc = id
	s.emit(s.procRec(p, &trace.Record{Kind: trace.KindProcStart}))
	s.q.push(event{at: s.now + s.w.CheckpointPace, kind: evCheckpointTimer, proc: id})
	s.stepAfterStart(sl)
	s.step(p, &engine.Input{Kind: engine.InputTick})
}

func (s *simulator) stopProc(p *proc, why string) {
	if !p.alive {
		return
	}
	p.alive = false
	p.held, p.hCalls, p.hNotices = nil, nil, nil
	if why != "exit" {
		s.opFaultOn(p.id)
	}
	s.emit(s.procRec(p, &trace.Record{Kind: trace.KindProcStop, Reason: why}))
}

func (s *simulator) traceEngine(p *proc, e engine.TraceEvent) {
	switch e.Kind {
	case engine.TraceCallSent:
		s.cl.stepSent = append(s.cl.stepSent, sentInfo{e.Key, e.Counter, e.Reason})
		s.cl.sentBy = nil
	case engine.TraceHandingOver, engine.TraceActing:
		s.opEngineEvent(p, &e) // ops.go
	case engine.TraceDelivered:
		s.opEngineEvent(p, &e)
		s.noteTenure(p, &e) // config.go
	case engine.TraceLeaseAcquired:
		s.noteTenure(p, &e)
	}
	r := trace.Record{Kind: trace.FromEngine(e.Kind), Key: e.Key, Counter: e.Counter, Checkpoint: e.Checkpoint,
		First: e.First, Last: e.Last, FirstSub: int32(e.FirstSub), LastSub: int32(e.LastSub), Count: e.Count, Reason: e.Reason, Previous: e.Previous}
	s.procRec(p, &r)
	r.Mono = e.Mono
	s.emit(&r)
}

// deliver hands an input to a process now, or holds it while it is paused.
func (s *simulator) deliver(p *proc, in *engine.Input) {
	if !p.alive {
		return
	}
	if p.paused {
		p.held = append(p.held, *in)
		return
	}
	s.step(p, in)
}

// step runs one step of p's engine and carries out its effects.
func (s *simulator) step(p *proc, in *engine.Input) {
	s.cl.stepSent = s.cl.stepSent[:0]
	s.cl.sentBy = nil
	s.opStepped()
	rd := p.core.Step(engine.Now{Mono: p.clk.mono(s.now), Wall: p.clk.wall(s.now)}, *in)
	if s.w.Etcd.On {
		s.keepWatches(p, rd.Watch) // watch.go
	}
	if p.holdNext {
		p.holdNext = false
		p.hCalls = append(p.hCalls, rd.Calls...)
		p.hNotices = append(p.hNotices, rd.Notices...)
	} else {
		for i := range rd.Calls {
			s.send(p, &rd.Calls[i])
		}
		for i := range rd.Notices {
			s.notice(p, &rd.Notices[i])
		}
	}
	s.syncRaceStep(p, in, rd.Calls) // syncrace.go
	if rd.Stopped {
		if rd.Err != nil {
			// a worker that cannot start (or go on) would fail again
			s.cl.slots[p.slot].desired = false
		}
		s.exited(p)
		return
	}
	if rd.WakeAt > 0 {
		at := p.clk.trueAt(rd.WakeAt)
		if at < s.now {
			at = s.now
		}
		if at != p.tickAt {
			p.tickGen++
			p.tickAt = at
			s.q.push(event{at: at, kind: evTick, proc: p.id, a: p.tickGen})
		}
	}
}

// exited ends a process that stopped on its own (a graceful shutdown).
func (s *simulator) exited(p *proc) {
	if !p.alive {
		return
	}
	s.stopProc(p, "exit")
	s.restartLater(p)
}

// restartLater schedules the restart of p's slot after p ended at the end
// of a shutdown: after the shutdown's restart delay, or a second once the
// faults have stopped; none for a slot no longer desired (scaled in).
func (s *simulator) restartLater(p *proc) {
	sl := s.cl.slots[p.slot]
	if sl.desired && (p.restart > 0 || s.healed) {
		d := p.restart
		if d <= 0 {
			d = time.Second
		}
		s.later(Action{At: s.now + d, Kind: ActRestart, Worker: p.slot})
	}
}
