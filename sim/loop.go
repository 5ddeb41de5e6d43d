package sim

import (
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// loop processes events in (time, sequence) order until the run's end.
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
			p := s.cl.procs[e.proc]
			if p.alive && !p.paused && e.a == p.tickGen {
				p.tickAt = -1
				s.step(p, &engine.Input{Kind: engine.InputTick})
			}
		case evApply:
			s.onApply(int(e.a), false)
		case evRetry:
			s.onApply(int(e.a), true)
		case evSubWake:
			s.onSubWake(e.a)
		case evHeldApply:
			s.onHeldApply(e.a)
		case evWatchOpen:
			s.onWatchOpen(e.a)
		case evWatchStarted:
			s.onWatchStarted(e.a)
		case evWatchReport:
			s.onWatchReport(e.a)
		case evWatchResume:
			s.onWatchResume(e.a)
		case evWatchCut:
			s.onWatchCut(e.a)
		case evWatchRetry:
			s.onWatchRetry(e.a)
		case evCompact:
			s.onCompact()
		case evReply:
			s.onReply(int(e.a), false)
		case evTimeout:
			s.onReply(int(e.a), true)
		case evJob:
			s.onJob(int(e.a))
		case evCheckpointTimer:
			s.onCheckpointTimer(s.cl.procs[e.proc])
		case evPut:
			s.onPut(e.a)
		case evPutRate:
			s.setPutRate()
		case evPutSecond:
			s.onPutSecond(e.a)
		case evRetention:
			s.onRetention()
		case evAction:
			s.act(s.fs.schedule[e.a])
		case evResume:
			if id, ok := s.fs.pauseProc[e.a]; ok {
				delete(s.fs.pauseProc, e.a)
				s.resume(s.cl.procs[id])
			}
		case evHeal:
			s.heal()
		case evSettle:
			s.onSettle()
		case evKill:
			p := s.cl.procs[e.proc]
			if p.alive && p.stopping && p.killAt == s.now {
				s.stopProc(p, "shutdown-timeout")
				s.restartLater(p) // the restart its shutdown was to end in
			}
		}
	}
	s.now = s.end
	s.emit(&trace.Record{Kind: trace.KindPhase, Worker: -1, Proc: -1, Reason: "end"})
}
