package sim

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/sim/trace"
)

// internal action kinds (printed in the schedule too)
const (
	actHealLink ActionKind = "heal-link"
)

// later schedules an action the run itself decides on (a restart, the end
// of a partition) and lists it in the schedule.
func (s *simulator) later(a Action) {
	s.q.push(event{at: a.At, kind: evAction, a: uint64(len(s.schedule))})
	s.schedule = append(s.schedule, a)
}

// midActSlack is the longest mid-act pause that stays inside the
// assumptions: the part of the safety margin that drift does not use.
func (s *simulator) midActSlack() time.Duration {
	used := engine.MinSafetyMargin(s.full.LeaseDuration, 2*s.w.DriftBound)
	return (s.full.SafetyMargin - used) / 2
}

// drawSchedule draws the timed faults of the chaos phase.
func (s *simulator) drawSchedule() []Action {
	r := s.rFault
	w := s.w
	var out []Action
	at := func() time.Duration { return r.between(time.Second, w.Chaos-time.Second).Round(time.Millisecond) }
	n := func(lo, hi int) int { return r.intIn(lo, hi) }
	worker := func() int { return r.IntN(w.Workers) }
	group := func() []int {
		if w.Workers == 1 || r.chance(0.5) {
			return []int{worker()}
		}
		var g []int
		for i := 0; i < w.Workers; i++ {
			if r.chance(0.5) {
				g = append(g, i)
			}
		}
		if len(g) == 0 {
			g = []int{worker()}
		}
		return g
	}
	target := func() string { return []string{"table", "stream", "both", "both"}[r.IntN(4)] }
	ld := s.full.LeaseDuration
	for _, c := range w.Faults {
		switch c {
		case "clock-steps":
			for i := n(1, 2*w.Workers); i > 0; i-- {
				d := r.logUniform(time.Second, 5*time.Minute).Round(time.Millisecond)
				if r.chance(0.5) {
					d = -d
				}
				out = append(out, Action{At: at(), Kind: ActClockStep, Worker: worker(), Extra: d})
			}
		case "partition":
			for i := n(1, 4); i > 0; i-- {
				dir := []string{"both", "both", "both", "request", "reply"}[r.IntN(5)]
				out = append(out, Action{At: at(), Kind: ActPartition, Workers: group(), Target: target(), Dir: dir, Dur: r.logUniform(time.Second, 3*ld).Round(time.Millisecond)})
			}
		case "clog":
			for i := n(1, 4); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActClog, Workers: group(), Target: target(), Extra: r.between(200*time.Millisecond, 3*time.Second).Round(time.Millisecond), Dur: r.logUniform(time.Second, 3*ld).Round(time.Millisecond)})
			}
		case "crash":
			for i := n(1, w.Workers+1); i > 0; i-- {
				a := Action{At: at(), Kind: ActCrash, Worker: worker(), NewOwner: r.chance(0.5)}
				if r.chance(0.8) {
					a.Dur = r.between(500*time.Millisecond, 3*ld).Round(time.Millisecond)
				}
				out = append(out, a)
			}
		case "pause":
			slack := s.midActSlack()
			for i := n(1, 4); i > 0; i-- {
				a := Action{At: at(), Kind: ActPause, Worker: worker()}
				if slack > time.Millisecond && r.chance(0.5) {
					a.MidAct = true
					a.Dur = r.between(time.Millisecond, slack).Round(time.Millisecond)
				} else {
					a.Dur = r.logUniform(10*time.Millisecond, 3*ld).Round(time.Millisecond)
				}
				out = append(out, a)
			}
		case "long-pause":
			out = append(out, Action{At: at(), Kind: ActPause, Worker: worker(), MidAct: true, Dur: r.between(s.full.SafetyMargin, 2*ld).Round(time.Millisecond)})
		case "shutdown":
			for i := n(1, 3); i > 0; i-- {
				a := Action{At: at(), Kind: ActShutdown, Worker: worker()}
				if r.chance(0.8) {
					a.Dur = r.between(time.Second, 2*ld).Round(time.Millisecond)
				}
				out = append(out, a)
			}
		case "scale":
			for i := n(1, 3); i > 0; i-- {
				if r.chance(0.5) {
					out = append(out, Action{At: at(), Kind: ActScaleOut})
				} else {
					out = append(out, Action{At: at(), Kind: ActScaleIn, Worker: worker()})
				}
			}
		case "rolling":
			t0 := at()
			gap := r.between(ld/2, 2*ld).Round(time.Millisecond)
			for i := 0; i < w.Workers; i++ {
				t := t0 + time.Duration(i)*gap
				if t < w.Chaos {
					out = append(out, Action{At: t, Kind: ActShutdown, Worker: i, Dur: r.between(time.Second, 5*time.Second).Round(time.Millisecond)})
				}
			}
		case "table-throttle":
			for i := n(1, 3); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActTableThrottle, Dur: r.between(time.Second, 2*ld).Round(time.Millisecond), Value: r.rangeF(0.3, 1)})
			}
		case "stream-throttle":
			for i := n(1, 3); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActStreamThrottle, Dur: r.between(time.Second, 2*ld).Round(time.Millisecond), Value: r.rangeF(0.3, 1)})
			}
		case "split":
			for i := n(1, 4); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActSplit})
			}
		case "merge":
			for i := n(1, 4); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActMerge})
			}
		case "bursts":
			for i := n(1, 3); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActBurst, Dur: r.between(2*time.Second, 30*time.Second).Round(time.Millisecond), Value: r.rangeF(3, 20)})
			}
		case "dup-owner":
			out = append(out, Action{At: at(), Kind: ActDupOwner, Worker: worker()})
		}
	}
	if w.has("drift-beyond") {
		s.outside = append(s.outside, fmt.Sprintf("clock drift up to ±%.4f beyond the configured bound %.4f", w.DriftBound, s.full.MaxClockDrift))
	}
	return out
}

func (s *simulator) slotOf(i int) *slot {
	if len(s.slots) == 0 {
		return nil
	}
	if i < 0 {
		i = -i
	}
	return s.slots[i%len(s.slots)]
}

// ownerSlot returns the slot whose live process owns shard's lease in the
// table now.
func (s *simulator) ownerSlot(shard string) (int, bool) {
	for _, l := range s.tbl.Snapshot().Leases {
		if l.Key != shard || l.Owner == "" {
			continue
		}
		for _, sl := range s.slots {
			if p := s.live(sl); p != nil && p.owner == l.Owner && !sl.dup {
				return sl.idx, true
			}
		}
	}
	return 0, false
}

func (s *simulator) live(sl *slot) *proc {
	if sl == nil || sl.proc < 0 {
		return nil
	}
	if p := s.procs[sl.proc]; p.alive {
		return p
	}
	return nil
}

func (s *simulator) act(a Action) {
	desc := a.String()
	if a.Shard != "" && (a.Kind == ActCrash || a.Kind == ActPause || a.Kind == ActShutdown) {
		w, ok := s.ownerSlot(a.Shard)
		if !ok {
			s.fault(desc+": no live process owns it", a.Shard)
			return
		}
		a.Worker = w
		s.faultWorker = int32(w)
		defer func() { s.faultWorker = -1 }()
	}
	switch a.Kind {
	case ActCrash:
		sl := s.slotOf(a.Worker)
		p := s.live(sl)
		if p == nil {
			return
		}
		s.fault(desc, "")
		s.stopProc(p, "crash")
		if a.NewOwner {
			sl.restarts++
			sl.owner = "w" + strconv.Itoa(sl.idx) + "-r" + strconv.Itoa(sl.restarts)
		}
		if a.Dur > 0 {
			s.later(Action{At: s.now + a.Dur, Kind: ActRestart, Worker: sl.idx})
		}
	case ActRestart:
		sl := s.slotOf(a.Worker)
		if s.live(sl) != nil || !sl.desired {
			return
		}
		s.fault(desc, "")
		if a.NewOwner {
			sl.restarts++
			sl.owner = "w" + strconv.Itoa(sl.idx) + "-r" + strconv.Itoa(sl.restarts)
		}
		s.startProc(sl)
	case ActPause:
		p := s.live(s.slotOf(a.Worker))
		if p == nil || p.paused {
			return
		}
		s.fault(desc, "")
		if a.MidAct {
			if a.Dur > s.midActSlack() {
				s.outside = append(s.outside, fmt.Sprintf("at %v a pause of %v in the middle of acting, longer than the margin allows (%v)", s.now, a.Dur, s.midActSlack()))
			}
			p.holdNext = true
			s.step(p, engine.Input{Kind: engine.InputTick})
		}
		p.paused = true
		s.lastPauseID++
		s.pauseProc[s.lastPauseID] = p.id
		s.q.push(event{at: s.now + a.Dur, kind: evResume, a: s.lastPauseID})
	case ActShutdown, ActScaleIn:
		sl := s.slotOf(a.Worker)
		p := s.live(sl)
		if p == nil || p.stopping {
			return
		}
		s.fault(desc, "")
		if a.Kind == ActScaleIn {
			if n := s.desiredCount(); n <= 1 || (s.full.MaxLeasesForWorker > 0 && n <= s.w.Workers) {
				return
			}
			sl.desired = false
		}
		p.stopping = true
		p.restart = a.Dur
		p.killAt = s.now + 3*s.full.LeaseDuration + 4*s.w.CallTimeout
		s.q.push(event{at: p.killAt, kind: evKill, proc: p.id})
		s.deliver(p, engine.Input{Kind: engine.InputShutdown})
	case ActForeignApp:
		s.foreignApp(a)
	case ActRecreateStream:
		s.recreateStream(a)
	case ActScaleOut:
		s.fault(desc, "")
		sl := s.addSlot(s.rFault)
		s.startProc(sl)
	case ActPartition, actHealLink, ActClog:
		s.fault(desc, "")
		for _, i := range a.Workers {
			sl := s.slotOf(i)
			for _, l := range s.links(sl, a.Target) {
				switch a.Kind {
				case ActPartition:
					l.cutReq = a.Dir != "reply"
					l.cutRep = a.Dir != "request"
				case actHealLink:
					l.cutReq, l.cutRep = false, false
				case ActClog:
					l.clogUntil = s.now + a.Dur
					l.clogExtra = a.Extra
				}
			}
		}
		if a.Kind == ActPartition {
			s.later(Action{At: s.now + a.Dur, Kind: actHealLink, Workers: a.Workers, Target: a.Target})
		}
	case ActClockStep:
		sl := s.slotOf(a.Worker)
		s.fault(desc, "")
		sl.steps += a.Extra
		if p := s.live(sl); p != nil {
			p.clk.steps += a.Extra
		}
	case ActSplit:
		open := s.openShards()
		if len(open) >= s.maxOpen {
			return
		}
		id := ""
		for _, sh := range open {
			if sh.ID == a.Shard {
				id = a.Shard
			}
		}
		if id == "" {
			id = open[s.rFault.IntN(len(open))].ID
		}
		s.fault(desc, id)
		children, err := s.st.SplitShardEvenly(streamName, id)
		if err != nil {
			panic("sim: split: " + err.Error())
		}
		s.closed = append(s.closed, closedShard{id, s.now})
		s.emit(&trace.Record{Kind: trace.KindShardClosed, Worker: -1, Proc: -1, Key: id, Last: s.shardInfo(id).EndingSequence})
		for _, c := range children {
			s.emit(&trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: c, Parent: id})
		}
		s.wakeShard(id)
	case ActMerge:
		open := s.openShards()
		if len(open) < 2 {
			return
		}
		i := s.rFault.IntN(len(open) - 1)
		for j := range open {
			if open[j].ID == a.Shard && j+1 < len(open) {
				i = j
			}
		}
		x, y := open[i].ID, open[i+1].ID
		s.fault(desc, x)
		c, err := s.st.MergeShards(streamName, x, y)
		if err != nil {
			panic("sim: merge: " + err.Error())
		}
		s.closed = append(s.closed, closedShard{x, s.now}, closedShard{y, s.now})
		s.emit(&trace.Record{Kind: trace.KindShardClosed, Worker: -1, Proc: -1, Key: x, Last: s.shardInfo(x).EndingSequence})
		s.emit(&trace.Record{Kind: trace.KindShardClosed, Worker: -1, Proc: -1, Key: y, Last: s.shardInfo(y).EndingSequence})
		s.emit(&trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: c, Parent: x, Parent2: y})
		s.wakeShard(x)
		s.wakeShard(y)
	case ActTableThrottle:
		s.fault(desc, "")
		s.tableThrottle, s.tableThrUntil = a.Value, s.now+a.Dur
	case ActStreamThrottle:
		s.fault(desc, "")
		s.streamThrottle, s.streamThrUntil = a.Value, s.now+a.Dur
	case ActBurst:
		s.fault(desc, "")
		s.burst, s.burstUntil = a.Value, s.now+a.Dur
	case ActSDKRetry:
		s.fault(desc, "")
		s.retryKind, s.retryChance, s.retryUntil = a.Target, a.Value, s.now+a.Dur
	case ActDupOwner:
		src := s.live(s.slotOf(a.Worker))
		if src == nil {
			return
		}
		s.fault(desc, "")
		sl := s.addSlot(s.rFault)
		sl.owner = src.owner
		sl.desired = false
		sl.dup = true
		s.outside = append(s.outside, fmt.Sprintf("at %v two live processes share owner id %s", s.now, src.owner))
		s.startProc(sl)
	}
}

func (s *simulator) desiredCount() int {
	n := 0
	for _, sl := range s.slots {
		if sl.desired {
			n++
		}
	}
	return n
}

func (s *simulator) links(sl *slot, target string) []*link {
	switch target {
	case "table":
		return []*link{&sl.table}
	case "stream":
		return []*link{&sl.stream}
	}
	return []*link{&sl.table, &sl.stream}
}

func (s *simulator) resume(p *proc) {
	if !p.alive || !p.paused {
		return
	}
	p.paused = false
	calls, notices := p.hCalls, p.hNotices
	p.hCalls, p.hNotices = nil, nil
	for _, c := range calls {
		s.send(p, c)
	}
	for i := range notices {
		s.notice(p, &notices[i])
	}
	held := p.held
	p.held = nil
	for _, in := range held {
		if !p.alive || p.paused {
			p.held = append(p.held, in)
			continue
		}
		s.step(p, in)
	}
	if p.alive && !p.paused {
		s.step(p, engine.Input{Kind: engine.InputTick})
	}
}

// heal starts the healing phase: every fault stops.
func (s *simulator) heal() {
	s.healed = true
	s.emit(&trace.Record{Kind: trace.KindPhase, Worker: -1, Proc: -1, Reason: "heal"})
	s.tableThrUntil, s.streamThrUntil, s.burstUntil = 0, 0, 0
	for _, sl := range s.slots {
		for _, l := range s.links(sl, "both") {
			l.cutReq, l.cutRep, l.clogUntil = false, false, 0
			// the latency fault class ends too: no spikes, a normal tail
			l.lat.Spike = 0
			if l.lat.Tail > 20*time.Millisecond {
				l.lat.Tail = 20 * time.Millisecond
			}
		}
	}
	for id := range s.pauseProc {
		delete(s.pauseProc, id)
	}
	for _, p := range s.procs {
		if p.alive && p.paused {
			s.resume(p)
		}
	}
	for _, sl := range s.slots {
		p := s.live(sl)
		switch {
		case sl.dup && p != nil:
			s.stopProc(p, "crash")
		case sl.desired && p == nil:
			s.startProc(sl)
		}
	}
}

// openShards returns the open shards of the stream in hash key order.
func (s *simulator) openShards() []fakes.ShardInfo {
	all, err := s.st.Shards(streamName)
	if err != nil {
		panic("sim: " + err.Error())
	}
	open := all[:0]
	for _, sh := range all {
		if sh.ClosedAt.IsZero() {
			open = append(open, sh)
		}
	}
	sort.Slice(open, func(i, j int) bool {
		a, b := open[i].StartingHashKey, open[j].StartingHashKey // decimal, no leading zeros
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return a < b
	})
	return open
}

// shardInfo returns the stream's description of shard id.
func (s *simulator) shardInfo(id string) engine.Shard {
	all, err := s.st.Shards(streamName)
	if err != nil {
		panic("sim: " + err.Error())
	}
	for _, sh := range all {
		if sh.ID == id {
			return sh.Shard
		}
	}
	panic("sim: no shard " + id)
}
