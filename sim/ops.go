package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Operations: the decisions the engine carries out in several writes, as
// the simulator recognises them from the calls it executes and the
// engine's trace events (the engine knows nothing of them). An operation
// is a sequence of steps, each a write of the operation that applied (or
// an act: a taker's first act, a child's first act); between two steps
// lies a window in which a fault is dangerous, as a process that crashes
// after deleting a finished parent and before creating its children, or a
// holder cut off between its final checkpoint and its release. Every run
// counts, per kind, the windows and those in which a fault struck a
// process of the operation (Result.Ops): the figure that says whether the
// swarm reaches them. Aimed faults (aim.go) fire in them on purpose.
//
// The kinds:
//   - sync: the creates and deletes one process sends in one step (a
//     shard-sync round's decisions);
//   - assign: the assigner's writes of one step (a round's assignments
//     and handoff requests);
//   - let-go: a holder's final checkpoints and its release of one lease,
//     from the moment it began to let go (its shutdown, or the handoff it
//     announced with TraceHandingOver): the first window runs from that
//     moment to the first write;
//   - handoff: a handoff request (an assignment that keeps the owner and
//     names a receiver), the holder's release, the receiver's take;
//   - take-act: a take and the taker's first act on the lease (acting, or
//     a delivery);
//   - merge: the SHARD_END of both parents of a merge, the child's create
//     and the child's first act, in whatever order they come;
//   - reshard: a split: the children's creates, the parent's SHARD_END and
//     a child's first act, in whatever order they come;
//   - assigner-row: a take of the assigner row, then the new assigner's
//     first write bound to it (an assignment or a take).
const (
	OpSync        = "sync"
	OpAssign      = "assign"
	OpLetGo       = "let-go"
	OpHandoff     = "handoff"
	OpTakeAct     = "take-act"
	OpMerge       = "merge"
	OpReshard     = "reshard"
	OpAssignerRow = "assigner-row"
)

// OpKinds are the operation kinds, in the order the figures list them.
var OpKinds = []string{OpSync, OpAssign, OpLetGo, OpHandoff, OpTakeAct, OpMerge, OpReshard, OpAssignerRow}

// OpCount is what a run saw of one operation kind: its instances (those
// with at least one step), the windows between their steps (and, for an
// operation abandoned midway, from its last step to the horizon), the
// windows in which a fault struck the operation (Faulted: a call of it
// lost, throttled, failed, timed out, its reply lost or held back, or a
// process of it struck) and those in which a process of the operation was
// struck (Struck: crashed, paused or cut off the table).
type OpCount struct {
	Kind      string
	Instances int
	Windows   int
	Faulted   int
	Struck    int
}

// opKind indexes OpKinds.
type opKind uint8

const (
	okSync opKind = iota
	okAssign
	okLetGo
	okHandoff
	okTakeAct
	okMerge
	okReshard
	okAssignerRow
	numOpKinds
)

func (k opKind) String() string { return OpKinds[k] }

// opInst is one instance of an operation in progress.
type opInst struct {
	id   uint32
	kind opKind
	key  string // the lease (let-go, handoff, take-act), the child (merge), the parent (reshard)
	// the latest step: its process, its true time (-1: none yet), the
	// steps so far
	proc  int32
	at    time.Duration
	steps int
	// the operation's writes sent and not yet done (applied, failed or
	// ended), and how many were sent
	inFlight []opCall
	sent     int
	done     bool
	// owner: the process of a let-go or an assigner-row instance; step:
	// the step that sent a same-step instance's writes
	owner int32
	step  uint64
	// events still to come (merge, reshard): "create:K", "end:K", "act:K"
	want []string
	// receiver: the worker a handoff goes to
	receiver string
	// hit: a fault struck one of its calls since its latest step
	hit bool
	// tslot: the worker slot the window since its latest step waits on,
	// for the explorer's moments (explore_moments.go; -1: none)
	tslot int
}

type opCall struct {
	slot int
	id   uint64
}

// opState is the run's operations in progress, the faults on each process
// and the counts.
type opState struct {
	nextID uint32
	open   []*opInst // in creation order
	byID   map[uint32]*opInst
	// cur: per kind, the same-step instance the step in progress fills
	cur [numOpKinds]*opInst
	// step numbers the processes' steps (simulator.step)
	step uint64
	// lastFault: per process id, the true time of the last fault that
	// struck it (-1: none)
	lastFault []time.Duration
	// down: when each process began its shutdown
	down map[int32]time.Duration
	// the instances by what they wait for
	letGo       map[procKey]*opInst
	stream      map[string]*opInst // merge and reshard, by "create:K", "end:K", "act:K"
	takes       map[string]*opInst
	handoffs    map[string]*opInst
	assignerRow map[int32]*opInst

	counts    [numOpKinds]OpCount
	nextSweep time.Duration
	// moments: the windows kept for the explorer (explore_moments.go)
	moments momentLog
}

type procKey struct {
	proc int32
	key  string
}

func (o *opState) init() {
	o.byID = map[uint32]*opInst{}
	o.down = map[int32]time.Duration{}
	o.letGo = map[procKey]*opInst{}
	o.stream = map[string]*opInst{}
	o.takes = map[string]*opInst{}
	o.handoffs = map[string]*opInst{}
	o.assignerRow = map[int32]*opInst{}
	for i := range o.counts {
		o.counts[i].Kind = OpKinds[i]
	}
}

// opHorizon is how long a window of kind k stays open without its next
// step: then the operation is taken for abandoned (its process crashed,
// its lease was lost) and the window closes.
func (s *simulator) opHorizon(k opKind) time.Duration {
	if k == okMerge || k == okReshard {
		// a parent may take long to finish: its holder reads it to its end
		return 6*s.full.LeaseDuration + 2*s.full.ShardSyncInterval
	}
	return 3 * s.full.LeaseDuration
}

func (s *simulator) newOp(k opKind, key string) *opInst {
	o := &s.ops
	o.nextID++
	in := &opInst{id: o.nextID, kind: k, key: key, proc: -1, at: -1, owner: -1, tslot: -1}
	o.open = append(o.open, in)
	o.byID[in.id] = in
	return in
}

// opCallFault notes a fault on call f (lost, throttled, failed, stale,
// timed out, its reply lost or held back): it strikes the operations f
// belongs to.
func (s *simulator) opCallFault(f *inflight) {
	for _, id := range f.ops {
		if in := s.ops.byID[id]; in != nil {
			in.hit = true
		}
	}
}

// opFaultOn notes a fault that struck process id now: a crash, a pause,
// its table link cut.
func (s *simulator) opFaultOn(id int32) {
	o := &s.ops
	for int(id) >= len(o.lastFault) {
		o.lastFault = append(o.lastFault, -1)
	}
	o.lastFault[id] = s.now
}

// opFaultOnSlot notes a fault that struck the live process of slot sl.
func (s *simulator) opFaultOnSlot(sl *slot) {
	if p := s.live(sl); p != nil {
		s.opFaultOn(p.id)
	}
}

func (s *simulator) faultedSince(id int32, t time.Duration) bool {
	o := &s.ops
	return id >= 0 && int(id) < len(o.lastFault) && o.lastFault[id] >= t
}

// opStep records a step of in by process proc now: the window since the
// previous step closes, and an aimed fault may fire (aim.go). f is the
// write that made the step (nil for an act).
func (s *simulator) opStep(in *opInst, proc int32, f *inflight) {
	if in.done {
		return
	}
	c := &s.ops.counts[in.kind]
	if in.steps == 0 {
		c.Instances++
	}
	if in.at >= 0 {
		c.Windows++
		s.noteWindow(in)
		struck := s.faultedSince(in.proc, in.at) || s.faultedSince(proc, in.at)
		if struck {
			c.Struck++
		}
		if in.hit || struck {
			c.Faulted++
		}
	}
	in.hit = false
	in.steps++
	in.proc, in.at = proc, s.now
	in.tslot = s.windowTarget(in)
	s.aimAt(in, f)
}

// closeOp ends in; an operation closed before it was complete leaves its
// last window open until the horizon (or now, if sooner).
func (s *simulator) closeOp(in *opInst, complete bool) {
	if in.done {
		return
	}
	in.done = true
	o := &s.ops
	delete(o.byID, in.id)
	if !complete && in.at >= 0 && in.kind != okSync && in.kind != okAssign {
		s.noteWindow(in)
		c := &o.counts[in.kind]
		if in.steps == 0 {
			c.Instances++ // a let-go that never wrote
		}
		c.Windows++
		struck := s.faultedSince(in.proc, in.at)
		if struck {
			c.Struck++
		}
		if in.hit || struck {
			c.Faulted++
		}
	}
	switch in.kind {
	case okMerge, okReshard:
		for _, k := range in.want {
			if o.stream[k] == in {
				delete(o.stream, k)
			}
		}
	case okTakeAct:
		if o.takes[in.key] == in {
			delete(o.takes, in.key)
		}
	case okHandoff:
		if o.handoffs[in.key] == in {
			delete(o.handoffs, in.key)
		}
	case okAssignerRow:
		if o.assignerRow[in.owner] == in {
			delete(o.assignerRow, in.owner)
		}
	case okLetGo:
		k := procKey{in.owner, in.key}
		if o.letGo[k] == in {
			delete(o.letGo, k)
		}
	}
}

// sweepOps closes, now and then, the instances whose window outlasted the
// horizon, and the same-step ones whose writes are all done.
func (s *simulator) sweepOps() {
	o := &s.ops
	if s.now < o.nextSweep {
		return
	}
	o.nextSweep = s.now + s.full.LeaseDuration
	kept := o.open[:0]
	for _, in := range o.open {
		switch {
		case in.done:
		case in.at >= 0 && s.now-in.at > s.opHorizon(in.kind):
			s.closeOp(in, false)
		case in.at < 0 && len(in.inFlight) == 0 && in.sent > 0:
			s.closeOp(in, false) // every write failed
		}
		if !in.done {
			kept = append(kept, in)
		}
	}
	clear(o.open[len(kept):])
	o.open = kept
}

// opSent files a write that p sends now (call slot i) under the operations
// it belongs to.
func (s *simulator) opSent(p *proc, i int, f *inflight) {
	o := &s.ops
	s.sweepOps()
	key := leaseKey(&f.call)
	if a := o.assignerRow[p.id]; a != nil && a.steps == 1 && key != engine.AssignerKey && (f.reason == trace.WriteAssign || f.reason == trace.WriteTake) {
		s.addCall(a, i, f)
	}
	switch f.reason {
	case trace.WriteCreate, trace.WriteDelete:
		if !engine.IsReserved(key) {
			s.addCall(s.stepOp(okSync, p), i, f)
		}
	case trace.WriteAssign:
		s.addCall(s.stepOp(okAssign, p), i, f)
		if l := &f.call.Lease; l.HandoffTo != "" && l.Owner != "" {
			if h := o.handoffs[key]; h != nil {
				s.closeOp(h, false)
			}
			h := s.newOp(okHandoff, key)
			h.receiver = l.HandoffTo
			o.handoffs[key] = h
			s.addCall(h, i, f)
		}
	case trace.WriteTake:
		if key == engine.AssignerKey {
			if a := o.assignerRow[p.id]; a != nil {
				s.closeOp(a, false)
			}
			a := s.newOp(okAssignerRow, key)
			a.owner = p.id
			o.assignerRow[p.id] = a
			s.addCall(a, i, f)
			return
		}
		if h := o.handoffs[key]; h != nil && h.receiver == p.owner && h.steps == 2 {
			s.addCall(h, i, f)
		}
		if t := o.takes[key]; t != nil {
			s.closeOp(t, false)
		}
		t := s.newOp(okTakeAct, key)
		o.takes[key] = t
		s.addCall(t, i, f)
	case trace.WriteCheckpoint, trace.WriteRelease:
		if lg := s.letGoOp(p, key); lg != nil {
			s.addCall(lg, i, f)
		}
		if h := o.handoffs[key]; h != nil && f.reason == trace.WriteRelease && h.steps == 1 {
			s.addCall(h, i, f)
		}
	}
}

// stepOp returns the same-step instance of kind k of p's step in progress.
func (s *simulator) stepOp(k opKind, p *proc) *opInst {
	o := &s.ops
	if c := o.cur[k]; c != nil && !c.done && c.step == o.step && c.owner == p.id {
		return c
	}
	in := s.newOp(k, "")
	in.step, in.owner = o.step, p.id
	o.cur[k] = in
	return in
}

// letGoOp returns p's let-go instance of key if p is letting it go (it
// announced a handoff of it, or it is shutting down).
func (s *simulator) letGoOp(p *proc, key string) *opInst {
	o := &s.ops
	if in := o.letGo[procKey{p.id, key}]; in != nil {
		return in
	}
	start, down := o.down[p.id]
	if !down {
		return nil
	}
	return s.startLetGo(p, key, start)
}

func (s *simulator) startLetGo(p *proc, key string, start time.Duration) *opInst {
	o := &s.ops
	k := procKey{p.id, key}
	if in := o.letGo[k]; in != nil {
		s.closeOp(in, false)
	}
	in := s.newOp(okLetGo, key)
	in.owner = p.id
	in.proc, in.at = p.id, start
	o.letGo[k] = in
	s.aimAt(in, nil)
	return in
}

func (s *simulator) addCall(in *opInst, i int, f *inflight) {
	in.inFlight = append(in.inFlight, opCall{slot: i, id: f.call.ID})
	in.sent++
	f.ops = append(f.ops, in.id)
}

// opDone is a write of operations done: applied (a step), failed, or
// ended without reaching the table.
func (s *simulator) opDone(p *proc, i int, f *inflight, applied bool) {
	o := &s.ops
	f.opsDone = true
	for _, id := range f.ops {
		in := o.byID[id]
		if in == nil {
			continue
		}
		for j, c := range in.inFlight {
			if c.slot == i && c.id == f.call.ID {
				in.inFlight = append(in.inFlight[:j], in.inFlight[j+1:]...)
				break
			}
		}
		if applied {
			s.opStep(in, p.id, f)
		}
		switch in.kind {
		case okSync, okAssign:
			if len(in.inFlight) == 0 && (o.cur[in.kind] != in || o.step != in.step) {
				s.closeOp(in, true)
			}
		case okLetGo:
			if applied && f.reason == trace.WriteRelease {
				s.closeOp(in, true)
			}
		case okHandoff:
			if applied && f.reason == trace.WriteTake {
				s.closeOp(in, true)
			}
		case okTakeAct:
			if !applied {
				s.closeOp(in, false)
			}
		case okAssignerRow:
			if !applied && in.steps == 0 {
				s.closeOp(in, false)
			} else if in.steps >= 2 {
				s.closeOp(in, true)
			}
		}
	}
	if applied {
		switch f.reason {
		case trace.WriteShardEnd:
			s.streamStep("end:"+leaseKey(&f.call), p.id, f)
		case trace.WriteCreate:
			s.streamStep("create:"+leaseKey(&f.call), p.id, f)
		}
	}
}

// streamStep is an event a merge or a split waits for.
func (s *simulator) streamStep(ev string, proc int32, f *inflight) {
	o := &s.ops
	in := o.stream[ev]
	if in == nil {
		return
	}
	delete(o.stream, ev)
	s.opStep(in, proc, f)
	for _, k := range in.want {
		if o.stream[k] == in {
			return
		}
	}
	s.closeOp(in, true)
}

// opMerged notes a merge of x and y into child c; opSplit a split of
// parent into children.
func (s *simulator) opMerged(x, y, c string) {
	in := s.newOp(okMerge, c)
	in.want = []string{"end:" + x, "end:" + y, "create:" + c, "act:" + c}
	s.fileStream(in)
}

func (s *simulator) opSplit(parent string, children []string) {
	in := s.newOp(okReshard, parent)
	in.want = []string{"end:" + parent}
	for _, c := range children {
		in.want = append(in.want, "create:"+c)
	}
	in.want = append(in.want, "act:"+children[0])
	s.fileStream(in)
}

func (s *simulator) fileStream(in *opInst) {
	for _, k := range in.want {
		if old := s.ops.stream[k]; old != nil {
			s.closeOp(old, false)
		}
		s.ops.stream[k] = in
	}
}

// opEngineEvent follows the engine's trace events an operation needs: a
// lease being handed over, a first act.
func (s *simulator) opEngineEvent(p *proc, e *engine.TraceEvent) {
	o := &s.ops
	switch e.Kind {
	case engine.TraceHandingOver:
		s.startLetGo(p, e.Key, s.now)
	case engine.TraceActing, engine.TraceDelivered:
		if in := o.takes[e.Key]; in != nil && in.proc == p.id && in.steps == 1 {
			s.opStep(in, p.id, nil)
			s.closeOp(in, true)
		}
		if e.Kind == engine.TraceActing {
			s.streamStep("act:"+e.Key, p.id, nil)
		}
	}
}

// opShutdown notes that p began a graceful shutdown now: it lets go of
// every lease the table shows it holding.
func (s *simulator) opShutdown(p *proc) {
	s.ops.down[p.id] = s.now
	for _, l := range s.tbl.Snapshot().Leases {
		if l.Owner == p.owner && !engine.IsReserved(l.Key) {
			s.startLetGo(p, l.Key, s.now)
		}
	}
}

// opStepped is called as a process's step begins: the same-step instances
// of the step before are complete once their writes are done.
func (s *simulator) opStepped() {
	o := &s.ops
	for k, c := range o.cur {
		if c != nil {
			if len(c.inFlight) == 0 {
				s.closeOp(c, true)
			}
			o.cur[k] = nil
		}
	}
	o.step++
}

// opCounts closes what is still open and returns the run's counts.
func (s *simulator) opCounts() []OpCount {
	o := &s.ops
	for _, in := range o.open {
		s.closeOp(in, false)
	}
	o.open = nil
	return append([]OpCount(nil), o.counts[:]...)
}

// OpCountsString renders a run's operation counts: per kind, the windows
// struck and faulted of all windows.
func OpCountsString(cs []OpCount) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d/%d/%d", c.Kind, c.Struck, c.Faulted, c.Windows)
	}
	return b.String()
}
