package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func fanOutConfig() Config { return Config{Consumer: FanOut, ConsumerName: "app"} }

// delivered returns the sequence numbers handed to key's processor.
func (u *unit) delivered(key string) []string {
	var got []string
	for _, n := range u.noticesOf(NoticeRecords, key) {
		for _, r := range n.n.Records {
			got = append(got, r.Sequence)
		}
	}
	return got
}

func seqsOf(recs []Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Sequence)
	}
	return out
}

func TestFanOutConfigRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"fan_out", Config{Consumer: FanOut, ConsumerName: "app-1.x_y"}, ""},
		{"fan_out_deregister", Config{Consumer: FanOut, ConsumerName: "app", DeregisterConsumer: true}, ""},
		{"fan_out_without_name", Config{Consumer: FanOut}, "ConsumerName \"\" (required with Consumer FanOut)"},
		{"fan_out_bad_name", Config{Consumer: FanOut, ConsumerName: "a b"}, "only letters, digits"},
		{"name_without_fan_out", Config{ConsumerName: "app"}, "Consumer is polling"},
		{"deregister_without_fan_out", Config{DeregisterConsumer: true}, "DeregisterConsumer needs Consumer FanOut"},
		{"unknown_mode", Config{Consumer: 7, ConsumerName: "x"}, "neither Polling nor FanOut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Owner = "w"
			cfg.Streams = []StreamConfig{{Name: "s"}}
			_, err := NewWorker(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	for _, s := range []string{"fan-out", "EFO", "polling", ""} {
		if _, err := ParseConsumerMode(s); err != nil {
			t.Errorf("ParseConsumerMode(%q): %v", s, err)
		}
	}
	if _, err := ParseConsumerMode("push"); err == nil {
		t.Error("ParseConsumerMode(push) accepted")
	}
}

// A fan-out worker finds or registers its consumer and waits until it is
// ACTIVE before it touches the lease table; workers that start together
// all try to register, and the losers describe the winner's consumer.
func TestFanOutRegistration(t *testing.T) {
	active := StreamConsumer{Name: "app", ARN: "arn:test:s/consumer/app", Status: ConsumerActive}
	creating := active
	creating.Status = ConsumerCreating
	type answer struct {
		op  Op
		res Result
	}
	for _, tc := range []struct {
		name    string
		answers []answer // scripted answers to the registration calls, in order
		ready   time.Duration
		by      time.Duration // the latest time ready is allowed
	}{
		{"already_active", []answer{{OpDescribeConsumer, Result{Consumer: active}}}, 0, 0},
		{"absent", []answer{
			{OpDescribeConsumer, Result{Err: fmt.Errorf("no consumer: %w", ErrNotFound)}},
			{OpRegisterConsumer, Result{Consumer: creating}},
			{OpDescribeConsumer, Result{Consumer: creating}},
			{OpDescribeConsumer, Result{Consumer: active}},
		}, 1800 * time.Millisecond, 2200 * time.Millisecond},
		{"registered_by_another_meanwhile", []answer{
			{OpDescribeConsumer, Result{Err: fmt.Errorf("no consumer: %w", ErrNotFound)}},
			{OpRegisterConsumer, Result{Err: fmt.Errorf("exists: %w", ErrResourceInUse)}},
			{OpDescribeConsumer, Result{Consumer: active}},
		}, 0, 0},
		{"throttled_then_deleting_then_gone", []answer{
			{OpDescribeConsumer, Result{Err: fmt.Errorf("slow down: %w", ErrThrottled)}},
			{OpDescribeConsumer, Result{Consumer: StreamConsumer{Name: "app", ARN: "arn:old", Status: ConsumerDeleting}}},
			{OpDescribeConsumer, Result{Err: fmt.Errorf("no consumer: %w", ErrNotFound)}},
			{OpRegisterConsumer, Result{Consumer: active}},
		}, 900 * time.Millisecond, 1300 * time.Millisecond},
		{"register_unknown_outcome_is_looked_up", []answer{
			{OpDescribeConsumer, Result{Err: fmt.Errorf("no consumer: %w", ErrNotFound)}},
			{OpRegisterConsumer, Result{Err: errTimeout}},
			{OpDescribeConsumer, Result{Consumer: active}},
		}, 90 * time.Millisecond, 110 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, fanOutConfig())
			key := shardKey(0)
			u.stream.add(key)
			u.stream.put(key, 2)
			var readyAt time.Duration = -1
			u.fault = func(c Call) (Result, bool) {
				if c.Op != OpDescribeConsumer && c.Op != OpRegisterConsumer {
					return Result{}, false
				}
				if len(tc.answers) == 0 {
					t.Fatalf("unexpected %v after the consumer was ACTIVE", c)
				}
				a := tc.answers[0]
				tc.answers = tc.answers[1:]
				if c.Op != a.op || c.Stream != "s" || c.ConsumerName != "app" {
					t.Fatalf("at %v: call %v, want %s(s app)", u.now, c, a.op)
				}
				if a.res.Consumer.Status == ConsumerActive {
					readyAt = u.now
				}
				return a.res, true
			}
			u.tick()
			u.runTo(10 * time.Second)
			if len(tc.answers) > 0 {
				t.Fatalf("calls never made: %v", tc.answers)
			}
			if readyAt < tc.ready || readyAt > tc.by {
				t.Fatalf("ACTIVE at %v, want in [%v, %v] (polls and backoffs)", readyAt, tc.ready, tc.by)
			}
			for _, s := range u.sent {
				if s.c.Op.IsStore() && s.at < readyAt {
					t.Fatalf("%v at %v, before the consumer was ACTIVE at %v", s.c, s.at, readyAt)
				}
			}
			if got := u.delivered(key); len(got) != 2 {
				t.Fatalf("delivered %v after registration, want the 2 records", got)
			}
			subs := u.sentOf(OpSubscribe, "", 0, u.now)
			if len(subs) != 1 || subs[0].c.ConsumerARN != active.ARN || subs[0].c.Shard != key {
				t.Fatalf("subscriptions %v, want one of %s with %s", subs, key, active.ARN)
			}
		})
	}
}

// A registration refused for want of a permission stops the worker with
// ErrAccessDenied, as the start-up check does: no retry would mend it.
func TestFanOutRegistrationAccessDenied(t *testing.T) {
	u := newUnit(t, fanOutConfig())
	u.fault = func(c Call) (Result, bool) {
		if c.Op == OpDescribeConsumer {
			return Result{Err: fmt.Errorf("not authorized to DescribeStreamConsumer: %w", ErrAccessDenied)}, true
		}
		return Result{}, false
	}
	u.tick()
	u.runTo(time.Second)
	if !u.stopped || !errors.Is(u.w.Err(), ErrAccessDenied) || !strings.Contains(u.w.Err().Error(), `stream consumer "app"`) {
		t.Fatalf("stopped %v with %v; want a stop with ErrAccessDenied naming the consumer", u.stopped, u.w.Err())
	}
}

// The next event is asked for only once the processor has finished the
// previous batch: a slow processor holds the subscription back and loses
// nothing.
func TestFanOutBackpressure(t *testing.T) {
	u := newUnit(t, fanOutConfig())
	u.holdRecords = true
	key := u.holding(shardKey(0), startSeq(), 3)
	first := u.noticesOf(NoticeRecords, key)
	if len(first) != 1 || len(first[0].n.Records) != 3 {
		t.Fatalf("first batch %v, want the 3 records", first)
	}
	deliveredAt := first[0].at
	u.stream.put(key, 5)
	u.runTo(20 * time.Second) // the processor is slow: 20 s on one batch
	if asked := u.sentOf(OpNextEvent, "", deliveredAt+1, u.now); len(asked) != 0 {
		t.Fatalf("asked for %d events while the processor was busy: %v", len(asked), asked)
	}
	if n := len(u.noticesOf(NoticeRecords, key)); n != 1 {
		t.Fatalf("%d batches handed out while the first was not done", n)
	}
	doneAt := u.now
	u.step(Input{Kind: InputDone, Key: key, Batch: first[0].n.Batch})
	if asked := u.sentOf(OpNextEvent, "", doneAt, doneAt); len(asked) != 1 {
		t.Fatalf("asked for %d events at Done, want 1", len(asked))
	}
	if got, want := u.delivered(key), seqsOf(u.stream.recs[key]); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// When a subscription ends (its 5-minute lifetime), the worker subscribes
// again AFTER_SEQUENCE_NUMBER of the last continuation, not from where the
// lease started: a lease that started at LATEST loses nothing put between
// the two subscriptions. The no_continuation case is the same run against a
// stream whose events carry none: the worker then falls back to the lease's
// own position (LATEST) and misses the gap, which is what the continuation
// prevents.
func TestFanOutResubscribesFromContinuation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		start    Checkpoint
		old      int // records before the first subscription
		newFirst int // records during the first subscription
		noCont   bool
	}{
		{"latest_idle", SentinelCheckpoint(Latest), 2, 0, false},
		{"latest_with_records", SentinelCheckpoint(Latest), 2, 3, false},
		{"trim_horizon", startSeq(), 2, 3, false},
		{"latest_idle_no_continuation", SentinelCheckpoint(Latest), 2, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, fanOutConfig())
			u.stream.fanOut().noContinuation = tc.noCont
			key := shardKey(0)
			u.stream.add(key)
			u.stream.put(key, tc.old)
			u.put(Lease{Key: key, Checkpoint: tc.start})
			u.tick()
			u.runTo(2 * time.Second)
			u.stream.put(key, tc.newFirst)
			u.runTo(3 * time.Second)
			first := u.stream.lastSub()
			u.stream.end(first, fmt.Errorf("lifetime over: %w", ErrSubscriptionEnded))
			u.hold = func(c Call) bool { return c.Op == OpSubscribe }
			u.runTo(4 * time.Second)
			sub := u.mustPending(OpSubscribe, key)
			gap := u.stream.put(key, 3) // between the two subscriptions
			u.hold = nil
			u.reply(sub, u.apply(sub))
			u.runTo(6 * time.Second)

			recs := u.stream.recs[key]
			lastSeen := recs[len(recs)-4].Sequence // the last record before the gap
			got := u.delivered(key)
			if !slices.Contains(u.stream.fanOut().unsubscribed, first) {
				t.Fatalf("the ended subscription %s was not given up: %v", first, u.stream.fanOut().unsubscribed)
			}
			if tc.noCont {
				if sub.Position.Type != IterLatest || slices.Contains(got, gap[0]) {
					t.Fatalf("without continuations: re-subscribed at %+v and delivered %v; the case should lose the gap %v", sub.Position, got, gap)
				}
				return
			}
			if sub.Position.Type != IterAfterSequenceNumber || sub.Position.Sequence != lastSeen {
				t.Fatalf("re-subscribed at %+v, want AFTER_SEQUENCE_NUMBER %s", sub.Position, lastSeen)
			}
			want := seqsOf(recs[tc.old:])
			if tc.start == startSeq() {
				want = seqsOf(recs)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("delivered %v, want %v", got, want)
			}
		})
	}
}

// ResourceInUse (a subscription of the same consumer and shard less than 5 s
// old: the previous holder's in a hand-off) is retried after a backoff of
// at least a second; a subscription taken over by another waits too.
func TestFanOutResourceInUse(t *testing.T) {
	u := newUnit(t, fanOutConfig())
	key := u.holding(shardKey(0), startSeq(), 2)
	u.runTo(time.Second)
	inUse := 2
	u.fault = func(c Call) (Result, bool) {
		if c.Op == OpSubscribe && inUse > 0 {
			inUse--
			return Result{Err: fmt.Errorf("subscribed 2 s ago: %w", ErrResourceInUse)}, true
		}
		return Result{}, false
	}
	u.stream.end(u.stream.lastSub(), fmt.Errorf("taken over: %w: %w", ErrSubscriptionEnded, ErrResourceInUse))
	endAt := u.now + 100*time.Millisecond
	u.runTo(endAt)
	u.stream.put(key, 2)
	u.runTo(10 * time.Second)
	subs := u.sentOf(OpSubscribe, key, endAt, u.now)
	if len(subs) != 3 || inUse != 0 {
		t.Fatalf("subscriptions after the take-over: %v, want 3 (two refused)", subs)
	}
	for i, s := range subs {
		prev := endAt
		if i > 0 {
			prev = subs[i-1].at
		}
		if min := 900 * time.Millisecond; s.at-prev < min {
			t.Errorf("subscription %d at %v, %v after the previous refusal; want at least %v", i, s.at, s.at-prev, min)
		}
	}
	if got, want := u.delivered(key), seqsOf(u.stream.recs[key]); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// Events are handed to the processor only while the worker acts on the
// lease: not after its act-until time (renewals stopped applying), even if
// the event was asked for before; and the worker neither subscribes nor
// asks for events after it.
func TestFanOutStopsAtActUntil(t *testing.T) {
	for _, lateRecords := range []bool{true, false} {
		t.Run(fmt.Sprintf("late_event_with_records=%v", lateRecords), func(t *testing.T) {
			u := newUnit(t, fanOutConfig())
			key := u.holding(shardKey(0), startSeq(), 1)
			u.hold = func(c Call) bool {
				return c.Op == OpUpdateLease || (c.Op == OpNextEvent && u.now > 8*time.Second)
			}
			actUntil := u.w.cfg.LeaseDuration - u.w.cfg.SafetyMargin // the take applied at 0; no renewal applies
			u.stream.put(key, 1)
			u.runTo(5 * time.Second)
			if n := len(u.delivered(key)); n != 2 {
				t.Fatalf("%d records delivered while acting, want 2", n)
			}
			u.runTo(8*time.Second + 150*time.Millisecond)
			inFlight := u.mustPending(OpNextEvent, key)
			if lateRecords {
				u.stream.put(key, 2)
			}
			u.runTo(actUntil + 10*time.Millisecond)
			u.reply(inFlight, u.apply(inFlight)) // the event arrives after act-until
			u.stream.put(key, 2)
			u.runTo(20 * time.Second)
			for _, n := range u.noticesOf(NoticeRecords, key) {
				if n.at >= actUntil {
					t.Fatalf("records handed out at %v, after act-until %v", n.at, actUntil)
				}
			}
			if n := len(u.delivered(key)); n != 2 {
				t.Fatalf("%d records delivered, want the 2 before act-until", n)
			}
			for _, op := range []Op{OpSubscribe, OpNextEvent} {
				if s := u.sentOf(op, key, actUntil, u.now); len(s) != 0 {
					t.Fatalf("%v sent after act-until", s)
				}
			}
			if len(u.w.Held()) != 0 {
				t.Fatalf("still holds %v", u.w.Held())
			}
			if fo := u.stream.fanOut(); !slices.Contains(fo.unsubscribed, inFlight.Subscription) {
				t.Fatalf("the subscription of the lost lease was not given up: %v", fo.unsubscribed)
			}
		})
	}
}

// At the end of a closed shard the last event's ChildShards name the
// children, and SHARD_END is written with them even when no listing shows
// them yet; without them the worker waits for a listing.
func TestFanOutChildrenFromChildShards(t *testing.T) {
	for _, withChildren := range []bool{true, false} {
		t.Run(fmt.Sprintf("child_shards=%v", withChildren), func(t *testing.T) {
			u := newUnit(t, fanOutConfig())
			key := u.holding(shardKey(0), startSeq(), 2)
			u.stream.childShards = withChildren
			u.stream.split(key, shardKey(1), shardKey(2))
			u.fault = func(c Call) (Result, bool) {
				if c.Op == OpListShards { // the listing lags: only the parent
					return Result{Shards: []Shard{*u.stream.shard(key)}}, true
				}
				return Result{}, false
			}
			u.runTo(5 * time.Second)
			row := u.row(key)
			if !withChildren {
				if row.Checkpoint.IsShardEnd() {
					t.Fatalf("SHARD_END written with no children known: %v", row)
				}
				return
			}
			if !row.Checkpoint.IsShardEnd() || !slices.Equal(row.Children, []string{shardKey(1), shardKey(2)}) {
				t.Fatalf("row %v, want SHARD_END with children %s and %s", row, shardKey(1), shardKey(2))
			}
			if n := len(u.sentOf(OpSubscribe, key, 0, u.now)); n != 1 {
				t.Fatalf("%d subscriptions, want 1: the end needs no other", n)
			}
		})
	}
}

// A subscription that arrives for a lease no longer held is given up at
// once; the worker keeps no subscription it does not read.
func TestFanOutLateSubscriptionGivenUp(t *testing.T) {
	u := newUnit(t, fanOutConfig())
	key := shardKey(0)
	u.stream.add(key)
	u.put(Lease{Key: key, Checkpoint: startSeq()})
	u.hold = func(c Call) bool { return c.Op == OpSubscribe || c.Op == OpUpdateLease && c.Expect.Owner == me }
	u.tick()
	sub := u.mustPending(OpSubscribe, key)
	u.runTo(14 * time.Second) // no renewal applies: the lease expires (the one in flight since 3 s would have lasted to 13 s)
	if len(u.w.Held()) != 0 {
		t.Fatal("lease still held")
	}
	r := u.apply(sub)
	u.reply(sub, r)
	if unsub := u.sentOf(OpUnsubscribe, key, u.now, u.now); len(unsub) != 1 || unsub[0].c.Subscription != r.Subscription {
		t.Fatalf("late subscription %s not given up: %v", r.Subscription, unsub)
	}
}

// DeregisterConsumer makes the worker deregister its consumer once every
// lease is released, and stop; by default it does not.
func TestFanOutDeregistersOnlyWhenAsked(t *testing.T) {
	for _, dereg := range []bool{false, true} {
		t.Run(fmt.Sprintf("deregister=%v", dereg), func(t *testing.T) {
			cfg := fanOutConfig()
			cfg.DeregisterConsumer = dereg
			u := newUnit(t, cfg)
			key := u.holding(shardKey(0), startSeq(), 1)
			u.runTo(time.Second)
			u.step(Input{Kind: InputShutdown})
			u.runTo(5 * time.Second)
			if !u.stopped {
				t.Fatal("not stopped")
			}
			if u.row(key).Owner != "" {
				t.Fatalf("lease not released: %v", u.row(key))
			}
			deregs := u.sentOf(OpDeregisterConsumer, "", 0, u.now)
			_, err := u.stream.DescribeConsumer(t.Context(), "s", "app")
			if dereg != (len(deregs) == 1) || dereg != (err != nil) {
				t.Fatalf("deregistrations %v, consumer afterwards: %v", deregs, err)
			}
		})
	}
}

// KPL aggregates read by fan-out are de-aggregated as GetRecords pages are,
// and a checkpoint inside an aggregate survives a handoff: the next owner
// subscribes AT the aggregate and delivers exactly the user records after
// the checkpoint.
func TestFanOutAggregates(t *testing.T) {
	for _, sub := range []int64{0, 2, 4} {
		t.Run(fmt.Sprint("sub_", sub), func(t *testing.T) {
			c := newCluster(t, 1, fanOutConfig())
			key := shardKey(0)
			c.stream.put(key, 1)
			c.stream.putData(key, aggregate(t, "x", 5))
			c.stream.put(key, 1)
			a := c.start("A")
			a.noCheckpoint = true
			c.runUntil(20*time.Second, "A delivers", func() bool { return len(a.recs[key]) == 7 })
			all := a.recs[key]
			if !all[1].Aggregated || all[3].SubSequence != 2 {
				t.Fatalf("A got %v: the aggregate was not de-aggregated", positions(all))
			}
			at := 1 + int(sub)
			cp := pos(all[at])
			c.step(a, Input{Kind: InputCheckpoint, Key: key, Checkpoint: cp, Token: 1})
			if len(a.cpResults) != 1 || a.cpResults[0].Err != nil || c.row(key).Checkpoint != cp {
				t.Fatalf("checkpoint %v: %+v, row %v", cp, a.cpResults, c.row(key))
			}
			b := c.start("B")
			b.noCheckpoint = true
			a.down = true // crash
			c.runUntil(30*time.Second, "B takes over", func() bool { return len(c.held("B")) == 1 })
			c.runUntil(10*time.Second, "B delivers", func() bool { return len(b.recs[key]) > 0 })
			c.run(2 * time.Second)
			if got, want := positions(b.recs[key]), positions(all[at+1:]); !slices.Equal(got, want) {
				t.Errorf("B delivered %v, want %v", got, want)
			}
		})
	}
}

// A SubscribeToShard refused with not found (the consumer was deregistered
// by a worker that shut down with DeregisterConsumer, say) for a shard the
// worker's latest listing does not show, because the shard is newer than
// the listing (a split's child), does not end the shard: only a listing
// taken after the refusal proves it gone. The worker subscribes again and
// delivers every record (swarm seed 45 with several streams, LATEST and
// DeregisterConsumer: SHARD_END written on an open child, its records lost).
func TestFanOutNotFoundIsNotShardEnd(t *testing.T) {
	u := newUnit(t, fanOutConfig())
	u.holding(shardKey(0), startSeq(), 1)
	k1 := shardKey(1)
	u.hold = func(c Call) bool { return c.Op == OpListShards } // the listing stays as it was
	u.stream.add(k1)
	u.stream.put(k1, 3)
	gone := true
	u.fault = func(c Call) (Result, bool) {
		if c.Op == OpSubscribe && c.Shard == k1 && gone {
			return Result{Err: fmt.Errorf("consumer arn:test:s/consumer/app: %w", ErrNotFound)}, true
		}
		return Result{}, false
	}
	u.put(Lease{Key: k1, Checkpoint: startSeq()})
	u.runTo(12 * time.Second)
	if !u.w.Acting(k1) && len(u.sentOf(OpSubscribe, k1, 0, u.now)) == 0 {
		t.Fatalf("the worker did not take %s and subscribe:\n%s", k1, u.dump())
	}
	if len(u.sentOf(OpSubscribe, k1, 0, u.now)) == 0 {
		t.Fatalf("no SubscribeToShard of %s", k1)
	}
	if row := u.row(k1); row.Checkpoint.IsShardEnd() {
		t.Fatalf("a not-found subscription of a shard the stale listing lacks ended it: %v", row.Checkpoint)
	}
	gone = false
	for _, c := range u.out {
		u.reply(c, u.apply(c))
	}
	u.hold = nil
	u.runTo(40 * time.Second)
	if row := u.row(k1); row.Checkpoint.IsShardEnd() {
		t.Fatalf("%s ended: %v", k1, row.Checkpoint)
	}
	if got, want := u.delivered(k1), seqsOf(u.stream.recs[k1]); !slices.Equal(got, want) {
		t.Fatalf("delivered %v of %s, want %v", got, k1, want)
	}
}

// A shard that really left the stream (its retention passed) is still
// ended once a listing taken after the refused subscription proves it
// gone: its child is listed and it is not.
func TestFanOutGoneShardEnds(t *testing.T) {
	u := newUnit(t, fanOutConfig())
	p := u.holding(shardKey(0), startSeq(), 1)
	u.stream.split(p, shardKey(1), shardKey(2))
	u.stream.expire(p)
	u.stream.end(u.stream.lastSub(), fmt.Errorf("gone: %w", ErrSubscriptionEnded))
	u.runTo(60 * time.Second)
	if len(u.traceOf(TraceShardEnded, p)) == 0 {
		t.Fatalf("a shard gone from the stream (child listed, itself not) was not ended:\n%s", u.dump())
	}
}
