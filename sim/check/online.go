package check

import (
	"cmp"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// which selects the checkers an Online runs.
type which uint16

const (
	checkS1 which = 1 << iota
	checkS2
	checkS3
	checkS4
	checkS5
	checkS6
	checkL1
	checkMeasure
	checkTenures // only the tenures (Tenures)
	checkG1
	checkW1
	checkTiming
	checkB1
	checkL2
	checkW2
	checkW3

	checkAll = checkS1 | checkS2 | checkS3 | checkS4 | checkS5 | checkS6 | checkL1 | checkMeasure | checkG1 | checkW1 | checkTiming | checkB1 | checkL2 | checkW2 | checkW3
)

// Online runs every checker (S1-S6, L1) and the figures (Measure) over a
// history fed one record at a time, in order. Create it with NewOnline.
type Online struct {
	o Options

	// keys interns the records' keys: each record's key is looked up once
	// and its keyState handed to the checkers
	keys *keyTable

	// shared state: the tenures (S1, L1, Measure), the replayed rows (S2,
	// S3), the records put (S4, L1, Measure)
	ten  *tenures
	rows *rows
	puts *putLogs

	s1 *s1Checker
	s2 *s2Checker
	s3 *s3Checker
	s4 *s4Checker
	s5 *s5Checker
	s6 *s6Checker
	l1 *l1Checker
	g1 *g1Checker
	w1 *w1Checker
	tc *timingChecker // T1-T3, with Options.Timing
	b1 *b1Checker     // B1, with Options.Timing
	l2 *l2Checker
	w2 *w2Checker
	w3 *w3Checker // watch.go
	ms *measurer

	prefed bool // the records put were taken before the history (feed)
}

// NewOnline returns the checkers of a run with options o, before its first
// record.
func NewOnline(o Options) *Online { return newOnline(o, checkAll) }

func newOnline(o Options, w which) *Online {
	c := &Online{o: o, keys: newKeyTable()}
	if o.Timing == nil {
		w &^= checkTiming | checkB1
	}
	if w&(checkS1|checkL1|checkMeasure|checkTenures|checkTiming) != 0 {
		c.ten = newTenures(o.Forget, c.keys)
	}
	if w&(checkS2|checkS3) != 0 {
		c.rows = &rows{keys: c.keys}
	}
	if w&(checkS4|checkL1|checkMeasure) != 0 {
		c.puts = newPutLogs(&c.o, c.keys)
	}
	if w&checkS1 != 0 {
		c.s1 = &s1Checker{o: &c.o}
		c.ten.s1 = c.s1
	}
	if w&checkS2 != 0 {
		c.s2 = &s2Checker{o: &c.o}
	}
	if w&checkS3 != 0 {
		c.s3 = &s3Checker{o: &c.o, rows: c.rows}
	}
	if w&checkS4 != 0 {
		c.s4 = newS4(&c.o, c.puts)
		c.puts.s4 = c.s4
	}
	if w&checkS5 != 0 {
		c.s5 = &s5Checker{o: &c.o}
	}
	if w&checkS6 != 0 {
		c.s6 = &s6Checker{o: &c.o}
	}
	if w&checkL1 != 0 {
		c.l1 = newL1(&c.o, c.ten, c.puts, c.keys)
		c.ten.l1 = c.l1
		c.puts.l1 = c.l1
	}
	if w&checkG1 != 0 {
		c.g1 = newG1(&c.o)
	}
	if w&checkW1 != 0 {
		c.w1 = newW1(&c.o)
	}
	if w&checkTiming != 0 {
		c.tc = newTiming(o, c.keys)
		c.ten.tc = c.tc
	}
	if w&checkB1 != 0 {
		c.b1 = newB1(o, c.keys)
	}
	if w&checkL2 != 0 {
		c.l2 = newL2(o, c.keys)
	}
	if w&checkW2 != 0 {
		c.w2 = newW2(o)
	}
	if w&checkW3 != 0 {
		c.w3 = newW3(&c.o)
	}
	if w&checkMeasure != 0 {
		c.ms = newMeasurer(&c.o, c.ten, c.puts, c.keys)
		c.ten.ms = c.ms
	}
	return c
}

// feed observes a whole history. The records put are taken first, as the
// whole-history checkers did: in a history merged from several processes'
// clocks a put may come after its record's receipt.
func (c *Online) feed(recs []trace.Record) {
	if c.puts != nil {
		for i := range recs {
			if r := &recs[i]; r.Kind == trace.KindPut {
				c.puts.put(r, c.keys.get(r.Key), ParseSeq(r.First))
			}
		}
		c.prefed = true
	}
	if c.ten != nil {
		// in true-time order, tenures no later act can overlap need not be
		// compared any more
		c.ten.pruned = slices.IsSortedFunc(recs, func(a, b trace.Record) int { return cmp.Compare(a.T, b.T) })
	}
	for i := range recs {
		c.Observe(&recs[i])
	}
}

// Observe feeds one record. The checkers keep no reference to r. Its
// sequence numbers and checkpoint are parsed once, here.
func (c *Online) Observe(r *trace.Record) {
	if c.w1 != nil {
		c.w1.observe(r)
	}
	if c.w3 != nil && (r.Kind == trace.KindWatch || r.Kind == trace.KindIndex || r.Kind == trace.KindProcStop) {
		c.w3.observe(r)
	}
	var ks *keyState // r.Key's, if a checker reads it
	if keyed(r) {
		ks = c.keys.get(r.Key)
	}
	if c.g1 != nil {
		switch r.Kind {
		case trace.Acting, trace.Delivered, trace.CheckpointRequested, trace.CheckpointRejected, trace.CheckpointWritten, trace.LeaseReleased, trace.LeaseLost,
			trace.KindInitialized, trace.KindDone:
			c.g1.observe(r, ks)
		case trace.HandingOver, trace.KindNotice:
			c.g1.observe(r, c.keys.get(r.Key))
		case trace.CallSent:
			if r.Reason == "release" { // g1 reads no other call
				c.g1.observe(r, ks)
			}
		}
	}
	if c.tc != nil {
		switch r.Kind {
		case trace.KindProcStart, trace.KindProcStop, trace.KindReply, trace.KindFault, trace.KindApply, trace.LeaseAcquired, trace.LeaseLost, trace.LeaseReleased,
			trace.Assigned, trace.HandingOver, trace.CallSent, trace.KindSend, trace.KindWatch, trace.Acting:
			c.tc.observe(r)
		}
	}
	if c.b1 != nil {
		c.b1.observe(r)
	}
	if c.l2 != nil {
		switch r.Kind {
		case trace.KindSend, trace.KindApply, trace.LeaseLost:
			c.l2.observe(r)
		}
	}
	if c.w2 != nil {
		switch r.Kind {
		case trace.KindSend, trace.KindReply, trace.Resolved, trace.LeaseLost, trace.LeaseReleased, trace.LeaseAcquired, trace.KindProcStop:
			c.w2.observe(r)
		}
	}
	switch r.Kind {
	case trace.CallSent:
		if c.ten != nil && r.Reason == trace.WriteRelease {
			c.ten.releasing(r, ks)
		}
	case trace.Acting, trace.Delivered:
		if c.s3 != nil && r.Kind == trace.Acting {
			c.s3.acting(r, ks, PosOf(r.Checkpoint))
		}
		if c.ten != nil {
			c.ten.act(r, ks)
		}
		if c.s5 != nil && r.Kind == trace.Delivered {
			c.s5.delivered(r, ks)
		}
	case trace.KindReceived:
		first, last := FirstOf(r), LastOf(r)
		if c.ten != nil {
			c.ten.act(r, ks)
		}
		sp := ks.sp // the shard's records
		if c.ms != nil {
			c.ms.receivedBatch(r, ks, sp, first, last)
		}
		if c.puts != nil {
			c.puts.received(r, sp, first, last)
		}
		if c.s5 != nil {
			c.s5.delivered(r, ks)
		}
		if c.s6 != nil {
			c.s6.received(r, ks, first, last)
		}
	case trace.KindSend:
		if c.ten != nil && r.IsAct() {
			c.ten.act(r, ks)
		}
	case trace.LeaseLost, trace.LeaseReleased, trace.StoppedActing:
		if c.ten != nil {
			c.ten.close(ks, r)
		}
	case trace.KindProcStart:
		if c.l1 != nil {
			c.l1.live[r.Proc] = r.Owner
		}
	case trace.KindProcStop:
		if c.ten != nil {
			c.ten.procStop(r)
		}
		if c.l1 != nil {
			delete(c.l1.live, r.Proc)
		}
		if c.o.Forget && (c.s4 != nil || c.s6 != nil || c.g1 != nil) {
			c.keys.dropProc(r.Proc, c.s4 != nil, c.s6 != nil, c.g1 != nil)
		}
	case trace.KindApply:
		if r.Outcome != trace.OutcomeOK {
			return
		}
		if c.ten != nil && (r.Reason == trace.WriteRenew || r.Reason == trace.WriteCheckpoint) {
			c.ten.renewed(r, ks)
		}
		cp := PosOf(r.Checkpoint)
		if c.rows != nil {
			w := c.rows.get(ks)
			if c.s2 != nil {
				c.s2.applied(r, w)
			}
			if c.s3 != nil {
				c.s3.applied(r, w, cp)
			}
			w.apply(r, cp)
		}
		if c.puts != nil && r.Checkpoint.Sequence != "" {
			c.puts.checkpointed(ks, cp)
		}
		if c.s4 != nil && r.Checkpoint.Sequence == engine.ShardEnd {
			ks.shardEndStored = true
		}
		if (c.s5 != nil || c.tc != nil) && r.Checkpoint.Sequence == engine.ShardEnd {
			ks.end(r.T)
		}
	case trace.KindCheckpointAck:
		if c.s3 != nil {
			c.s3.acked(r, ks, PosOf(r.Checkpoint))
		}
	case trace.KindShardExpired:
		if c.s4 != nil {
			ks.expired = true
		}
		if c.s5 != nil || c.tc != nil {
			ks.end(r.T)
		}
	case trace.KindTrim:
		if strings.HasPrefix(r.Reason, trace.SkippedPrefix) {
			// a shard no reader will ever read (see trace.SkippedPrefix):
			// as one that left the stream for S4, as ended for S5
			ks.expired = c.s4 != nil || ks.expired
			if c.s5 != nil || c.tc != nil {
				ks.end(r.T)
			}
		}
		if c.puts != nil && r.First != "" {
			c.puts.trim(r, ks, ParseSeq(r.First), wholeRecord(r.Last))
		}
	case trace.KindInitialized:
		if c.s4 != nil {
			c.s4.initialized(r, ks, PosOf(r.Checkpoint))
		}
		if c.s6 != nil {
			ks.slotNew(r.Proc).s6 = &orderState{}
		}
	case trace.BatchSkipped:
		if c.s4 != nil {
			c.s4.skipped(r, ks)
		}
	case trace.KindDone:
		if c.s4 != nil {
			c.s4.done(r, ks, FirstOf(r))
		}
		if c.s6 != nil {
			c.s6.done(r, ks)
		}
	case trace.KindShardCreated:
		if (c.s5 != nil || c.tc != nil) && (r.Parent != "" || r.Parent2 != "") {
			ks.parents, ks.hasParents = [2]*keyState{c.parent(r.Parent), c.parent(r.Parent2)}, true
		}
		if c.l1 != nil {
			c.l1.created(ks)
		}
		if c.ms != nil {
			ks.created, ks.hasCreated = r.T, true
		}
	case trace.KindShardClosed:
		if c.l1 != nil {
			ks.open = false
		}
		if c.ms != nil {
			c.ms.shardClosed(r, ks)
		}
	case trace.KindReply:
		if c.ms != nil {
			c.ms.reply(r)
		}
	case trace.KindPut:
		if c.puts != nil && !c.prefed {
			c.puts.put(r, ks, ParseSeq(r.First))
		}
	}
}

// keyed reports whether a checker reads the state of r's key: every
// record Observe hands on with its key.
func keyed(r *trace.Record) bool {
	switch r.Kind {
	case trace.Acting, trace.Delivered, trace.CheckpointRequested, trace.CheckpointRejected, trace.CheckpointWritten,
		trace.LeaseReleased, trace.LeaseLost, trace.StoppedActing, trace.KindReceived, trace.KindCheckpointAck,
		trace.KindShardExpired, trace.KindTrim, trace.KindInitialized, trace.BatchSkipped, trace.KindDone,
		trace.KindShardCreated, trace.KindShardClosed, trace.KindPut:
		return true
	case trace.CallSent:
		return r.Reason == trace.WriteRelease || r.Reason == "release"
	case trace.KindSend:
		return r.IsAct()
	case trace.KindApply:
		return r.Outcome == trace.OutcomeOK
	}
	return false
}

// parent returns the state of a parent key ("": none).
func (c *Online) parent(key string) *keyState {
	if key == "" {
		return nil
	}
	return c.keys.get(key)
}

// Finish ends the history: it runs the end-of-run checks against the
// final table (if finalKnown) and returns every violation, S1 to L1, G1
// (and G2), W1, T1-T3, B1, L2, W2 and W3 in that order, and the figures.
func (c *Online) Finish(final []engine.Lease, finalKnown bool) (Report, Figures) {
	var rep Report
	if c.s1 != nil {
		rep.Violations = append(rep.Violations, c.s1.finish()...)
	}
	if c.s2 != nil {
		rep.Violations = append(rep.Violations, c.s2.out...)
	}
	if c.s3 != nil {
		rep.Violations = append(rep.Violations, c.s3.finish(final, finalKnown)...)
	}
	if c.s4 != nil {
		rep.Violations = append(rep.Violations, c.s4.finish(final, finalKnown)...)
		rep.LostToRetention = c.puts.lost
	}
	if c.s5 != nil {
		rep.Violations = append(rep.Violations, c.s5.out...)
	}
	if c.s6 != nil {
		rep.Violations = append(rep.Violations, c.s6.out...)
	}
	if c.l1 != nil {
		rep.Violations = append(rep.Violations, c.l1.finish(final, finalKnown)...)
	}
	if c.g1 != nil {
		rep.Violations = append(rep.Violations, c.g1.out...)
	}
	if c.w1 != nil {
		rep.Violations = append(rep.Violations, c.w1.out...)
	}
	if c.tc != nil {
		c.tc.flush()
		rep.Violations = append(rep.Violations, c.tc.out...)
	}
	if c.b1 != nil {
		rep.Violations = append(rep.Violations, c.b1.out...)
	}
	if c.l2 != nil {
		rep.Violations = append(rep.Violations, c.l2.out...)
	}
	if c.w2 != nil {
		rep.Violations = append(rep.Violations, c.w2.out...)
	}
	if c.w3 != nil {
		rep.Violations = append(rep.Violations, c.w3.finish()...)
	}
	var f Figures
	if c.ms != nil {
		f = c.ms.finish()
	}
	if c.g1 != nil {
		f.CheckpointedMoves = c.g1.checkpointed
	}
	if c.tc != nil {
		f.Bounded = c.tc.bounded
	}
	return rep, f
}
