package sim

import (
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Coverage is the abstract-state coverage map of one run, computed from
// its trace records as they are recorded (Options.Observe). After every
// record that changes what it tracks of a lease row or of a worker, it
// adds the hash of that row's or worker's abstract state (a small tuple,
// see docs/explore.md) to the run's set. The set is a function of the
// records alone: the same world gives the same set.
//
// A lease row's state: the row's class (shard lease, assigner row, hello
// row, other reserved row); its phase (created, assigned, held, handing
// over, released, lost, ended), how many processes act on it (0, 1, 2 or
// more); the kind of the last write to it whose reply came back and that
// reply's outcome class (ok, condition failed, throttled, not found,
// unknown); whether the last writer acts on it now; whether a write of
// unknown outcome to it is still open; and the fault classes active now.
//
// A worker's state: whether a process runs in its slot; whether it acts
// on the assigner row; how many leases it acts on (0, 1, 2-3, 4 or more);
// whether it has a write of unknown outcome open; and the fault classes
// active now.
//
// A fault class is active for FaultWindow after a fault of its class was
// recorded (one that did something: "no live process" faults are not).
type Coverage struct {
	keys   map[string]int // key -> index in rows
	rows   []covRow
	procs  map[int32]*covProc // by process id
	order  []int32            // process ids, in order of first sight
	slots  []covSlot
	recent [numFaultClasses]time.Duration // last time a fault of each class was recorded (+1ns; 0: never)
	now    time.Duration
	seen   map[uint64]struct{}
	list   []uint64
}

// FaultWindow is how long a fault counts as active in the coverage map.
const FaultWindow = 10 * time.Second

type covRow struct {
	class     uint8
	phase     uint8
	acting    []int32 // processes acting on it
	lastKind  uint8
	lastOut   uint8
	lastProc  int32
	unknown   []callRef // writes of unknown outcome still open
	lastState uint64
}

type callRef struct {
	proc int32
	call uint64
}

type covProc struct {
	slot    int32
	alive   bool
	unknown []callRef
}

type covSlot struct {
	lastState uint64
}

// row classes
const (
	rowLease uint8 = iota
	rowAssigner
	rowHello
	rowReserved
)

// phases
const (
	phaseNone uint8 = iota
	phaseCreated
	phaseAssigned
	phaseHeld
	phaseHandingOver
	phaseReleased
	phaseLost
	phaseEnded
)

// fault classes
const (
	faultProcess    = iota // crash, restart, pause, shutdown, scale in/out
	faultNetwork           // partition, clog, cut, heal
	faultClock             // clock steps
	faultStore             // throttles, SDK retries, table errors
	numFaultClasses        // the classes the map tells apart
	faultOther      = -1   // stream changes, bursts, etcd watches: not in the map
)

// faultWords classify a fault record's description, first match wins.
var faultWords = []struct {
	word  string
	class int
}{
	{"clock-step", faultClock}, {"crash", faultProcess}, {"restart", faultProcess}, {"pause", faultProcess},
	{"shutdown", faultProcess}, {"scale-", faultProcess}, {"rolling", faultProcess},
	{"partition", faultNetwork}, {"clog", faultNetwork}, {"cut ", faultNetwork}, {"heal-link", faultNetwork}, {"cut-after", faultNetwork},
	{"throttle", faultStore}, {"sdk-retry", faultStore}, {"error", faultStore}, {"stale", faultStore},
}

func faultClassOf(desc string) int {
	for _, w := range faultWords {
		if strings.Contains(desc, w.word) {
			return w.class
		}
	}
	return faultOther
}

var writeKinds = []string{trace.WriteTake, trace.WriteRenew, trace.WriteCheckpoint, trace.WriteRelease, trace.WriteShardEnd,
	trace.WriteCreate, trace.WriteDelete, trace.WriteAssign, trace.WriteHello}

func writeKindOf(reason string) uint8 {
	if i := slices.Index(writeKinds, reason); i >= 0 {
		return uint8(i + 1)
	}
	return uint8(len(writeKinds) + 1)
}

// outcome classes
const (
	outNone uint8 = iota
	outOK
	outCondition
	outThrottled
	outNotFound
	outUnknown
	outOther
)

func outcomeOf(o string) uint8 {
	switch o {
	case trace.OutcomeOK:
		return outOK
	case trace.OutcomeCondition:
		return outCondition
	case trace.OutcomeThrottled:
		return outThrottled
	case trace.OutcomeNotFound:
		return outNotFound
	case trace.OutcomeTimeout, trace.OutcomeTransient, trace.OutcomeError:
		return outUnknown
	}
	return outOther
}

// NewCoverage returns an empty coverage map for one run.
func NewCoverage() *Coverage {
	return &Coverage{keys: map[string]int{}, procs: map[int32]*covProc{}, seen: map[uint64]struct{}{}}
}

func (c *Coverage) row(key string) *covRow {
	i, ok := c.keys[key]
	if !ok {
		cl := rowLease
		switch {
		case key == engine.AssignerKey:
			cl = rowAssigner
		case engine.IsWorkerRow(key):
			cl = rowHello
		case strings.HasPrefix(key, engine.ReservedPrefix):
			cl = rowReserved
		}
		i = len(c.rows)
		c.keys[key] = i
		c.rows = append(c.rows, covRow{class: cl, lastProc: -1})
	}
	return &c.rows[i]
}

func (c *Coverage) proc(id, slot int32) *covProc {
	p, ok := c.procs[id]
	if !ok {
		p = &covProc{slot: slot}
		c.procs[id] = p
		c.order = append(c.order, id)
	}
	if slot >= 0 {
		for int(slot) >= len(c.slots) {
			c.slots = append(c.slots, covSlot{})
		}
	}
	return p
}

func (c *Coverage) faultMask() uint64 {
	var m uint64
	for i, t := range c.recent {
		if t != 0 && c.now-(t-1) <= FaultWindow {
			m |= 1 << i
		}
	}
	return m
}

// Observe adds what record r changes (the Options.Observe hook).
func (c *Coverage) Observe(r trace.Record) {
	c.now = r.T
	switch r.Kind {
	case trace.KindFault:
		if k := faultClassOf(r.Reason); k >= 0 && !strings.Contains(r.Reason, ": no live") {
			c.recent[k] = r.T + 1
		}
		return
	case trace.KindProcStart:
		p := c.proc(r.Proc, r.Worker)
		p.alive = true
		c.slotState(r.Worker)
		return
	case trace.KindProcStop:
		p := c.proc(r.Proc, r.Worker)
		p.alive = false
		p.unknown = nil
		for i := range c.rows {
			row := &c.rows[i]
			if n := len(row.acting); slices.Contains(row.acting, r.Proc) {
				row.acting = slices.DeleteFunc(row.acting, func(id int32) bool { return id == r.Proc })
				if len(row.acting) != n {
					c.rowState(row)
				}
			}
		}
		c.slotState(r.Worker)
		return
	}
	if r.Key == "" {
		return
	}
	row := c.row(r.Key)
	switch r.Kind {
	case trace.LeaseCreated:
		if row.phase == phaseNone {
			row.phase = phaseCreated
		}
	case trace.Assigned:
		row.phase = phaseAssigned
	case trace.LeaseAcquired:
		row.phase = phaseHeld
	case trace.Acting:
		row.phase = phaseHeld
		if !slices.Contains(row.acting, r.Proc) {
			row.acting = append(row.acting, r.Proc)
		}
	case trace.StoppedActing:
		row.acting = slices.DeleteFunc(row.acting, func(id int32) bool { return id == r.Proc })
	case trace.HandingOver:
		row.phase = phaseHandingOver
	case trace.LeaseReleased:
		row.phase = phaseReleased
	case trace.LeaseLost:
		row.phase = phaseLost
	case trace.ShardEnded, trace.LeaseDeleted:
		row.phase = phaseEnded
	case trace.KindReply:
		if r.Reason == "" || r.Proc < 0 {
			return
		}
		row.lastKind, row.lastOut, row.lastProc = writeKindOf(r.Reason), outcomeOf(r.Outcome), r.Proc
		if row.lastOut == outUnknown {
			ref := callRef{r.Proc, r.Call}
			row.unknown = append(row.unknown, ref)
			p := c.proc(r.Proc, r.Worker)
			p.unknown = append(p.unknown, ref)
			c.slotState(p.slot)
		}
	case trace.KindCallEnd:
		ref := callRef{r.Proc, r.Call}
		row.unknown = slices.DeleteFunc(row.unknown, func(x callRef) bool { return x == ref })
		if p, ok := c.procs[r.Proc]; ok {
			if n := len(p.unknown); n > 0 {
				p.unknown = slices.DeleteFunc(p.unknown, func(x callRef) bool { return x == ref })
				if len(p.unknown) != n {
					c.slotState(p.slot)
				}
			}
		}
	default:
		return
	}
	c.rowState(row)
	switch r.Kind {
	case trace.Acting, trace.StoppedActing:
		if r.Worker >= 0 {
			c.proc(r.Proc, r.Worker)
			c.slotState(r.Worker)
		}
	}
}

// add records one state hash.
func (c *Coverage) add(h uint64) {
	if _, ok := c.seen[h]; !ok {
		c.seen[h] = struct{}{}
		c.list = append(c.list, h)
	}
}

func mix(h, v uint64) uint64 {
	h = (h ^ v) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

func bucket(n int, edges ...int) uint64 {
	var b uint64
	for _, e := range edges {
		if n >= e {
			b++
		}
	}
	return b
}

func (c *Coverage) rowState(row *covRow) {
	writer := uint64(2)
	if len(row.acting) > 0 {
		writer = 0
		if slices.Contains(row.acting, row.lastProc) {
			writer = 1
		}
	}
	h := mix(0x5eed, 1) // lease rows
	for _, v := range []uint64{uint64(row.class), uint64(row.phase), bucket(len(row.acting), 1, 2), uint64(row.lastKind), uint64(row.lastOut),
		writer, bucket(len(row.unknown), 1), c.faultMask()} {
		h = mix(h, v)
	}
	if h != row.lastState {
		row.lastState = h
		c.add(h)
	}
}

func (c *Coverage) slotState(slot int32) {
	if slot < 0 {
		return
	}
	for int(slot) >= len(c.slots) {
		c.slots = append(c.slots, covSlot{})
	}
	var alive, assigner bool
	leases, unknown := 0, 0
	for _, id := range c.order {
		p := c.procs[id]
		if p.slot != slot || !p.alive {
			continue
		}
		alive = true
		unknown += len(p.unknown)
	}
	for i := range c.rows {
		row := &c.rows[i]
		for _, id := range row.acting {
			if p, ok := c.procs[id]; ok && p.slot == slot {
				if row.class == rowAssigner {
					assigner = true
				} else if row.class == rowLease {
					leases++
				}
			}
		}
	}
	h := mix(0x5eed, 2) // workers
	for _, v := range []uint64{b2u(alive), b2u(assigner), bucket(leases, 1, 2, 4), bucket(unknown, 1), c.faultMask()} {
		h = mix(h, v)
	}
	if sl := &c.slots[slot]; h != sl.lastState {
		sl.lastState = h
		c.add(h)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// States returns the distinct abstract states the run reached, sorted.
func (c *Coverage) States() []uint64 {
	out := slices.Clone(c.list)
	slices.Sort(out)
	return out
}
