package engine

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Malformed rows are reported once per key and skipped; the rest of the
// table is used as usual.
func TestMalformedRowsReportedOnceAndSkipped(t *testing.T) {
	u := newUnit(t, Config{TakeInterval: time.Second})
	key := shardKey(0)
	u.stream.add(key)
	u.stream.put(key, 1)
	u.put(Lease{Key: key, Checkpoint: startSeq()})
	malformed := []MalformedRow{
		{Key: "shardId-000000000009", Reason: "leaseCounter is not a number"},
		{Key: "shardId-000000000010", Reason: "checkpoint missing"},
	}
	scans := 0
	u.fault = func(c Call) (Result, bool) {
		if c.Op != OpListLeases {
			return Result{}, false
		}
		scans++
		l, err := u.store.ListLeases(t.Context(), true)
		if err != nil {
			t.Fatal(err)
		}
		l.Malformed = slices.Clone(malformed)
		return Result{Listing: l}, true
	}
	u.runTo(10 * time.Second)
	malformed = append(malformed, MalformedRow{Key: "shardId-000000000011", Reason: "leaseOwner is a number"})
	u.runTo(30 * time.Second)
	if scans < 10 {
		t.Fatalf("only %d scans", scans)
	}
	got := u.traceOf(TraceMalformedRow, "")
	if len(got) != 3 {
		t.Fatalf("malformed-row events %v, want one per key", got)
	}
	for i, e := range got {
		if e.Key != malformed[i].Key || e.Reason != malformed[i].Reason {
			t.Errorf("event %v, want %v", e, malformed[i])
		}
	}
	if got[2].Mono < 10*time.Second {
		t.Errorf("the third row was reported before it appeared")
	}
	if !slices.Equal(u.w.Held(), []string{key}) || len(u.noticesOf(NoticeRecords, key)) != 1 {
		t.Errorf("the valid row was not consumed: held %v", u.w.Held())
	}
	for _, s := range u.sent {
		if s.c.Op.IsWrite() && callKey(s.c) != key {
			t.Errorf("wrote a malformed row: %v", s.c)
		}
	}
}

// A batch the processor fails is delivered again, the same records in the
// same order, after a backoff that grows; then reading goes on in order.
func TestFailedBatchRedelivered(t *testing.T) {
	u := newUnit(t, Config{})
	u.holdRecords = true
	key := u.holding(shardKey(0), startSeq(), 3)
	all := u.stream.recs[key]
	done := func(failed bool) {
		recs := u.noticesOf(NoticeRecords, key)
		u.step(Input{Kind: InputDone, Key: key, Batch: recs[len(recs)-1].n.Batch, Failed: failed})
	}
	var failedAt []time.Duration
	for i := 0; i < 3; i++ {
		u.runTo(u.now + 50*time.Millisecond)
		failedAt = append(failedAt, u.now)
		n := len(u.noticesOf(NoticeRecords, key))
		done(true)
		if len(u.noticesOf(NoticeRecords, key)) != n {
			t.Fatalf("re-delivered at once, without backoff")
		}
		for len(u.noticesOf(NoticeRecords, key)) == n {
			u.runTo(u.wake)
		}
	}
	u.stream.put(key, 2)
	done(false)
	u.runTo(u.now + 2*time.Second)
	recs := u.noticesOf(NoticeRecords, key)
	if len(recs) != 5 {
		t.Fatalf("%d deliveries, want 5", len(recs))
	}
	var seqs []string
	for i, r := range recs {
		for _, rec := range r.n.Records {
			seqs = append(seqs, rec.Sequence)
		}
		if i >= 1 && i <= 3 {
			prev := recs[i-1].n
			if !slices.EqualFunc(r.n.Records, prev.Records, func(a, b Record) bool { return a.Sequence == b.Sequence }) {
				t.Errorf("re-delivery %d: %v, want the same records as before", i, r.n.Records)
			}
			if r.n.Batch == prev.Batch {
				t.Errorf("re-delivery %d reuses batch id %d", i, r.n.Batch)
			}
			wait := r.at - failedAt[i-1]
			if minWait := 90 * time.Millisecond << (i - 1); wait < minWait {
				t.Errorf("re-delivery %d after %v, want a backoff of at least %v", i, wait, minWait)
			}
		}
	}
	var want []string
	for i := 0; i < 4; i++ { // the first delivery and three re-deliveries
		for _, r := range all[:3] {
			want = append(want, r.Sequence)
		}
	}
	for _, r := range u.stream.recs[key][3:] {
		want = append(want, r.Sequence)
	}
	if !slices.Equal(seqs, want) {
		t.Errorf("delivered %v, want %v", seqs, want)
	}
	// Delivery events in the trace say the same.
	d := u.traceOf(TraceDelivered, key)
	if len(d) != 5 || d[1].First != all[0].Sequence || d[3].Last != all[2].Sequence {
		t.Errorf("delivered events %v", d)
	}
}

// An expired iterator is replaced by one at the last record delivered (or
// at the start position if none was), which is skipped: nothing is skipped
// or repeated.
func TestExpiredIteratorResumesAfterLastDelivered(t *testing.T) {
	cases := []struct {
		name    string
		stored  func(recs []Record) Checkpoint
		before  int // records on the shard before the expiry
		wantPos func(recs []Record) Position
	}{
		{"after_records", func([]Record) Checkpoint { return startSeq() }, 3,
			func(recs []Record) Position {
				return Position{Type: IterAtSequenceNumber, Sequence: recs[2].Sequence}
			}},
		{"nothing_delivered_yet", func([]Record) Checkpoint { return startSeq() }, 0,
			func([]Record) Position { return Position{Type: IterTrimHorizon} }},
		{"resumed_from_checkpoint", func(recs []Record) Checkpoint { return SequenceCheckpoint(recs[1].Sequence) }, 2,
			func(recs []Record) Position {
				return Position{Type: IterAtSequenceNumber, Sequence: recs[1].Sequence}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{})
			key := shardKey(0)
			u.stream.add(key)
			u.stream.put(key, tc.before)
			u.put(Lease{Key: key, Checkpoint: tc.stored(u.stream.recs[key])})
			u.tick()
			u.runTo(2 * time.Second)
			u.stream.put(key, 2)
			expired := 0
			u.fault = func(c Call) (Result, bool) {
				if c.Op == OpGetRecords && expired == 0 {
					expired++
					return Result{Err: fmt.Errorf("GetRecords: %w", ErrExpiredIterator)}, true
				}
				return Result{}, false
			}
			from := len(u.sent)
			u.runTo(4 * time.Second)
			if expired != 1 {
				t.Fatalf("no GetRecords after 2 s")
			}
			var its []Call
			for _, s := range u.sent[from:] {
				if s.c.Op == OpGetIterator {
					its = append(its, s.c)
				}
			}
			recs := u.stream.recs[key]
			if len(its) != 1 || its[0].Position != tc.wantPos(recs) {
				t.Fatalf("new iterators %v, want one at %+v", its, tc.wantPos(recs))
			}
			var got []string
			for _, n := range u.noticesOf(NoticeRecords, key) {
				for _, r := range n.n.Records {
					got = append(got, r.Sequence)
				}
			}
			var want []string
			skip := 0
			if tc.name == "resumed_from_checkpoint" {
				skip = 2
			}
			for _, r := range recs[skip:] {
				want = append(want, r.Sequence)
			}
			if !slices.Equal(got, want) {
				t.Errorf("delivered %v, want %v", got, want)
			}
		})
	}
}

// A child shard is processed only once every parent is at SHARD_END (or
// has no row), read strongly consistently when the child is about to start.
// The scans here do not show the parents, so only that check gates.
func TestParentGating(t *testing.T) {
	const p1, p2, child = "shardId-000000000001", "shardId-000000000002", "shardId-000000000003"
	ended := func(key string) Lease { return Lease{Key: key, Counter: 9, Checkpoint: SentinelCheckpoint(ShardEnd)} }
	open := func(key string) Lease {
		return Lease{Key: key, Owner: "other", Counter: 9, Checkpoint: SequenceCheckpoint("12")}
	}
	const release = 5 * time.Second // when the unfinished parent ends
	cases := []struct {
		name    string
		parents []string
		rows    []Lease // parent rows at first
		readErr bool    // reads of p2 fail until release
		gated   bool    // the child waits until release
	}{
		{"split_parent_ended", []string{p1}, []Lease{ended(p1)}, false, false},
		{"split_parent_open", []string{p1}, []Lease{open(p1)}, false, true},
		{"split_parent_gone", []string{p1}, nil, false, false},
		{"merge_both_ended", []string{p1, p2}, []Lease{ended(p1), ended(p2)}, false, false},
		{"merge_first_open", []string{p1, p2}, []Lease{open(p1), ended(p2)}, false, true},
		{"merge_second_open", []string{p1, p2}, []Lease{ended(p1), open(p2)}, false, true},
		{"merge_both_open", []string{p1, p2}, []Lease{open(p1), open(p2)}, false, true},
		{"merge_one_gone_other_open", []string{p1, p2}, []Lease{open(p2)}, false, true},
		{"merge_both_gone", []string{p1, p2}, nil, false, false},
		{"merge_second_unreadable", []string{p1, p2}, []Lease{ended(p1), ended(p2)}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{})
			u.stream.add(child, tc.parents...)
			u.stream.put(child, 2)
			for _, r := range tc.rows {
				u.put(r)
			}
			u.put(Lease{Key: child, Parents: tc.parents, Checkpoint: startSeq()})
			u.fault = func(c Call) (Result, bool) {
				switch {
				case c.Op == OpListLeases:
					return Result{Listing: Listing{Leases: []Lease{u.row(child)}}}, true
				case c.Op == OpListShards:
					return Result{Err: errTimeout}, true // no lease creation here
				case c.Op == OpGetLease && c.Key == p2 && tc.readErr && u.now < release:
					return Result{Err: errTimeout}, true
				}
				return Result{}, false
			}
			u.tick()
			if len(u.w.Held()) != 1 {
				t.Fatalf("child not taken")
			}
			u.runTo(release - time.Millisecond)
			for _, p := range tc.parents {
				if len(u.sentOf(OpGetLease, p, 0, 0)) != 1 {
					t.Errorf("parent %s not read when the child was about to start", p)
				}
				if tc.gated && len(u.sentOf(OpGetLease, p, time.Millisecond, release)) == 0 {
					t.Errorf("parent %s not read again while the child waits", p)
				}
			}
			for _, r := range tc.rows {
				if r.Owner != "" {
					end := r.Clone()
					end.Owner, end.Counter, end.Checkpoint = "", r.Counter+1, SentinelCheckpoint(ShardEnd)
					u.put(end)
				}
			}
			u.runTo(release + ri + ri/2)
			started := u.traceOf(TraceChildStarted, child)
			inits := u.noticesOf(NoticeInitialize, child)
			recs := u.noticesOf(NoticeRecords, child)
			if len(started) != 1 || len(inits) != 1 || len(recs) != 1 {
				t.Fatalf("child-started %v, %d initialize, %d deliveries\n%s", started, len(inits), len(recs), u.dump())
			}
			if tc.gated {
				if inits[0].at < release || started[0].Mono < release {
					t.Errorf("child started at %v, before its parents ended at %v", inits[0].at, release)
				}
			} else if inits[0].at != 0 {
				t.Errorf("child started at %v, want at once", inits[0].at)
			}
		})
	}
}

// A graceful shutdown asks the processor to checkpoint, writes its
// checkpoint, then releases the lease (owner cleared, checkpoint kept, a CAS
// on the holder's version) without waiting for a renewal, and stops.
func TestGracefulRelease(t *testing.T) {
	u := newUnit(t, Config{})
	u.holdNotices = map[NoticeKind]bool{NoticeShutdownRequested: true}
	key := u.holding(shardKey(0), startSeq(), 3)
	u.runTo(time.Second)
	u.step(Input{Kind: InputShutdown})
	sr := u.noticesOf(NoticeShutdownRequested, key)
	if len(sr) != 1 || sr[0].at != time.Second || sr[0].n.Reason != ShutdownWorker || sr[0].n.To != "" {
		t.Fatalf("shutdown-requested %v, want one, at 1s, for a worker shutdown", sr)
	}
	mid, last := u.stream.recs[key][1].Sequence, u.stream.recs[key][2].Sequence
	n, ok := u.checkpoint(key, SequenceCheckpoint(mid))
	if !ok || n.Err != nil {
		t.Fatalf("checkpoint during shutdown: %v %v", ok, n.Err)
	}
	u.hold = holdUpdates
	u.step(Input{Kind: InputDone, Key: key, Batch: sr[0].n.Batch})
	rel := u.mustPending(OpUpdateLease, key)
	if rel.Expect != (Expect{me, 2}) || rel.Lease.Owner != "" || rel.Lease.Counter != 3 || rel.Lease.Checkpoint != SequenceCheckpoint(mid) {
		t.Errorf("release %v, want owner cleared, checkpoint kept, a CAS on {me 2}", rel)
	}
	// A checkpoint asked for while the release is in flight can no longer
	// be written; it must still be answered.
	late, ok := u.checkpoint(key, SequenceCheckpoint(last))
	u.reply(rel, u.apply(rel))
	if !ok {
		for _, n := range u.noticesOf(NoticeCheckpointDone, key) {
			if n.n.Token == u.token {
				late, ok = n.n, true
			}
		}
	}
	if !ok {
		t.Errorf("a checkpoint asked for during the release was never answered")
	} else if late.Err != nil && !errors.Is(late.Err, ErrLeaseLost) {
		t.Errorf("late checkpoint answered %v", late.Err)
	}
	if !u.stopped {
		t.Errorf("not stopped after the release")
	}
	// Nothing is written after the release: the worker no longer holds
	// the lease (S2).
	for _, s := range u.sent {
		if s.c.Op.IsWrite() && s.c.ID > rel.ID {
			t.Errorf("write after the release: %v", s.c)
		}
	}
	if rl := u.traceOf(TraceLeaseReleased, key); len(rl) != 1 || rl[0].Reason != "shutdown" {
		t.Errorf("released %v", rl)
	}
	if len(u.noticesOf(NoticeLeaseLost, key)) != 0 || len(u.traceOf(TraceLeaseLost, key)) != 0 {
		t.Errorf("a release is not a loss")
	}
	if r := u.row(key); r.Owner != "" || r.Checkpoint != SequenceCheckpoint(mid) {
		t.Errorf("row %v", r)
	}
	// A stopped worker asks for nothing more.
	before := len(u.sent)
	u.runTo(30 * time.Second)
	if len(u.sent) != before {
		t.Errorf("calls after stopping: %v", u.sent[before:])
	}
}

// At the end of a shard the processor is told, the children are learnt,
// and SHARD_END is written (owner cleared, children recorded, a CAS on the
// holder's version); nothing more is written to the row by this worker.
func TestShardEndWrite(t *testing.T) {
	for _, childShards := range []bool{false, true} {
		t.Run(fmt.Sprintf("children_from_records_%v", childShards), func(t *testing.T) {
			u := newUnit(t, Config{})
			u.stream.childShards = childShards
			key := u.holding(shardKey(0), startSeq(), 2)
			last := u.stream.recs[key][1].Sequence
			if n, ok := u.checkpoint(key, SequenceCheckpoint(last)); !ok || n.Err != nil {
				t.Fatalf("checkpoint %v", n.Err)
			}
			u.runTo(time.Second)
			u.stream.split(key, shardKey(1), shardKey(2))
			u.hold = func(c Call) bool {
				return c.Op == OpUpdateLease && c.Lease.Key == key && c.Lease.Checkpoint.IsShardEnd()
			}
			u.runTo(5 * time.Second)
			if len(u.noticesOf(NoticeShardEnded, key)) != 1 {
				t.Fatalf("processor not told of the shard end\n%s", u.dump())
			}
			end := u.mustPending(OpUpdateLease, key)
			if end.Expect.Owner != me || end.Lease.Owner != "" || end.Lease.Counter != end.Expect.Counter+1 ||
				!slices.Equal(end.Lease.Children, []string{shardKey(1), shardKey(2)}) {
				t.Errorf("shard end %v children %v", end, end.Lease.Children)
			}
			u.reply(end, u.apply(end))
			if len(u.traceOf(TraceShardEnded, key)) != 1 || len(u.w.Held()) != 0 {
				t.Errorf("shard end not applied: held %v", u.w.Held())
			}
			for _, s := range u.sent {
				if s.c.ID > end.ID && s.c.Op == OpUpdateLease && s.c.Lease.Key == key {
					t.Errorf("write of the ended row after SHARD_END: %v", s.c)
				}
			}
			u.hold = nil
			u.runTo(u.now + deleteGrace(u.w.cfg) + 2*DefaultShardSyncInterval)
			// The children get leases and are consumed; the parent row
			// is deleted once both started (and it has been finished for
			// the deletion's grace).
			if !slices.Equal(u.w.Held(), []string{shardKey(1), shardKey(2)}) {
				t.Errorf("held %v, want the children", u.w.Held())
			}
			if _, err := u.store.GetLease(t.Context(), key); err == nil {
				t.Errorf("finished parent row not deleted")
			}
		})
	}
}

// A cooperative handoff asks the processor to let go for a handoff, naming
// the receiver: a processor can tell it from a shutdown.
func TestHandoffSaysWhy(t *testing.T) {
	u := newUnit(t, Config{})
	u.holdNotices = map[NoticeKind]bool{NoticeShutdownRequested: true}
	key := u.holding(shardKey(0), startSeq(), 3)
	u.runTo(time.Second)
	u.w.handOver(u.w.holdingOf(key), "w9")
	u.step(Input{Kind: InputTick})
	sr := u.noticesOf(NoticeShutdownRequested, key)
	if len(sr) != 1 || sr[0].n.Reason != ShutdownHandoff || sr[0].n.To != "w9" {
		t.Fatalf("shutdown-requested %v, want one for a handoff to w9", sr)
	}
	if ShutdownHandoff.String() != "handoff" || ShutdownWorker.String() != "worker shutdown" {
		t.Errorf("names %q %q", ShutdownHandoff, ShutdownWorker)
	}
}
