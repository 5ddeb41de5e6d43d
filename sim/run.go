package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

var (
	errTimeout   = errors.New("sim: call timed out (unknown outcome)")
	errTransient = errors.New("sim: 500 internal server error (unknown outcome)")
	// errRetryThrottled: an SDK retry of a write that had applied was
	// throttled; the caller cannot tell whether the write applied.
	errRetryThrottled = errors.New("sim: throttled after a retried attempt that may have applied (unknown outcome)")
	errThrottled      = fmt.Errorf("sim: %w", engine.ErrThrottled)
	// errExpiredIter is the injected expired-iterator fault.
	errExpiredIter = fmt.Errorf("sim: injected: %w", engine.ErrExpiredIterator)
	// errUnfencedMissing fails an unconditional write (a planted bug) of
	// a row that does not exist: even without its condition, an update
	// needs the row.
	errUnfencedMissing = fmt.Errorf("sim: unconditional write of a missing row: %w", engine.ErrConditionFailed)
)

// inflight is one call on the virtual network.
type inflight struct {
	call     engine.Call
	proc     int32
	sent     time.Duration
	applied  time.Duration
	result   engine.Result
	answered bool
	pending  int
	reason   string
	fault    string
}

// job is a processor's pending answer to a notice.
type job struct {
	proc   int32
	key    string
	batch  uint64
	failed bool
	skip   bool // failed, and the failure policy skips it (World.SkipAfter)
	first  string
	last   string
	cp     string // checkpoint to ask for before answering
	gen    uint64 // the key's generation when the notice came
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
}

type link struct {
	lat       Latency
	cutReq    bool
	cutRep    bool
	clogUntil time.Duration
	clogExtra time.Duration
}

type pkey struct {
	processed string // last record processed (sequence)
	asked     string // last checkpoint asked for
	gen       uint64 // incremented by every Initialize
}

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
}

type sentInfo struct {
	key     string
	counter int64
	reason  string
}

type simulator struct {
	o           Options
	w           World
	q           queue
	now         time.Duration
	end         time.Duration
	rWork       rng
	rNet        rng
	rFault      rng
	rProc       rng
	rEng        rng
	ctx         context.Context
	faultWorker int32 // see fault
	tbl         *fakes.LeaseTable
	st          *fakes.Kinesis
	closed      []closedShard // closed shards in closing order, for expiry
	expCur      int           // closed[:expCur] have expired
	slots       []*slot
	procs       []*proc
	calls       []inflight
	free        []int
	jobs        []job
	freeJ       []int
	recs        []trace.Record // the current chunk
	chunks      [][]trace.Record
	nrecs       int
	hash        trace.Hash
	sink        *trace.Writer
	events      uint64
	healed      bool

	schedule       []Action
	outside        []string
	retryKind      string // ActSDKRetry in force until retryUntil
	retryChance    float64
	retryUntil     time.Duration
	tableThrottle  float64
	tableThrUntil  time.Duration
	streamThrottle float64
	streamThrUntil time.Duration
	burst          float64
	burstUntil     time.Duration
	idle           []bool // initial shards that get no records
	pkeys          []string
	stepSent       []sentInfo
	full           engine.Config
	maxOpen        int
	fo             fanOutSim // see fanout.go
	lastPauseID    uint64
	pauseProc      map[uint64]int32
	putsN          int
	noPuts         bool // the producers stopped (ActRecreateStream)
}

const chunkSize = 4096

// closedShard is a shard of the stream that a split or merge closed at at.
type closedShard struct {
	id string
	at time.Duration
}

// Run runs one simulation.
func Run(o Options) (*Result, error) {
	if err := checkMutation(o.Mutation); err != nil {
		return nil, err
	}
	w, err := drawWorld(o)
	if err != nil {
		return nil, err
	}
	s := &simulator{o: o, w: w, rWork: newRNG(o.Seed, streamWorkload), rNet: newRNG(o.Seed, streamNetwork),
		rFault: newRNG(o.Seed, streamFaults), rProc: newRNG(o.Seed, streamProcessor), rEng: newRNG(o.Seed, streamEngine),
		ctx: context.Background(), hash: trace.NewHash(), pauseProc: map[uint64]int32{}, faultWorker: -1}
	// The world: the fakes, on the run's true virtual time.
	clk := fakes.ClockFunc(func() time.Time { return epoch.Add(s.now) })
	s.tbl = fakes.NewLeaseTable(fakes.LeaseTableOptions{Clock: clk, Seed: o.Seed, StaleLag: w.Rates.StaleLag, IndexLag: w.Assignment.IndexLag})
	s.st = fakes.NewKinesis(fakes.KinesisOptions{Clock: clk, Seed: o.Seed, Retention: w.Retention, OnTrim: s.onTrim})
	if err := s.st.CreateStream(streamName, w.Shards); err != nil {
		return nil, err
	}
	s.full, _ = w.engineConfig("probe", 1).Validate()
	s.setupFanOut()
	s.end = w.Chaos + w.Quiet
	s.maxOpen = 2*w.Shards + 4
	if o.Trace != nil {
		s.sink = trace.NewWriter(o.Trace)
	}
	for i := 0; i < 64; i++ {
		s.pkeys = append(s.pkeys, "pk-"+strconv.Itoa(i))
	}
	s.setup()
	s.loop()
	return s.finish()
}

func (s *simulator) setup() {
	s.emit(&trace.Record{Kind: trace.KindPhase, Worker: -1, Proc: -1, Reason: "chaos"})
	shards, _ := s.st.Shards(streamName)
	for _, sh := range shards {
		s.emit(&trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: sh.ID})
	}
	s.idle = make([]bool, len(shards))
	if s.w.has("idle-shards") && len(s.idle) > 1 {
		n := 1 + s.rWork.IntN(len(s.idle)/2+1)
		for i := 0; i < n && i < len(s.idle)-1; i++ {
			s.idle[s.rWork.IntN(len(s.idle))] = true
		}
	}
	cr := newRNG(s.o.Seed, streamClock)
	for i := 0; i < s.w.Workers; i++ {
		s.addSlot(cr)
	}
	s.schedule = s.drawSchedule()
	s.schedule = append(s.schedule, s.o.Actions...)
	sort.SliceStable(s.schedule, func(i, j int) bool { return s.schedule[i].At < s.schedule[j].At })
	for i, a := range s.schedule {
		s.q.push(event{at: a.At, kind: evAction, a: uint64(i)})
	}
	for _, sl := range s.slots {
		s.startProc(sl)
	}
	s.q.push(event{at: s.w.Chaos, kind: evHeal})
	s.q.push(event{at: s.rWork.exp(s.putMean()), kind: evPut})
	if s.w.Retention < s.end {
		s.q.push(event{at: 5 * time.Second, kind: evRetention})
	}
}

func (s *simulator) addSlot(cr rng) *slot {
	sl := &slot{idx: len(s.slots), proc: -1, desired: true}
	sl.drift = cr.rangeF(-s.w.DriftBound, s.w.DriftBound)
	if sl.idx < len(s.o.Drifts) {
		sl.drift = s.o.Drifts[sl.idx] * s.w.DriftBound
	}
	sl.wallOffset = cr.between(-5*time.Minute, 5*time.Minute)
	sl.table = link{lat: s.w.TableLatency}
	sl.stream = link{lat: s.w.StreamLatency}
	sl.table.lat.Base = time.Duration(float64(sl.table.lat.Base) * cr.rangeF(0.5, 2))
	sl.stream.lat.Base = time.Duration(float64(sl.stream.lat.Base) * cr.rangeF(0.5, 2))
	sl.owner = "w" + strconv.Itoa(sl.idx)
	s.slots = append(s.slots, sl)
	return sl
}

func (s *simulator) putMean() time.Duration {
	rate := s.w.PutRate * float64(s.w.Shards)
	if s.now < s.burstUntil {
		rate *= s.burst
	}
	return time.Duration(float64(time.Second) / rate)
}

// emit records one trace record.
func (s *simulator) emit(r *trace.Record) {
	s.nrecs++
	r.Seq = uint64(s.nrecs)
	r.T = s.now
	s.hash.Add(r)
	if len(s.recs) == cap(s.recs) {
		if s.recs != nil {
			s.chunks = append(s.chunks, s.recs)
		}
		s.recs = make([]trace.Record, 0, chunkSize)
	}
	s.recs = append(s.recs, *r)
	if s.sink != nil {
		_ = s.sink.Write(r)
	}
}

// procRec fills the process fields of a record.
func (s *simulator) procRec(p *proc, r *trace.Record) *trace.Record {
	r.Worker = int32(p.slot)
	r.Proc = p.id
	r.Owner = p.owner
	r.Mono = p.clk.mono(s.now)
	r.Wall = p.clk.wall(s.now).UnixNano()
	return r
}

// fault records an injected fault. Its Worker is -1, or the slot an action
// aimed at a shard's owner resolved to (faultWorker).
func (s *simulator) fault(desc, key string) {
	s.emit(&trace.Record{Kind: trace.KindFault, Worker: s.faultWorker, Proc: -1, Key: key, Reason: desc})
}

// ---- processes ----

func (s *simulator) startProc(sl *slot) {
	if sl.proc >= 0 && s.procs[sl.proc].alive {
		return
	}
	id := int32(len(s.procs))
	p := &proc{id: id, slot: sl.idx, owner: sl.owner, alive: true, tickAt: -1, keys: map[string]*pkey{}}
	p.clk = wclock{monoOrigin: s.rEng.between(time.Second, time.Hour), drift: sl.drift, wallOffset: sl.wallOffset, steps: sl.steps}
	cfg := s.w.engineConfig(p.owner, s.rEng.Uint64())
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
	s.procs = append(s.procs, p)
	sl.proc = id
	s.emit(s.procRec(p, &trace.Record{Kind: trace.KindProcStart}))
	s.q.push(event{at: s.now + s.w.CheckpointPace, kind: evCheckpointTimer, proc: id})
	s.step(p, engine.Input{Kind: engine.InputTick})
}

func (s *simulator) stopProc(p *proc, why string) {
	if !p.alive {
		return
	}
	p.alive = false
	p.held, p.hCalls, p.hNotices = nil, nil, nil
	s.emit(s.procRec(p, &trace.Record{Kind: trace.KindProcStop, Reason: why}))
}

func (s *simulator) traceEngine(p *proc, e engine.TraceEvent) {
	if e.Kind == engine.TraceCallSent {
		s.stepSent = append(s.stepSent, sentInfo{e.Key, e.Counter, e.Reason})
	}
	r := trace.Record{Kind: trace.FromEngine(e.Kind), Key: e.Key, Counter: e.Counter, Checkpoint: e.Checkpoint,
		First: e.First, Last: e.Last, Count: e.Count, Reason: e.Reason, Previous: e.Previous}
	s.procRec(p, &r)
	r.Mono = e.Mono
	s.emit(&r)
}

// deliver hands an input to a process now, or holds it while it is paused.
func (s *simulator) deliver(p *proc, in engine.Input) {
	if !p.alive {
		return
	}
	if p.paused {
		p.held = append(p.held, in)
		return
	}
	s.step(p, in)
}

func (s *simulator) step(p *proc, in engine.Input) {
	s.stepSent = s.stepSent[:0]
	rd := p.core.Step(engine.Now{Mono: p.clk.mono(s.now), Wall: p.clk.wall(s.now)}, in)
	if p.holdNext {
		p.holdNext = false
		p.hCalls = append(p.hCalls, rd.Calls...)
		p.hNotices = append(p.hNotices, rd.Notices...)
	} else {
		for i := range rd.Calls {
			s.send(p, rd.Calls[i])
		}
		for i := range rd.Notices {
			s.notice(p, &rd.Notices[i])
		}
	}
	if rd.Stopped {
		if rd.Err != nil {
			// a worker that cannot start (or go on) would fail again
			s.slots[p.slot].desired = false
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

func (s *simulator) exited(p *proc) {
	if !p.alive {
		return
	}
	s.stopProc(p, "exit")
	sl := s.slots[p.slot]
	if sl.desired && (p.restart > 0 || s.healed) {
		d := p.restart
		if d <= 0 {
			d = time.Second
		}
		s.later(Action{At: s.now + d, Kind: ActRestart, Worker: p.slot})
	}
}

// ---- the network ----

func (s *simulator) newCall(c engine.Call, p *proc) int {
	var i int
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		s.calls = append(s.calls, inflight{})
		i = len(s.calls) - 1
	}
	if c.Op == engine.OpCreateLease || c.Op == engine.OpUpdateLease {
		c.Lease = c.Lease.Clone()
	}
	s.calls[i] = inflight{call: c, proc: p.id, sent: s.now, applied: -1}
	return i
}

func (s *simulator) release(i int) {
	if s.calls[i].pending == 0 && s.calls[i].answered {
		s.calls[i] = inflight{}
		s.free = append(s.free, i)
	}
}

func (s *simulator) schedCall(i int, at time.Duration, k evKind) {
	s.calls[i].pending++
	s.q.push(event{at: at, kind: k, a: uint64(i)})
}

func writeClass(c *engine.Call, sent []sentInfo) string {
	key, counter := c.Lease.Key, c.Lease.Counter
	if c.Op == engine.OpDeleteLease {
		key, counter = c.Key, 0
	}
	for _, si := range sent {
		if si.key == key && si.counter == counter && si.reason != "" {
			return si.reason
		}
	}
	switch c.Op {
	case engine.OpCreateLease:
		return trace.WriteCreate
	case engine.OpDeleteLease:
		return trace.WriteDelete
	case engine.OpUpdateLease:
		if c.Lease.Owner != c.Expect.Owner {
			if c.Lease.Owner == "" {
				if c.Lease.Checkpoint.IsShardEnd() {
					return trace.WriteShardEnd
				}
				return trace.WriteRelease
			}
			return trace.WriteTake
		}
		return trace.WriteRenew
	}
	return ""
}

// scriptedRetry reports whether an ActSDKRetry in force makes the SDK
// retry an applied write of kind reason. It draws only inside the
// action's window, so runs without it draw as before.
func (s *simulator) scriptedRetry(reason string) bool {
	if s.healed || s.now >= s.retryUntil || (s.retryKind != "" && s.retryKind != reason) {
		return false
	}
	return s.rNet.chance(s.retryChance)
}

func (s *simulator) linkOf(p *proc, op engine.Op) *link {
	sl := s.slots[p.slot]
	if op.IsStore() {
		return &sl.table
	}
	return &sl.stream
}

func (s *simulator) latency(l *link) time.Duration {
	d := l.lat.draw(s.rNet)
	if s.now < l.clogUntil {
		d += l.clogExtra
	}
	if d < 100*time.Microsecond {
		d = 100 * time.Microsecond
	}
	return d
}

func (s *simulator) send(p *proc, c engine.Call) {
	i := s.newCall(c, p)
	f := &s.calls[i]
	if c.Op.IsWrite() {
		f.reason = writeClass(&c, s.stepSent)
		r := trace.Record{Kind: trace.KindSend, Key: leaseKey(&c), Call: c.ID, Op: c.Op, Reason: f.reason,
			ExpOwner: c.Expect.Owner, ExpCounter: c.Expect.Counter, RowOwner: c.Lease.Owner, Counter: c.Lease.Counter, Checkpoint: c.Lease.Checkpoint}
		s.emit(s.procRec(p, &r))
	}
	l := s.linkOf(p, c.Op)
	deadline := s.now + s.timeoutOf(&c)
	if l.cutReq || s.rNet.chance(s.rate(s.w.Rates.RequestLoss)) {
		if l.cutReq {
			f.fault = "partition"
		} else {
			f.fault = "request-lost"
		}
		s.schedCall(i, deadline, evTimeout)
		return
	}
	at := s.now + s.latency(l)
	s.schedCall(i, at, evApply)
	if at > deadline {
		s.schedCall(i, deadline, evTimeout)
	}
}

func leaseKey(c *engine.Call) string {
	switch c.Op {
	case engine.OpCreateLease, engine.OpUpdateLease:
		return c.Lease.Key
	case engine.OpDeleteLease, engine.OpGetLease:
		return c.Key
	case engine.OpGetIterator, engine.OpSubscribe, engine.OpNextEvent, engine.OpUnsubscribe:
		return c.Shard
	}
	return ""
}

// rate returns r during the chaos phase and 0 after healing.
func (s *simulator) rate(r float64) float64 {
	if s.healed {
		return 0
	}
	return r
}

func (s *simulator) onApply(i int, retry bool) {
	f := &s.calls[i]
	f.pending--
	p := s.procs[f.proc]
	c := &f.call
	res := engine.Result{ID: c.ID}
	applied := false
	var execErr error
	transient := false
	if c.Op.IsStore() {
		switch {
		case s.rNet.chance(s.rate(s.w.Rates.TableThrottle)) || (s.now < s.tableThrUntil && s.rNet.chance(s.tableThrottle)):
			res.Err = errThrottled
			f.fault = "throttled"
			if retry {
				// the first attempt applied: a store may not call this
				// throttled (not applied); dynamostore reports it so
				res.Err = errRetryThrottled
				f.fault = "sdk-retry-throttled"
			}
		case s.rNet.chance(s.rate(s.w.Rates.TableTransient)):
			f.fault = "transient"
			transient = true
			if s.rNet.chance(0.5) {
				applied = s.execStore(p, f, &res)
			} else {
				res.Err = errTransient
			}
			execErr = res.Err
			res = engine.Result{ID: c.ID, Err: errTransient}
		default:
			applied = s.execStore(p, f, &res)
		}
	} else {
		switch {
		case c.Op.IsFanOut():
			if s.applyFanOut(i, f, &res) {
				return // parked: answered when an event comes (see fanout.go)
			}
		case c.Op == engine.OpGetRecords && (s.rNet.chance(s.rate(s.w.Rates.StreamThrottle)) || (s.now < s.streamThrUntil && s.rNet.chance(s.streamThrottle))):
			res.Err = errThrottled
			f.fault = "throttled"
		case c.Op == engine.OpGetRecords && s.rNet.chance(s.rate(s.w.Rates.ExpiredIterator)):
			res.Err = errExpiredIter
			f.fault = "expired-iterator"
		default:
			s.execStream(f, &res)
		}
	}
	if applied && f.applied < 0 {
		f.applied = s.now
	}
	if c.Op.IsWrite() {
		if !transient {
			execErr = res.Err
		}
		s.emitApply(p, f, execErr, retry)
	}
	f.result = res
	// an SDK retry of a write: the first reply is lost, the retry lands later
	if !retry && c.Op.IsWrite() && (s.rNet.chance(s.rate(s.w.Rates.Dup)) || s.scriptedRetry(f.reason)) {
		f.fault = "sdk-retry"
		s.schedCall(i, s.now+s.latency(s.linkOf(p, c.Op))+s.rNet.between(10*time.Millisecond, 300*time.Millisecond), evRetry)
		return
	}
	l := s.linkOf(p, c.Op)
	deadline := f.sent + s.timeoutOf(c)
	if retry {
		deadline += s.w.CallTimeout
	}
	if f.answered {
		s.release(i)
		return
	}
	if l.cutRep || s.rNet.chance(s.rate(s.w.Rates.ReplyLoss)) {
		if l.cutRep {
			f.fault = "partition-reply"
		} else {
			f.fault = "reply-lost"
		}
		if s.now < deadline {
			s.schedCall(i, deadline, evTimeout)
		} else {
			s.schedCall(i, s.now, evTimeout)
		}
		return
	}
	at := s.now + s.latency(l)
	if at <= deadline {
		s.schedCall(i, at, evReply)
	} else if s.now < deadline {
		s.schedCall(i, deadline, evTimeout)
	} else {
		s.schedCall(i, s.now, evTimeout)
	}
}

func (s *simulator) execStore(p *proc, f *inflight, res *engine.Result) bool {
	c := &f.call
	switch c.Op {
	case engine.OpListLeases:
		stale := !c.Consistent && s.rNet.chance(s.rate(s.w.Rates.StaleRead))
		view := s.now
		if stale {
			view = s.now - s.rNet.between(0, s.w.Rates.StaleLag)
			f.fault = "stale-read"
		}
		if stale {
			res.Listing, res.Err = s.tbl.ListLeasesAsOf(s.ctx, epoch.Add(view))
		} else {
			res.Listing, res.Err = s.tbl.ListLeases(s.ctx, true)
		}
		return false
	case engine.OpGetLease:
		res.Lease, res.Err = s.tbl.GetLease(s.ctx, c.Key)
		return false
	case engine.OpListPending:
		res.Listing.Leases, res.Err = s.tbl.ListPending(s.ctx, c.Key)
		return false
	}
	unconditional := false
	switch s.o.Mutation {
	case "unfenced-checkpoint":
		unconditional = f.reason == trace.WriteCheckpoint
	case "unfenced-take":
		unconditional = f.reason == trace.WriteTake
	case "unfenced-assign":
		unconditional = f.reason == trace.WriteAssign
	}
	var err error
	switch {
	case unconditional && c.Op != engine.OpCreateLease:
		err = s.writeUnconditional(c)
	case c.Op == engine.OpCreateLease:
		err = s.tbl.CreateLease(s.ctx, c.Lease)
	case c.Op == engine.OpUpdateLease:
		err = s.tbl.UpdateLease(s.ctx, c.Expect, c.Lease)
	case c.Op == engine.OpDeleteLease:
		err = s.tbl.DeleteLease(s.ctx, c.Key, c.Expect)
	}
	res.Err = err
	return err == nil
}

// writeUnconditional applies an update or delete without its condition
// (a planted bug), as an operator with direct table access would; the row
// must exist.
func (s *simulator) writeUnconditional(c *engine.Call) error {
	key := leaseKey(c)
	if _, err := s.tbl.GetLease(s.ctx, key); err != nil {
		return errUnfencedMissing
	}
	if c.Op == engine.OpDeleteLease {
		s.tbl.Remove(key)
		return nil
	}
	return s.tbl.Put(c.Lease)
}

func (s *simulator) emitApply(p *proc, f *inflight, err error, retry bool) {
	c := &f.call
	r := trace.Record{Kind: trace.KindApply, Key: leaseKey(c), Call: c.ID, Op: c.Op, Reason: f.reason, Sent: f.sent,
		ExpOwner: c.Expect.Owner, ExpCounter: c.Expect.Counter, RowOwner: c.Lease.Owner, Counter: c.Lease.Counter,
		Checkpoint: c.Lease.Checkpoint, Outcome: outcome(err), Fault: f.fault, Applied: -1}
	if err == nil {
		r.Applied = s.now
	}
	if retry {
		r.Fault = "sdk-retry"
	}
	switch s.o.Mutation {
	case "unfenced-checkpoint":
		r.Unconditional = f.reason == trace.WriteCheckpoint
	case "unfenced-take":
		r.Unconditional = f.reason == trace.WriteTake
	case "unfenced-assign":
		r.Unconditional = f.reason == trace.WriteAssign
	}
	s.emit(s.procRec(p, &r))
}

func (s *simulator) execStream(f *inflight, res *engine.Result) {
	c := &f.call
	s.expireShards()
	switch c.Op {
	case engine.OpListShards:
		res.Shards, res.Err = s.st.ListShards(s.ctx, c.Stream)
		for i := range res.Shards {
			s.tamperShard(&res.Shards[i])
		}
	case engine.OpGetIterator:
		res.Iterator, res.Err = s.st.GetShardIterator(s.ctx, c.Stream, c.Shard, s.resumePosition(c.Stream, c.Shard, c.Position))
	case engine.OpDescribeStream:
		res.Stream, res.Err = s.st.DescribeStream(s.ctx, c.Stream)
	case engine.OpGetRecords:
		res.Page, res.Err = s.st.GetRecords(s.ctx, c.Iterator, c.Limit)
		if len(res.Page.ChildShards) > 0 && (s.o.Mutation == "orphan-children" || s.o.Mutation == "ignore-second-parent") {
			cs := append([]engine.Shard(nil), res.Page.ChildShards...)
			for i := range cs {
				s.tamperShard(&cs[i])
			}
			res.Page.ChildShards = cs
		}
	}
}

// resumePosition is where a read of shard starts from pos: pos itself, or,
// under the planted bug skip-on-resume, one record past an AT_ or
// AFTER_SEQUENCE_NUMBER position.
func (s *simulator) resumePosition(stream, shard string, pos engine.Position) engine.Position {
	if s.o.Mutation == "skip-on-resume" && (pos.Type == engine.IterAfterSequenceNumber || pos.Type == engine.IterAtSequenceNumber) {
		if recs, err := s.st.Records(stream, shard); err == nil {
			j := sort.Search(len(recs), func(i int) bool { return engine.CompareSequences(recs[i].Sequence, pos.Sequence) > 0 })
			if j < len(recs) {
				pos = engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: recs[j].Sequence}
			}
		}
	}
	return pos
}

func (s *simulator) tamperShard(sh *engine.Shard) {
	switch s.o.Mutation {
	case "orphan-children":
		sh.Parent, sh.AdjacentParent = "", ""
	case "ignore-second-parent":
		sh.AdjacentParent = ""
	}
}

func outcome(err error) string {
	if o, ok := trace.EngineOutcome(err); ok {
		return o
	}
	switch {
	case errors.Is(err, errTimeout):
		return trace.OutcomeTimeout
	case errors.Is(err, errTransient):
		return trace.OutcomeTransient
	}
	return trace.OutcomeError
}

func (s *simulator) onReply(i int, timeout bool) {
	f := &s.calls[i]
	f.pending--
	if f.answered {
		s.release(i)
		return
	}
	f.answered = true
	res := f.result
	if timeout {
		res = engine.Result{ID: f.call.ID, Err: errTimeout}
	}
	p := s.procs[f.proc]
	if p.alive {
		r := trace.Record{Kind: trace.KindReply, Key: leaseKey(&f.call), Call: f.call.ID, Op: f.call.Op, Sent: f.sent, Applied: f.applied,
			Outcome: outcome(res.Err), Fault: f.fault, Reason: f.reason}
		switch f.call.Op {
		case engine.OpGetRecords:
			r.Count = len(res.Page.Records)
		case engine.OpNextEvent:
			r.Count = len(res.Event.Records)
		case engine.OpListPending:
			r.Count = len(res.Listing.Leases)
		case engine.OpGetLease:
			// the row the read returned, for the linearizability check
			// (linearizability.FromTrace)
			if res.Err == nil {
				r.RowOwner, r.Counter, r.Checkpoint = res.Lease.Owner, res.Lease.Counter, res.Lease.Checkpoint
			}
		case engine.OpListLeases:
			// the read mode and the row count (the rows are not recorded)
			r.Reason = "eventual"
			if f.call.Consistent {
				r.Reason = "consistent"
			}
			r.Count = len(res.Listing.Leases)
		}
		s.emit(s.procRec(p, &r))
		s.deliver(p, engine.Input{Kind: engine.InputResult, Result: res})
	}
	s.release(i)
}

// ---- the processor ----

func (s *simulator) newJob(j job) int {
	if n := len(s.freeJ); n > 0 {
		i := s.freeJ[n-1]
		s.freeJ = s.freeJ[:n-1]
		s.jobs[i] = j
		return i
	}
	s.jobs = append(s.jobs, j)
	return len(s.jobs) - 1
}

func (s *simulator) procDelay() time.Duration {
	if s.rProc.chance(s.rate(s.w.Rates.SlowProcessor)) {
		return s.rProc.between(time.Second, 20*time.Second)
	}
	return s.rProc.between(time.Millisecond, 50*time.Millisecond)
}

func (s *simulator) pk(p *proc, key string) *pkey {
	k := p.keys[key]
	if k == nil {
		k = &pkey{}
		p.keys[key] = k
		p.keyOrder = append(p.keyOrder, key)
	}
	return k
}

func (s *simulator) notice(p *proc, n *engine.Notice) {
	switch n.Kind {
	case engine.NoticeInitialize:
		k := s.pk(p, n.Key)
		k.gen++
		k.processed, k.asked = "", ""
		if !n.Start.IsSentinel() {
			k.processed, k.asked = n.Start.Sequence, n.Start.Sequence
		}
		s.emit(s.procRec(p, &trace.Record{Kind: trace.KindInitialized, Key: n.Key, Checkpoint: n.Start}))
		j := s.newJob(job{proc: p.id, key: n.Key, batch: n.Batch})
		s.q.push(event{at: s.now + s.rProc.between(0, 5*time.Millisecond), kind: evJob, proc: p.id, a: uint64(j)})
	case engine.NoticeRecords:
		r := trace.Record{Kind: trace.KindReceived, Key: n.Key, Count: len(n.Records)}
		if len(n.Records) > 0 {
			r.First, r.Last = n.Records[0].Sequence, n.Records[len(n.Records)-1].Sequence
			for i := 1; i < len(n.Records); i++ {
				if engine.CompareSequences(n.Records[i-1].Sequence, n.Records[i].Sequence) >= 0 {
					r.Reason = "unsorted"
				}
			}
		}
		s.emit(s.procRec(p, &r))
		jb := job{proc: p.id, key: n.Key, batch: n.Batch, first: r.First, last: r.Last, gen: s.pk(p, n.Key).gen}
		if len(n.Records) > 0 && s.rProc.chance(s.rate(s.w.Rates.FailedBatch)) {
			jb.failed = true
			jb.skip = s.w.SkipAfter > 0 && n.Attempt >= s.w.SkipAfter
		} else if len(n.Records) > 0 && s.rProc.chance(s.w.Rates.Checkpoint) {
			jb.cp = n.Records[s.rProc.IntN(len(n.Records))].Sequence
			if s.rProc.chance(0.7) {
				jb.cp = r.Last
			}
		}
		j := s.newJob(jb)
		s.q.push(event{at: s.now + s.procDelay(), kind: evJob, proc: p.id, a: uint64(j)})
	case engine.NoticeShardEnded, engine.NoticeShutdownRequested:
		s.emit(s.procRec(p, &trace.Record{Kind: trace.KindNotice, Key: n.Key, Reason: n.Kind.String()}))
		jb := job{proc: p.id, key: n.Key, batch: n.Batch, gen: s.pk(p, n.Key).gen}
		if n.Kind == engine.NoticeShutdownRequested {
			if k := p.keys[n.Key]; k != nil && k.processed != "" && k.processed != k.asked {
				jb.cp = k.processed
			}
		}
		j := s.newJob(jb)
		s.q.push(event{at: s.now + s.rProc.between(0, 10*time.Millisecond), kind: evJob, proc: p.id, a: uint64(j)})
	case engine.NoticeLeaseLost:
		s.emit(s.procRec(p, &trace.Record{Kind: trace.KindNotice, Key: n.Key, Reason: n.Kind.String()}))
		delete(p.keys, n.Key)
	case engine.NoticeCheckpointDone:
		r := trace.Record{Kind: trace.KindCheckpointAck, Key: n.Key, Checkpoint: n.Checkpoint, Outcome: trace.OutcomeOK}
		if n.Err != nil {
			r.Outcome = outcome(n.Err)
			r.Reason = n.Err.Error()
		}
		s.emit(s.procRec(p, &r))
	}
}

func (s *simulator) onJob(i int) {
	j := s.jobs[i]
	s.jobs[i] = job{}
	s.freeJ = append(s.freeJ, i)
	p := s.procs[j.proc]
	if !p.alive {
		return
	}
	if p.paused {
		// the processor is paused too: finish the job when it resumes
		k := s.newJob(j)
		s.q.push(event{at: s.now + 10*time.Millisecond, kind: evJob, proc: p.id, a: uint64(k)})
		return
	}
	current := false
	if k := p.keys[j.key]; k != nil && k.gen == j.gen {
		current = true
		if j.first != "" && (!j.failed || j.skip) {
			k.processed = j.last
		}
	}
	if j.cp != "" && (current || j.first == "") {
		s.askCheckpoint(p, j.key, j.cp)
	}
	r := trace.Record{Kind: trace.KindDone, Key: j.key, Reason: "ok", First: j.first, Last: j.last}
	if j.failed {
		r.Reason = "failed"
	}
	s.emit(s.procRec(p, &r))
	if j.batch != 0 {
		in := engine.Input{Kind: engine.InputDone, Key: j.key, Batch: j.batch, Failed: j.failed}
		if j.skip {
			in.Skipped, in.Reason = true, "skipped"
		}
		s.deliver(p, in)
	}
}

func (s *simulator) askCheckpoint(p *proc, key, seq string) {
	if k := p.keys[key]; k != nil {
		k.asked = seq
	}
	p.token++
	s.deliver(p, engine.Input{Kind: engine.InputCheckpoint, Key: key, Checkpoint: engine.SequenceCheckpoint(seq), Token: p.token})
}

func (s *simulator) onCheckpointTimer(p *proc) {
	if !p.alive {
		return
	}
	if !p.paused {
		for _, key := range p.keyOrder {
			k := p.keys[key]
			if k != nil && k.processed != "" && k.processed != k.asked {
				s.askCheckpoint(p, key, k.processed)
			}
		}
		// forget keys that are gone
		kept := p.keyOrder[:0]
		for _, key := range p.keyOrder {
			if p.keys[key] != nil {
				kept = append(kept, key)
			}
		}
		p.keyOrder = kept
	}
	s.q.push(event{at: s.now + s.w.CheckpointPace, kind: evCheckpointTimer, proc: p.id})
}

// ---- the workload ----

func (s *simulator) onPut() {
	if s.noPuts {
		return
	}
	var h uint64
	width := ^uint64(0) / uint64(len(s.idle))
	for tries := 0; ; tries++ {
		h = s.rWork.Uint64()
		i := int(h / width)
		if i >= len(s.idle) {
			i = len(s.idle) - 1
		}
		if !s.idle[i] || tries > 20 || s.healed {
			break
		}
	}
	// the hash key h·2^64 + h lands in the initial shard h / width
	// chose: the fakes split the hash key space as evenly as this does
	sh, seq, err := s.st.PutRecordWithHash(streamName, s.pkeys[s.rWork.IntN(len(s.pkeys))], h, h, nil)
	if err != nil {
		panic("sim: put: " + err.Error())
	}
	s.putsN++
	s.emit(&trace.Record{Kind: trace.KindPut, Worker: -1, Proc: -1, Key: sh, First: seq})
	s.wakeShard(sh)
	s.q.push(event{at: s.now + s.rWork.exp(s.putMean()), kind: evPut})
}

// onRetention is the periodic retention pass: it makes the stream apply
// retention to every shard (onTrim records what it hides) and records the
// closed shards that left the listing.
func (s *simulator) onRetention() {
	if _, err := s.st.Shards(streamName); err != nil {
		panic("sim: " + err.Error())
	}
	s.expireShards()
	s.q.push(event{at: s.now + 5*time.Second, kind: evRetention})
}

// onTrim records records that retention hid. The stream applies
// retention lazily, when a call or the retention pass looks at a shard, so
// the trace shows a trim no later than a reader could observe it.
func (s *simulator) onTrim(_, shard string, recs []engine.Record) {
	s.emit(&trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: shard,
		First: recs[0].Sequence, Last: recs[len(recs)-1].Sequence, Count: len(recs)})
}

// expireShards records the closed shards that have left the stream's
// listing (closed longer than the retention ago) since the last call: the
// stream answers for them as for shards that do not exist. It runs before
// every stream call, so the trace shows an expiry no later than a reader
// could observe it.
func (s *simulator) expireShards() {
	cut := s.now - s.w.Retention
	for s.expCur < len(s.closed) && s.closed[s.expCur].at < cut {
		s.emit(&trace.Record{Kind: trace.KindShardExpired, Worker: -1, Proc: -1, Key: s.closed[s.expCur].id})
		s.expCur++
	}
}

// ---- the loop ----

func (s *simulator) loop() {
	for s.q.len() > 0 {
		e := s.q.pop()
		if e.at > s.end {
			break
		}
		if s.o.MaxEvents > 0 && s.events >= s.o.MaxEvents {
			break
		}
		s.now = e.at
		s.events++
		switch e.kind {
		case evTick:
			p := s.procs[e.proc]
			if p.alive && !p.paused && e.a == p.tickGen {
				p.tickAt = -1
				s.step(p, engine.Input{Kind: engine.InputTick})
			}
		case evApply:
			s.onApply(int(e.a), false)
		case evRetry:
			s.onApply(int(e.a), true)
		case evSubWake:
			s.onSubWake(e.a)
		case evReply:
			s.onReply(int(e.a), false)
		case evTimeout:
			s.onReply(int(e.a), true)
		case evJob:
			s.onJob(int(e.a))
		case evCheckpointTimer:
			s.onCheckpointTimer(s.procs[e.proc])
		case evPut:
			s.onPut()
		case evRetention:
			s.onRetention()
		case evAction:
			s.act(s.schedule[e.a])
		case evResume:
			if id, ok := s.pauseProc[e.a]; ok {
				delete(s.pauseProc, e.a)
				s.resume(s.procs[id])
			}
		case evHeal:
			s.heal()
		case evKill:
			p := s.procs[e.proc]
			if p.alive && p.stopping && p.killAt == s.now {
				s.stopProc(p, "shutdown-timeout")
			}
		}
	}
	s.now = s.end
	s.emit(&trace.Record{Kind: trace.KindPhase, Worker: -1, Proc: -1, Reason: "end"})
}

func (s *simulator) finish() (*Result, error) {
	if s.sink != nil {
		if err := s.sink.Flush(); err != nil {
			return nil, err
		}
	}
	all := make([]trace.Record, 0, s.nrecs)
	for _, c := range s.chunks {
		all = append(all, c...)
	}
	all = append(all, s.recs...)
	s.chunks, s.recs = nil, all
	res := &Result{World: s.w, Schedule: s.schedule, Inside: len(s.outside) == 0, Outside: s.outside,
		TraceHash: s.hash.Sum(), Events: s.events, Records: s.nrecs, VirtualSeconds: s.end.Seconds(),
		Final: s.tbl.Snapshot().Leases, Replay: ReplayCommand(s.o)}
	opts := check.Options{End: s.end, Heal: s.w.Chaos, Bound: s.w.Bound, Balance: s.w.Balance, BalanceSlack: 1}
	rep := check.All(check.History{Records: s.recs, Final: res.Final, FinalKnown: true}, opts)
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
		v.Excerpt = check.Excerpt(s.recs, v, 2*s.w.Engine.LeaseDuration+time.Second, 40)
		if !res.Inside && (v.Invariant == check.S1 || (v.Invariant == check.S3 && strings.HasPrefix(v.Detail, check.S3StartPrefix))) {
			res.Tolerated = append(res.Tolerated, v)
			continue
		}
		res.Violations = append(res.Violations, v)
	}
	f := check.Measure(s.recs, s.end)
	res.Figures = Figures{Failovers: len(f.Failovers), FailoverP50: check.Percentile(f.Failovers, 50), FailoverMax: check.Percentile(f.Failovers, 100),
		Handoffs: f.Handoffs, Puts: s.putsN, LostToRetention: rep.LostToRetention}
	if f.Handoffs > 0 {
		res.Figures.RedeliveriesPerHandoff = float64(f.Redelivered) / float64(f.Handoffs)
	}
	if f.ShardHours > 0 {
		res.Figures.TableOpsPerShardHour = float64(f.StoreCalls) / f.ShardHours
		res.Figures.TableRowsPerShardHour = float64(f.RowsRead) / f.ShardHours
		res.Figures.StreamOpsPerShardHour = float64(f.StreamCalls) / f.ShardHours
	}
	if s.o.KeepTrace {
		res.Trace = s.recs
	}
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
	h, err := linearizability.FromTrace(s.recs)
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
