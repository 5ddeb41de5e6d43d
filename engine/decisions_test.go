package engine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Step-level tests of the holder's decisions: renew, validity from the send
// time, the safety margin, loss on own-view expiry and on a failed
// condition, and the resolution of writes of unknown outcome. Defaults
// apply: LeaseDuration 10 s, RenewInterval 3 s, SafetyMargin 1 s.

const (
	ld     = DefaultLeaseDuration
	ri     = DefaultRenewInterval
	margin = time.Second
)

func startSeq() Checkpoint { return SentinelCheckpoint(TrimHorizon) }

// holdUpdates makes the unit keep every UpdateLease for the test to answer.
func holdUpdates(c Call) bool { return c.Op == OpUpdateLease }

func TestRenewIsConditionalOnOwnerAndCounter(t *testing.T) {
	u := newUnit(t, Config{})
	key := u.holding(shardKey(0), startSeq(), 2)
	took := u.row(key)
	if took.Owner != me || took.Counter != 1 {
		t.Fatalf("after take: %v", took)
	}
	if u.w.Config().SafetyMargin != margin {
		t.Fatalf("default margin %v", u.w.Config().SafetyMargin)
	}
	// Renewals go out every RenewInterval from the last applied write's
	// send time, each a CAS on the version this worker last wrote.
	for i, at := range []time.Duration{ri, 2 * ri, 3 * ri} {
		u.runTo(at)
		calls := u.sentOf(OpUpdateLease, key, at-ri+1, at)
		if len(calls) != 1 || calls[0].at != at {
			t.Fatalf("renew %d: want one UpdateLease at %v, got %v", i, at, calls)
		}
		c := calls[0].c
		want := Expect{Owner: me, Counter: int64(1 + i)}
		if c.Expect != want || c.Lease.Counter != int64(2+i) || c.Lease.Owner != me {
			t.Errorf("renew %d: %v, want expect %v and counter %d", i, c, want, 2+i)
		}
		if c.Lease.Checkpoint != took.Checkpoint || c.Lease.OwnerSwitches != took.OwnerSwitches {
			t.Errorf("renew %d changed the row's contents: %v", i, c.Lease)
		}
	}
	if n := len(u.traceOf(TraceLeaseRenewed, key)); n != 3 {
		t.Errorf("%d lease-renewed events, want 3", n)
	}
	if !u.w.Acting(key) {
		t.Errorf("not acting after three renewals")
	}
}

// The validity window starts when the renew is sent: a late reply does
// not extend it (KCL starts it at the reply).
func TestValidityStartsAtRenewSendTime(t *testing.T) {
	for _, replyAt := range []time.Duration{ri, ri + 2*time.Second, ri + 6*time.Second} {
		t.Run("reply_at_"+replyAt.String(), func(t *testing.T) {
			u := newUnit(t, Config{})
			key := u.holding(shardKey(0), startSeq(), 1)
			u.hold = holdUpdates
			u.runTo(ri)
			renew := u.mustPending(OpUpdateLease, key)
			u.runTo(replyAt)
			u.reply(renew, u.apply(renew))
			if len(u.traceOf(TraceLeaseRenewed, key)) != 1 {
				t.Fatalf("renew not applied:\n%s", u.dump())
			}
			// The next renew is due at send + RenewInterval, whenever the
			// reply came; it is never answered.
			stopAt := ri + ld - margin
			u.runTo(stopAt - time.Millisecond)
			if !u.w.Acting(key) {
				t.Fatalf("stopped acting before send + LeaseDuration - SafetyMargin = %v", stopAt)
			}
			if got := u.w.ActingUntil(key); got != stopAt {
				t.Fatalf("ActingUntil = %v, want send + LeaseDuration - SafetyMargin = %v", got, stopAt)
			}
			// A renew is in flight (never answered): a checkpoint asked for
			// now waits for the write slot; it is not refused.
			if n, ok := u.checkpoint(key, SequenceCheckpoint(u.stream.recs[key][0].Sequence)); ok {
				t.Fatalf("checkpoint answered at once while acting: %v", n.Err)
			}
			// Records that arrive now are fetched at the margin and must not
			// be delivered.
			u.stream.put(key, 2)
			delivered := len(u.noticesOf(NoticeRecords, key))
			u.runTo(stopAt)
			if u.w.Acting(key) {
				t.Errorf("still acting at %v: the validity window started at the reply (%v), not at the send (%v)", stopAt, replyAt, ri)
			}
			if got := u.w.ActingUntil(key); got != 0 {
				t.Errorf("ActingUntil = %v at %v, want 0 (not acting)", got, stopAt)
			}
			if n, ok := u.checkpoint(key, SequenceCheckpoint(u.stream.recs[key][0].Sequence)); !ok || !errors.Is(n.Err, ErrLeaseLost) {
				t.Errorf("checkpoint at the margin: answered=%v err=%v, want ErrLeaseLost", ok, n.Err)
			}
			// (A reply at 9 s comes just as the take's own window reached
			// its margin: acting stopped then, and resumed with the renew.)
			stopped := u.traceOf(TraceStoppedActing, key)
			if len(stopped) == 0 || stopped[len(stopped)-1].Mono != stopAt || stopped[len(stopped)-1].Counter != 2 {
				t.Errorf("stopped-acting events %v, want the last at %v", stopped, stopAt)
			}
			u.runTo(ri + ld - time.Millisecond)
			if got := len(u.noticesOf(NoticeRecords, key)); got != delivered {
				t.Errorf("records delivered after the margin")
			}
			if len(u.traceOf(TraceLeaseLost, key)) != 0 {
				t.Fatalf("lost before own-view expiry")
			}
			// The next renew, never answered, is in flight at the expiry
			// (send + LeaseDuration): the holder, not acting, keeps the
			// lease until that renew's own validity would end, had it
			// applied.
			next := u.sentOf(OpUpdateLease, key, ri+1, ri+ld)
			if len(next) != 1 {
				t.Fatalf("renews after the first: %v, want one (never answered)", next)
			}
			lostAt := next[0].at + ld
			u.runTo(lostAt - time.Millisecond)
			if len(u.traceOf(TraceLeaseLost, key)) != 0 || u.w.Acting(key) {
				t.Fatalf("lost, or acting, at %v, with a renew in flight since %v", u.now, next[0].at)
			}
			u.runTo(lostAt)
			lost := u.traceOf(TraceLeaseLost, key)
			if len(lost) != 1 || lost[0].Mono != lostAt {
				t.Errorf("lease-lost %v, want one at the renew in flight's send + LeaseDuration = %v", lost, lostAt)
			}
			if len(u.noticesOf(NoticeLeaseLost, key)) != 1 || len(u.w.Held()) != 0 {
				t.Errorf("processor not told, or lease still held: %v", u.w.Held())
			}
		})
	}
}

// While renewals keep failing, the holder keeps trying, stops acting at the
// margin and drops the lease at its own view of expiry (or, with a renew of
// unknown outcome in flight, at that renew's).
func TestStopActingAtMarginThenLoseAtExpiry(t *testing.T) {
	cases := []struct {
		name  string
		renew func(u *unit, c Call)
	}{
		{"throttled", func(u *unit, c Call) { u.reply(c, Result{Err: ErrThrottled}) }},
		{"throttled_wrapped", func(u *unit, c Call) {
			u.reply(c, Result{Err: errors.Join(errors.New("ProvisionedThroughputExceeded"), ErrThrottled)})
		}},
		{"never_answered", func(u *unit, c Call) {}},
		{"unknown_then_reread_fails", func(u *unit, c Call) { u.reply(c, Result{Err: errTimeout}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{})
			key := u.holding(shardKey(0), startSeq(), 1)
			u.hold = func(c Call) bool { return c.Op == OpUpdateLease || c.Op == OpGetLease }
			if tc.name == "unknown_then_reread_fails" {
				u.hold = holdUpdates
				u.fault = func(c Call) (Result, bool) {
					return Result{Err: errTimeout}, c.Op == OpGetLease
				}
			}
			// Answer every renew as the case says, every 100 ms.
			for at := time.Duration(0); at < ld-margin; at += 100 * time.Millisecond {
				u.runTo(at)
				if c, ok := u.pending(OpUpdateLease, key); ok && tc.name != "never_answered" {
					tc.renew(u, c)
				}
				if !u.w.Acting(key) {
					t.Fatalf("stopped acting at %v, before the margin", at)
				}
			}
			u.stream.put(key, 1)
			u.runTo(ld - margin)
			if u.w.Acting(key) {
				t.Fatalf("acting at the margin")
			}
			if n, ok := u.checkpoint(key, SequenceCheckpoint(u.stream.recs[key][0].Sequence)); !ok || !errors.Is(n.Err, ErrLeaseLost) {
				t.Errorf("checkpoint at the margin: %v %v, want ErrLeaseLost", ok, n.Err)
			}
			if st := u.traceOf(TraceStoppedActing, key); len(st) != 1 || st[0].Mono != ld-margin {
				t.Errorf("stopped-acting %v", st)
			}
			u.runTo(ld - time.Millisecond)
			if c, ok := u.pending(OpUpdateLease, key); ok && tc.name != "never_answered" {
				tc.renew(u, c)
			}
			if n := len(u.noticesOf(NoticeRecords, key)); n != 1 {
				t.Errorf("%d deliveries, want only the first (none after the margin)", n)
			}
			// A renew whose outcome is still unknown (never answered, or
			// timed out with every re-read failing) keeps the lease,
			// without acting, until its own validity would end had it
			// applied: its send (ri) + LeaseDuration.
			lostAt := ld
			if tc.name == "never_answered" || tc.name == "unknown_then_reread_fails" {
				lostAt = ri + ld
				u.runTo(lostAt - time.Millisecond)
				if len(u.traceOf(TraceLeaseLost, key)) != 0 || u.w.Acting(key) {
					t.Fatalf("lost, or acting, at %v with the renew sent at %v in flight", u.now, ri)
				}
			}
			u.runTo(lostAt)
			lost := u.traceOf(TraceLeaseLost, key)
			if len(lost) != 1 || lost[0].Mono != lostAt {
				t.Fatalf("lease-lost %v, want one at %v", lost, lostAt)
			}
			if len(u.noticesOf(NoticeLeaseLost, key)) != 1 {
				t.Errorf("processor not told of the loss")
			}
			// The holder kept trying: throttled renews are re-sent; a renew
			// of unknown outcome is re-read until the read succeeds.
			renews := u.sentOf(OpUpdateLease, key, ri, ld)
			switch tc.name {
			case "never_answered":
			case "unknown_then_reread_fails":
				if n := len(u.sentOf(OpGetLease, key, ri, ld)); len(renews) != 1 || n < 3 {
					t.Errorf("%d renews and %d re-reads, want one renew and repeated re-reads", len(renews), n)
				}
			default:
				if len(renews) < 3 {
					t.Errorf("only %d renew attempts after failures", len(renews))
				}
			}
			// The old holding writes nothing more (a later scan may take
			// the row again, which is a take, not a renew).
			u.hold, u.fault = nil, nil
			u.runTo(lostAt + 2*time.Second)
			for _, e := range u.traceOf(TraceCallSent, key) {
				if e.Mono >= lostAt && e.Reason != "take" {
					t.Errorf("%s sent for the lost lease at %v", e.Reason, e.Mono)
				}
			}
		})
	}
}

// A renew whose condition fails stops acting at once; once the re-read shows
// another owner, the lease is lost.
func TestRenewConditionFailedLosesLease(t *testing.T) {
	u := newUnit(t, Config{})
	key := u.holding(shardKey(0), startSeq(), 2)
	u.hold = func(c Call) bool { return c.Op == OpUpdateLease || c.Op == OpGetLease }
	u.runTo(ri)
	renew := u.mustPending(OpUpdateLease, key)
	// Another worker took the row.
	stolen := u.row(key)
	stolen.Owner, stolen.Counter = "thief", stolen.Counter+1
	u.put(stolen)
	u.reply(renew, u.apply(renew))
	if u.w.Acting(key) {
		t.Errorf("still acting after a failed condition")
	}
	if n, ok := u.checkpoint(key, SequenceCheckpoint(u.stream.recs[key][1].Sequence)); !ok || !errors.Is(n.Err, ErrLeaseLost) {
		t.Errorf("checkpoint right after the failed condition: %v %v, want ErrLeaseLost", ok, n.Err)
	}
	if len(u.traceOf(TraceLeaseLost, key)) != 0 {
		t.Fatalf("lost before the re-read")
	}
	get := u.mustPending(OpGetLease, key)
	u.reply(get, u.apply(get))
	lost := u.traceOf(TraceLeaseLost, key)
	if len(lost) != 1 || len(u.noticesOf(NoticeLeaseLost, key)) != 1 || len(u.w.Held()) != 0 {
		t.Fatalf("not lost after the re-read: %v held %v", lost, u.w.Held())
	}
	if res := u.traceOf(TraceResolved, key); len(res) != 1 || res[0].Reason != "renew superseded" {
		t.Errorf("resolved %v", res)
	}
	if len(u.out) != 0 {
		t.Errorf("calls after the loss: %v", u.out)
	}
	if r := u.row(key); r.Owner != "thief" {
		t.Errorf("row %v", r)
	}
}

// Writes of unknown outcome, and conditions that fail because an SDK retry
// re-sent a write that had applied, are resolved by a strongly consistent
// re-read.
func TestAmbiguousHolderWrites(t *testing.T) {
	type outcome struct {
		apply bool  // the write lands in the table
		err   error // the reply the worker gets
	}
	cases := []struct {
		name     string
		write    string // "renew" or "checkpoint"
		out      outcome
		resolved string
		retried  bool // the same write is sent again
	}{
		{"renew/applied_reply_lost", "renew", outcome{true, errTimeout}, "renew applied", false},
		{"renew/not_applied_reply_lost", "renew", outcome{false, errTimeout}, "renew not applied", true},
		{"renew/sdk_retry_of_applied", "renew", outcome{true, ErrConditionFailed}, "renew applied", false},
		{"checkpoint/applied_reply_lost", "checkpoint", outcome{true, errTimeout}, "checkpoint applied", false},
		{"checkpoint/not_applied_reply_lost", "checkpoint", outcome{false, errTimeout}, "checkpoint not applied", true},
		{"checkpoint/sdk_retry_of_applied", "checkpoint", outcome{true, ErrConditionFailed}, "checkpoint applied", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{})
			key := u.holding(shardKey(0), startSeq(), 3)
			u.hold = holdUpdates
			sendAt := time.Second
			u.runTo(sendAt)
			var token uint64
			cp := SequenceCheckpoint(u.stream.recs[key][2].Sequence)
			if tc.write == "renew" {
				u.runTo(ri)
				sendAt = ri
			} else {
				u.token++
				token = u.token
				u.step(Input{Kind: InputCheckpoint, Key: key, Checkpoint: cp, Token: token})
			}
			wr := u.mustPending(OpUpdateLease, key)
			if wr.Expect != (Expect{me, 1}) || wr.Lease.Counter != 2 {
				t.Fatalf("write %v", wr)
			}
			if tc.out.apply {
				if r := u.apply(wr); r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			u.runTo(sendAt + 500*time.Millisecond)
			u.reply(wr, Result{Err: tc.out.err})
			// The re-read was answered at once (GetLease is not held).
			res := u.traceOf(TraceResolved, key)
			if len(res) != 1 || res[0].Reason != tc.resolved {
				t.Fatalf("resolved %v, want %q\n%s", res, tc.resolved, u.dump())
			}
			if len(u.w.Held()) != 1 || len(u.traceOf(TraceLeaseLost, key)) != 0 {
				t.Fatalf("lease lost on an ambiguous outcome")
			}
			if !u.w.Acting(key) {
				t.Errorf("not acting after the resolution")
			}
			again, ok := u.pending(OpUpdateLease, key)
			if ok != tc.retried {
				t.Fatalf("write re-sent: %v, want %v (pending %v)", ok, tc.retried, u.out)
			}
			if tc.retried {
				if again.ID == wr.ID || again.Expect != wr.Expect || !again.Lease.Equal(wr.Lease) {
					t.Errorf("retry %v, want the same write as %v", again, wr)
				}
				u.reply(again, u.apply(again))
			}
			if r := u.row(key); r.Counter != 2 || r.Owner != me {
				t.Errorf("row %v", r)
			}
			if tc.write == "checkpoint" {
				done := u.noticesOf(NoticeCheckpointDone, key)
				if len(done) != 1 || done[0].n.Token != token || done[0].n.Err != nil {
					t.Errorf("checkpoint answers %v, want one success", done)
				}
				if r := u.row(key); r.Checkpoint != cp {
					t.Errorf("stored checkpoint %v, want %v", r.Checkpoint, cp)
				}
			}
			// The next renew builds on the version now stored.
			u.runTo(sendAt + ri + time.Second)
			next := u.mustPending(OpUpdateLease, key)
			if next.Expect != (Expect{me, 2}) || next.Lease.Counter != 3 {
				t.Errorf("next renew %v, want a CAS on counter 2", next)
			}
		})
	}
}

// A take whose reply is lost, or whose SDK retry reads as a failed
// condition, ends with the lease held; one that did not apply is not held
// and is not acted on.
func TestAmbiguousTake(t *testing.T) {
	cases := []struct {
		name     string
		apply    bool
		err      error
		held     bool
		resolved string
	}{
		{"applied_reply_lost", true, errTimeout, true, "take applied"},
		{"applied_sdk_retry", true, ErrConditionFailed, true, "take applied"},
		{"not_applied_reply_lost", false, errTimeout, false, "take not applied"},
		{"taken_by_another", false, ErrConditionFailed, false, "take superseded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{})
			key := shardKey(0)
			u.stream.add(key)
			u.stream.put(key, 2)
			u.put(Lease{Key: key, Checkpoint: startSeq()})
			u.hold = holdUpdates
			u.tick()
			take := u.mustPending(OpUpdateLease, key)
			if take.Expect != (Expect{"", 0}) || take.Lease.Owner != me || take.Lease.Counter != 1 {
				t.Fatalf("take %v", take)
			}
			if tc.apply {
				u.apply(take)
			}
			if tc.name == "taken_by_another" {
				u.put(Lease{Key: key, Owner: "other", Counter: 1, Checkpoint: startSeq()})
			}
			u.runTo(200 * time.Millisecond)
			u.reply(take, Result{Err: tc.err})
			res := u.traceOf(TraceResolved, key)
			if len(res) != 1 || res[0].Reason != tc.resolved {
				t.Fatalf("resolved %v, want %q", res, tc.resolved)
			}
			if got := len(u.w.Held()) == 1; got != tc.held {
				t.Fatalf("held %v, want %v", got, tc.held)
			}
			if tc.held {
				if !u.w.Acting(key) || len(u.noticesOf(NoticeRecords, key)) != 1 {
					t.Errorf("holding but not consuming")
				}
			} else if len(u.noticesOf(NoticeInitialize, key)) != 0 {
				t.Errorf("processor initialized for a lease not held")
			}
			// No second take of a lease already taken.
			u.runTo(5 * time.Second)
			if tc.held {
				for _, s := range u.sentOf(OpUpdateLease, key, 0, 5*time.Second) {
					if s.c.ID != take.ID && s.c.Expect.Owner != me {
						t.Errorf("second take %v", s.c)
					}
				}
			}
		})
	}
}

// Every write a holder makes is a CAS on the version it last wrote, and
// the worker never builds its condition from rows it merely observed: a
// write from a holder whose row moved on never lands, whatever its kind.
func TestHolderWritesAreFenced(t *testing.T) {
	cases := []struct {
		name string
		act  func(u *unit, key string) // makes the holder write at u.now
		want string                    // the kind of write sent
	}{
		{"checkpoint", func(u *unit, key string) {
			u.token++
			u.step(Input{Kind: InputCheckpoint, Key: key, Checkpoint: SequenceCheckpoint(u.stream.recs[key][1].Sequence), Token: u.token})
		}, "checkpoint"},
		{"renew", func(u *unit, key string) { u.runTo(ri) }, "renew"},
		{"release", func(u *unit, key string) { u.step(Input{Kind: InputShutdown}) }, "release"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Frequent scans: the worker sees the thief's row before it
			// writes.
			u := newUnit(t, Config{TakeInterval: 300 * time.Millisecond})
			key := u.holding(shardKey(0), startSeq(), 2)
			u.runTo(time.Second)
			stolen := u.row(key)
			stolen.Owner, stolen.Counter = "thief", stolen.Counter+1
			u.put(stolen)
			u.runTo(2 * time.Second)
			if o := u.w.observed(key); o == nil || o.row.Owner != "thief" {
				t.Fatalf("the worker did not observe the thief's row")
			}
			from := len(u.sent)
			tc.act(u, key)
			var wr *Call
			for _, s := range u.sent[from:] {
				if s.c.Op == OpUpdateLease && s.c.Lease.Key == key {
					wr = &s.c
					break
				}
			}
			if wr == nil {
				t.Fatalf("no write sent\n%s", u.dump())
			}
			if sent := u.traceOf(TraceCallSent, key); sent[len(sent)-1].Reason != tc.want {
				t.Errorf("write %q, want %q", sent[len(sent)-1].Reason, tc.want)
			}
			if wr.Expect != (Expect{Owner: me, Counter: 1}) {
				t.Errorf("%s expects %v, want the version the holder wrote {me 1}", tc.name, wr.Expect)
			}
			if r := u.row(key); !r.Equal(stolen) {
				t.Errorf("fenced write landed: %v", r)
			}
			if len(u.traceOf(TraceLeaseLost, key)) != 1 || len(u.w.Held()) != 0 {
				t.Errorf("holder did not lose the lease: held %v", u.w.Held())
			}
			for _, n := range u.noticesOf(NoticeCheckpointDone, key) {
				if !errors.Is(n.n.Err, ErrLeaseLost) {
					t.Errorf("checkpoint answered %v, want ErrLeaseLost", n.n.Err)
				}
			}
			if tc.name == "checkpoint" && len(u.noticesOf(NoticeCheckpointDone, key)) != 1 {
				t.Errorf("checkpoint not answered")
			}
		})
	}
}

// A renew of unknown outcome that the re-read finds not applied may still
// be in flight and land after the read. If the retry then finds the row it
// meant to write, that row may be the earlier request's: the validity must
// start at the earlier send, or the holder outlives a taker that saw the
// row change when the earlier request landed.
func TestRetriedRenewValidityStartsAtFirstAttempt(t *testing.T) {
	u := newUnit(t, Config{})
	key := u.holding(shardKey(0), startSeq(), 1)
	u.hold = func(c Call) bool { return c.Op == OpUpdateLease || c.Op == OpGetLease }
	u.runTo(ri)
	renew1 := u.mustPending(OpUpdateLease, key)
	u.runTo(4 * time.Second)
	u.reply(renew1, Result{Err: errTimeout})
	get := u.mustPending(OpGetLease, key)
	read := u.apply(get) // the table is read: version 1
	u.apply(renew1)      // then the delayed renew lands: version 2, at 4 s
	landed := 4 * time.Second
	u.runTo(6 * time.Second)
	u.reply(get, read) // the read's reply comes late: "not applied"
	renew2 := u.mustPending(OpUpdateLease, key)
	if renew2.Expect != renew1.Expect || !renew2.Lease.Equal(renew1.Lease) {
		t.Fatalf("retry %v differs from %v", renew2, renew1)
	}
	u.reply(renew2, u.apply(renew2)) // condition failed: the row is at 2
	get2 := u.mustPending(OpGetLease, key)
	u.reply(get2, u.apply(get2)) // equal to the row written: "applied"
	if len(u.w.Held()) != 1 {
		t.Fatalf("lease lost")
	}
	// A taker that saw version 2 appear at 4 s may act from 14 s. No later
	// renew is answered.
	takerActs := landed + ld
	u.runTo(takerActs - margin)
	if u.w.Acting(key) {
		t.Errorf("acting at %v: the validity was taken from the retry (sent at 6 s), not the first attempt (3 s)", u.now)
	}
	u.runTo(takerActs)
	if u.w.Acting(key) {
		t.Errorf("acting at %v, when a taker may act", u.now)
	}
	// The renew sent after the re-read, never answered, keeps the lease
	// (not acting) until its own validity would end had it applied.
	next := u.sentOf(OpUpdateLease, key, 6*time.Second, takerActs)
	if len(next) < 2 {
		t.Fatalf("renews from the resolution on: %v, want the retry and a later one", next)
	}
	u.runTo(next[len(next)-1].at + ld)
	if len(u.w.Held()) != 0 {
		t.Errorf("still holding at %v, past the renew in flight's own expiry", u.now)
	}
}

// A renew whose outcome was never learnt before the lease was dropped may
// have landed: a later resume of the same row that writes the very same
// version must count its validity from that renew's send, not its own
// (found by the simulator, seed 743: the resumed holder acted while a taker
// that had seen the renewed version stand still for a lease took over).
func TestResumeAfterUnresolvedRenewKeepsItsSendTime(t *testing.T) {
	u := newUnit(t, Config{})
	key := u.holding(shardKey(0), startSeq(), 1)
	old := u.row(key)
	u.hold = func(c Call) bool { return c.Op == OpUpdateLease || c.Op == OpGetLease }
	u.runTo(ri)
	renew := u.mustPending(OpUpdateLease, key)
	renewSent := u.now
	u.apply(renew) // it lands at once, but its reply is lost
	u.runTo(ri + 2*time.Second)
	u.reply(renew, Result{Err: errTimeout})
	u.mustPending(OpGetLease, key) // the resolving read is never answered
	// Scans are stale: they still show the version before the renew.
	u.fault = func(c Call) (Result, bool) {
		if c.Op == OpListLeases {
			return Result{Listing: Listing{Leases: []Lease{old}}}, true
		}
		return Result{}, false
	}
	var take Call
	for u.now < 3*ld && take.ID == 0 {
		u.runTo(u.now + 100*time.Millisecond)
		for _, c := range u.out {
			if c.Op == OpUpdateLease && c.Expect == ExpectOf(old) && c.ID != renew.ID {
				take = c
			}
		}
	}
	if take.ID == 0 {
		t.Fatalf("no resume of the row:\n%s", u.dump())
	}
	if len(u.w.Held()) != 0 {
		t.Fatalf("the lease was not dropped before the resume")
	}
	u.reply(take, u.apply(take)) // condition failed: the renew's version is there
	get := u.out[len(u.out)-1]   // the take's resolving read (the renew's is still unanswered)
	if get.Op != OpGetLease {
		t.Fatalf("no re-read after the take's condition failed: %v", u.out)
	}
	if got := u.apply(get); !got.Lease.Equal(take.Lease) {
		t.Fatalf("re-read %v, want the very row the take writes %v", got.Lease, take.Lease)
	}
	u.reply(get, u.apply(get)) // "applied": by the renew, in truth
	if n := len(u.trace); n == 0 || u.trace[n-1].Kind != TraceLeaseAcquired && !strings.Contains(u.dump(), "take applied") {
		t.Fatalf("the resume was not taken as applied:\n%s", u.dump())
	}
	// A taker that saw the renewed version appear when the renew landed
	// may act from renewSent+ld: the resumed holder must have stopped.
	u.runTo(max(u.now, renewSent+ld-margin))
	if u.w.Acting(key) {
		t.Errorf("acting at %v on a version written by a renew sent at %v: its validity ended at %v",
			u.now, renewSent, renewSent+ld-margin)
	}
}
