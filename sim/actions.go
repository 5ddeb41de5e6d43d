package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// ownerSlot returns the slot whose live process owns shard's lease in the
// table now.
func (s *simulator) ownerSlot(shard string) (int, bool) {
	for _, l := range s.tbl.Snapshot().Leases {
		if l.Key != shard || l.Owner == "" {
			continue
		}
		for _, sl := range s.cl.slots {
			if p := s.live(sl); p != nil && p.owner == l.Owner && !sl.dup {
				return sl.idx, true
			}
		}
	}
	return 0, false
}

// roleSlot returns the slot of a live worker in role (Role*) now, drawn
// with the fault source where several are.
func (s *simulator) roleSlot(role string) (int, bool) {
	if role == RoleAssigner {
		return s.ownerSlot(engine.AssignerKey)
	}
	var held []engine.Lease
	for _, l := range s.tbl.Snapshot().Leases {
		if l.Owner != "" && !strings.HasPrefix(l.Key, engine.ReservedPrefix) {
			held = append(held, l)
		}
	}
	if role == RoleMember {
		if a, ok := s.row(engine.AssignerKey); ok && a.Owner != "" {
			held = slices.DeleteFunc(held, func(l engine.Lease) bool { return l.Owner == a.Owner })
		}
		// the live holder of the most leases (the first in table order
		// of those tied)
		n, most := map[string]int{}, -1
		for i, l := range held {
			if _, live := s.ownerSlot(l.Key); live {
				if n[l.Owner]++; most < 0 || n[l.Owner] > n[held[most].Owner] {
					most = i
				}
			}
		}
		if most >= 0 {
			held = held[most : most+1]
		}
	}
	if len(held) == 0 {
		return 0, false
	}
	l := held[s.fs.rng.IntN(len(held))]
	holder, ok := s.ownerSlot(l.Key)
	if role == RoleHolder || role == RoleMember || !ok {
		return holder, ok
	}
	// the live workers other than the holder that hold the fewest leases:
	// the likeliest takers
	count := map[string]int{}
	for _, l := range held {
		count[l.Owner]++
	}
	var others []int
	least := -1
	for _, sl := range s.cl.slots {
		p := s.live(sl)
		if p == nil || sl.idx == holder || sl.dup {
			continue
		}
		switch n := count[p.owner]; {
		case least < 0 || n < least:
			least, others = n, append(others[:0], sl.idx)
		case n == least:
			others = append(others, sl.idx)
		}
	}
	if len(others) == 0 {
		return 0, false
	}
	return others[s.fs.rng.IntN(len(others))], true
}

func (s *simulator) act(a Action) {
	desc := a.String()
	targeted := a.Kind == ActCrash || a.Kind == ActPause || a.Kind == ActShutdown || a.Kind == ActClockStep
	if targeted && (a.Shard != "" || a.Role != "") {
		w, ok, why := 0, false, ": no live process owns it"
		if a.Role != "" {
			w, ok = s.roleSlot(a.Role)
			why = ": no live worker in that role"
		} else {
			w, ok = s.ownerSlot(a.Shard)
		}
		if !ok {
			s.fault(desc+why, a.Shard)
			return
		}
		a.Worker = w
		s.fs.faultWorker = int32(w)
		defer func() { s.fs.faultWorker = -1 }()
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
		// the fault names the paused worker's slot (the latency checkers
		// tell a pause on a handoff's path from one elsewhere)
		fw := s.fs.faultWorker
		s.fs.faultWorker = int32(p.slot)
		s.fault(desc, "")
		s.fs.faultWorker = fw
		s.opFaultOn(p.id)
		if a.MidAct {
			if a.Dur > s.midActSlack() {
				s.fs.outside = append(s.fs.outside, fmt.Sprintf("at %v a pause of %v in the middle of acting, longer than the margin allows (%v)", s.now, a.Dur, s.midActSlack()))
			}
			p.holdNext = true
			s.step(p, &engine.Input{Kind: engine.InputTick})
		}
		p.paused = true
		s.fs.lastPauseID++
		s.fs.pauseProc[s.fs.lastPauseID] = p.id
		s.q.push(event{at: s.now + a.Dur, kind: evResume, a: s.fs.lastPauseID})
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
		s.opShutdown(p)
		p.restart = a.Dur
		p.killAt = s.now + 3*s.full.LeaseDuration + 4*s.w.CallTimeout
		s.q.push(event{at: p.killAt, kind: evKill, proc: p.id})
		s.deliver(p, &engine.Input{Kind: engine.InputShutdown})
	case ActSwitchMode:
		s.switchMode(a)
	case ActCutAfterRenew, ActCrashAfterRenew:
		s.armAfterRenew(a)
	case ActStrikeAssigner:
		s.armStrike(a) // strike.go
	case actPutTo:
		s.putTo(a.Shard)
	case ActForeignApp:
		s.foreignApp(a)
	case ActRecreateStream:
		s.recreateStream(a)
	case ActScaleOut:
		s.fault(desc, "")
		sl := s.addSlot(s.fs.rng)
		s.startProc(sl)
	case ActPartition, actHealLink, ActClog:
		s.fault(desc, "")
		for _, i := range a.Workers {
			sl := s.slotOf(i)
			if a.Kind == ActPartition && a.Target != "stream" {
				s.opFaultOnSlot(sl)
			}
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
		if a.Dur > 0 {
			// stepped back again (an NTP correction), on the same worker
			s.later(Action{At: s.now + a.Dur, Kind: ActClockStep, Worker: sl.idx, Extra: -a.Extra})
		}
	case ActSplit:
		open := s.openShards()
		if len(open) >= s.wl.maxOpen {
			return
		}
		id := ""
		for _, sh := range open {
			if sh.ID == a.Shard {
				id = a.Shard
			}
		}
		if id == "" {
			id = open[s.fs.rng.IntN(len(open))].ID
		}
		s.fault(desc, id)
		children, err := s.st.SplitShardEvenly(streamName, id)
		if err != nil {
			panic("sim: split: " + err.Error())
		}
		s.wl.closed = append(s.wl.closed, closedShard{id, s.now})
		k := func(id string) string { return s.shardKey(streamName, id) }
		s.emit(&trace.Record{Kind: trace.KindShardClosed, Worker: -1, Proc: -1, Key: k(id), Last: s.shardInfo(id).EndingSequence})
		var kids []string
		for _, c := range children {
			s.emit(&trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: k(c), Parent: k(id)})
			kids = append(kids, k(c))
		}
		s.opSplit(k(id), kids)
		s.syncRaceSplit(&a, k(id), kids, children) // syncrace.go
		s.wakeShard(k(id))
		s.schedulePut()
	case ActMerge:
		open := s.openShards()
		if len(open) < 2 {
			return
		}
		i := s.fs.rng.IntN(len(open) - 1)
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
		s.wl.closed = append(s.wl.closed, closedShard{x, s.now}, closedShard{y, s.now})
		k := func(id string) string { return s.shardKey(streamName, id) }
		s.emit(&trace.Record{Kind: trace.KindShardClosed, Worker: -1, Proc: -1, Key: k(x), Last: s.shardInfo(x).EndingSequence})
		s.emit(&trace.Record{Kind: trace.KindShardClosed, Worker: -1, Proc: -1, Key: k(y), Last: s.shardInfo(y).EndingSequence})
		s.emit(&trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: k(c), Parent: k(x), Parent2: k(y)})
		s.opMerged(k(x), k(y), k(c))
		s.wakeShard(k(x))
		s.wakeShard(k(y))
		s.schedulePut()
		if s.bchance(s.w.Boundary.SlowParent) {
			// the second parent finishes far later than the first: its
			// holder pauses (see boundary.go)
			s.later(Action{At: s.now, Kind: ActPause, Shard: k(y), Dur: s.bd.rng.between(2*time.Second, 3*s.full.LeaseDuration).Round(time.Millisecond)})
		}
	case ActTableThrottle:
		s.fault(desc, "")
		s.svc.tableThrottle, s.svc.tableThrUntil = a.Value, s.now+a.Dur
	case ActStreamThrottle:
		s.fault(desc, "")
		s.svc.streamThrottle, s.svc.streamThrUntil = a.Value, s.now+a.Dur
	case ActBurst:
		s.fault(desc, "")
		s.startBurst(a.Value, a.Dur)
	case ActSDKRetry:
		s.fault(desc, "")
		s.svc.retryKind, s.svc.retryChance, s.svc.retryUntil = a.Target, a.Value, s.now+a.Dur
	case ActLeaderChange:
		s.leaderChange(a) // etcd.go
	case ActDupOwner:
		src := s.live(s.slotOf(a.Worker))
		if src == nil {
			return
		}
		s.fault(desc, "")
		sl := s.addSlot(s.fs.rng)
		sl.owner = src.owner
		sl.desired = false
		sl.dup = true
		s.fs.outside = append(s.fs.outside, fmt.Sprintf("at %v two live processes share owner id %s", s.now, src.owner))
		s.startProc(sl)
	}
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
	for i := range calls {
		s.send(p, &calls[i])
	}
	for i := range notices {
		s.notice(p, &notices[i])
	}
	held := p.held
	p.held = nil
	for i := range held {
		if !p.alive || p.paused {
			p.held = append(p.held, held[i])
			continue
		}
		s.step(p, &held[i])
	}
	if p.alive && !p.paused {
		s.step(p, &engine.Input{Kind: engine.InputTick})
	}
}

// heal starts the healing phase: every fault stops.
func (s *simulator) heal() {
	s.healed = true
	s.emit(&trace.Record{Kind: trace.KindPhase, Worker: -1, Proc: -1, Reason: "heal"})
	s.svc.tableThrUntil, s.svc.streamThrUntil = 0, 0
	s.healWorkload()
	for _, sl := range s.cl.slots {
		for _, l := range s.links(sl, "both") {
			l.cutReq, l.cutRep, l.clogUntil = false, false, 0
			// the latency fault class ends too: no spikes, a normal tail
			l.lat.Spike = 0
			if l.lat.Tail > 20*time.Millisecond {
				l.lat.Tail = 20 * time.Millisecond
			}
		}
	}
	for id := range s.fs.pauseProc {
		delete(s.fs.pauseProc, id)
	}
	for _, p := range s.cl.procs {
		if p.alive && p.paused {
			s.resume(p)
		}
	}
	for _, sl := range s.cl.slots {
		p := s.live(sl)
		switch {
		case sl.dup && p != nil:
			s.stopProc(p, "crash")
		case sl.desired && p == nil:
			s.startProc(sl)
		}
	}
}
