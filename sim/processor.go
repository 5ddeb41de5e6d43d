package sim

import (
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// processorModel is the record processor behind every process: it records
// what it receives, answers every notice after a drawn delay, sometimes
// fails a batch, and asks for checkpoints at drawn points. Its pending
// answers are jobs, in reusable slots.
type processorModel struct {
	rng   rng
	jobs  []job
	freeJ []int
}

// job is a processor's pending answer to a notice.
type job struct {
	proc   int32
	key    string
	batch  uint64
	failed bool
	skip   bool              // failed, and the failure policy skips it (World.SkipAfter)
	first  engine.Checkpoint // the batch's first user record (none: no batch)
	last   engine.Checkpoint // its last
	cp     engine.Checkpoint // checkpoint to ask for before answering (none: "")
	gen    uint64            // the key's generation when the notice came
	pk     *pkey             // the key's state when the notice came (see current)
}

// pkey is what a process's processor knows of one key. Positions are
// user records: (sequence, sub-sequence).
type pkey struct {
	processed engine.Checkpoint // last record processed
	asked     engine.Checkpoint // last checkpoint asked for
	gen       uint64            // incremented by every Initialize
	dropped   bool              // no longer p.keys' (the lease was lost)
	// uncheckpointed counts the records received since the last
	// checkpoint asked for by count (World.CheckpointRecords)
	uncheckpointed int
}

// current returns p.keys[key] given k, the state a job kept of it: k
// itself unless it was dropped since.
func (p *proc) current(k *pkey, key string) *pkey {
	if k != nil && !k.dropped {
		return k
	}
	return p.keys[key]
}

func (m *processorModel) newJob(j job) int {
	if n := len(m.freeJ); n > 0 {
		i := m.freeJ[n-1]
		m.freeJ = m.freeJ[:n-1]
		m.jobs[i] = j
		return i
	}
	m.jobs = append(m.jobs, j)
	return len(m.jobs) - 1
}

func (s *simulator) procDelay() time.Duration {
	if s.pm.rng.chance(s.rate(s.w.Rates.SlowProcessor)) {
		return s.pm.rng.between(time.Second, 20*time.Second)
	}
	return s.pm.rng.between(time.Millisecond, 50*time.Millisecond)
}

func (p *proc) pk(key string) *pkey {
	k := p.keys[key]
	if k == nil {
		k = &pkey{}
		p.keys[key] = k
		p.keyOrder = append(p.keyOrder, key)
	}
	return k
}

// notice is a notice of p's engine reaching its processor.
func (s *simulator) notice(p *proc, n *engine.Notice) {
	rp := s.pm.rng
	switch n.Kind {
	case engine.NoticeInitialize:
		k := p.pk(n.Key)
		k.gen++
		k.processed, k.asked = engine.Checkpoint{}, engine.Checkpoint{}
		if !n.Start.IsSentinel() {
			k.processed, k.asked = n.Start, n.Start
		}
		s.emit(s.procRec(p, &trace.Record{Kind: trace.KindInitialized, Key: n.Key, Checkpoint: n.Start}))
		j := s.pm.newJob(job{proc: p.id, key: n.Key, batch: n.Batch, pk: k})
		s.q.push(event{at: s.now + rp.between(0, 5*time.Millisecond), kind: evJob, proc: p.id, a: uint64(j)})
	case engine.NoticeRecords:
		r := trace.Record{Kind: trace.KindReceived, Key: n.Key, Count: len(n.Records), Call: n.Batch}
		pk := p.pk(n.Key)
		jb := job{proc: p.id, key: n.Key, batch: n.Batch, gen: pk.gen, pk: pk}
		if len(n.Records) > 0 {
			batchRecord(&r, n.Records)
			jb.first, jb.last = position(&n.Records[0]), position(&n.Records[len(n.Records)-1])
			for i := 1; i < len(n.Records); i++ {
				a, b := &n.Records[i-1], &n.Records[i]
				if check.ParseSubSeq(a.Sequence, a.SubSequence).Compare(check.ParseSubSeq(b.Sequence, b.SubSequence)) >= 0 { // the checkers' comparator, not the engine's
					r.Reason = "unsorted"
				}
			}
		}
		s.emit(s.procRec(p, &r))
		if len(n.Records) > 0 && rp.chance(s.rate(s.w.Rates.FailedBatch)) {
			jb.failed = true
			jb.skip = s.w.SkipAfter > 0 && n.Attempt >= s.w.SkipAfter
		} else if every := s.w.CheckpointRecords; every > 0 && len(n.Records) > 0 {
			// a cadence by count (Options.CheckpointEvery): the batch's
			// last record once every records have come since the last ask
			if pk.uncheckpointed += len(n.Records); pk.uncheckpointed >= every {
				pk.uncheckpointed = 0
				jb.cp = jb.last
			}
		} else if len(n.Records) > 0 && rp.chance(s.w.Rates.Checkpoint) {
			jb.cp = position(&n.Records[rp.IntN(len(n.Records))])
			if rp.chance(0.7) {
				jb.cp = jb.last
			}
			if cp, ok := s.midAggregate(n.Records); ok {
				jb.cp = cp // part of an aggregate (KPL worlds)
			}
		}
		j := s.pm.newJob(jb)
		s.q.push(event{at: s.now + s.procDelay(), kind: evJob, proc: p.id, a: uint64(j)})
	case engine.NoticeShardEnded, engine.NoticeShutdownRequested:
		s.emit(s.procRec(p, &trace.Record{Kind: trace.KindNotice, Key: n.Key, Reason: n.Kind.String()}))
		pk := p.pk(n.Key)
		jb := job{proc: p.id, key: n.Key, batch: n.Batch, gen: pk.gen, pk: pk}
		if n.Kind == engine.NoticeShutdownRequested {
			if k := p.keys[n.Key]; k != nil && k.processed.Sequence != "" && k.processed != k.asked {
				jb.cp = k.processed
			}
		}
		j := s.pm.newJob(jb)
		s.q.push(event{at: s.now + rp.between(0, 10*time.Millisecond), kind: evJob, proc: p.id, a: uint64(j)})
	case engine.NoticeLeaseLost:
		s.emit(s.procRec(p, &trace.Record{Kind: trace.KindNotice, Key: n.Key, Reason: n.Kind.String()}))
		if k := p.keys[n.Key]; k != nil {
			k.dropped = true
			delete(p.keys, n.Key)
		}
	case engine.NoticeCheckpointDone:
		r := trace.Record{Kind: trace.KindCheckpointAck, Key: n.Key, Checkpoint: n.Checkpoint, Outcome: trace.OutcomeOK}
		if n.Err != nil {
			r.Outcome = outcome(n.Err)
			r.Reason = n.Err.Error()
		}
		s.emit(s.procRec(p, &r))
	}
}

// onJob is the processor finishing a job: it answers the notice.
func (s *simulator) onJob(i int) {
	j := s.pm.jobs[i]
	s.pm.jobs[i] = job{}
	s.pm.freeJ = append(s.pm.freeJ, i)
	p := s.cl.procs[j.proc]
	if !p.alive {
		return
	}
	if p.paused {
		// the processor is paused too: finish the job when it resumes
		k := s.pm.newJob(j)
		s.q.push(event{at: s.now + 10*time.Millisecond, kind: evJob, proc: p.id, a: uint64(k)})
		return
	}
	current := false
	k := p.current(j.pk, j.key)
	if k != nil && k.gen == j.gen {
		current = true
		if j.first.Sequence != "" && (!j.failed || j.skip) {
			k.processed = j.last
		}
	}
	if j.cp.Sequence != "" && (current || j.first.Sequence == "") {
		s.askCheckpointOf(p, j.key, k, j.cp)
	}
	r := trace.Record{Kind: trace.KindDone, Key: j.key, Reason: "ok", First: j.first.Sequence, Last: j.last.Sequence,
		FirstSub: int32(j.first.SubSequence), LastSub: int32(j.last.SubSequence), Call: j.batch}
	if j.failed {
		r.Reason = "failed"
	}
	s.emit(s.procRec(p, &r))
	if j.batch != 0 {
		in := engine.Input{Kind: engine.InputDone, Key: j.key, Batch: j.batch, Failed: j.failed}
		if j.skip {
			in.Skipped, in.Reason = true, "skipped"
		}
		s.deliver(p, &in)
	}
}

func (s *simulator) askCheckpoint(p *proc, key string, cp engine.Checkpoint) {
	s.askCheckpointOf(p, key, p.keys[key], cp)
}

// askCheckpointOf is askCheckpoint with k, p.keys[key].
func (s *simulator) askCheckpointOf(p *proc, key string, k *pkey, cp engine.Checkpoint) {
	if k != nil {
		k.asked = cp
	}
	p.token++
	s.deliver(p, &engine.Input{Kind: engine.InputCheckpoint, Key: key, Checkpoint: cp, Token: p.token})
}

// onCheckpointTimer is the processor's periodic checkpoint of what it has
// processed.
func (s *simulator) onCheckpointTimer(p *proc) {
	if !p.alive {
		return
	}
	if !p.paused {
		for _, key := range p.keyOrder {
			k := p.keys[key]
			if k != nil && k.processed.Sequence != "" && k.processed != k.asked {
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
