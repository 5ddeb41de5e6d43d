package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// actSpan is when one worker acted on one lease during one tenure: its
// first and last delivery or checkpoint write, as times and as positions in
// the trace. The cluster runs one step at a time, so the trace order is the
// real order of events that share a time.
type actSpan struct {
	owner             string
	first, last       time.Duration
	firstIdx, lastIdx int
	acts              int
}

func (s *actSpan) act(e TraceEvent, idx int) {
	if s.acts == 0 {
		s.first, s.firstIdx = e.Mono, idx
	}
	s.last, s.lastIdx = e.Mono, idx
	s.acts++
}

// actSpans returns, per lease key, the spans in which each worker acted
// on it, from the trace: a tenure runs from an acquisition to the loss or
// release that ends it, and its span covers its deliveries and checkpoint
// and shard-end writes.
func actSpans(trace []TraceEvent) map[string][]actSpan {
	type tk struct{ owner, key string }
	open := map[tk]*actSpan{}
	out := map[string][]actSpan{}
	closeSpan := func(k tk) {
		if s := open[k]; s != nil {
			if s.acts > 0 {
				out[k.key] = append(out[k.key], *s)
			}
			delete(open, k)
		}
	}
	for i, e := range trace {
		k := tk{e.Owner, e.Key}
		switch e.Kind {
		case TraceLeaseAcquired:
			closeSpan(k)
			open[k] = &actSpan{owner: e.Owner}
		case TraceDelivered, TraceCheckpointWritten, TraceShardEnded:
			s := open[k]
			if s == nil {
				s = &actSpan{owner: e.Owner}
				open[k] = s
			}
			s.act(e, i)
		case TraceCallSent:
			if e.Reason == "checkpoint" || e.Reason == "shard-end" {
				if s := open[k]; s != nil {
					s.act(e, i)
				}
			}
		case TraceLeaseLost, TraceLeaseReleased:
			closeSpan(k)
		}
	}
	keys := make([]tk, 0, len(open))
	for k := range open {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tk) int {
		if a.key != b.key {
			return compareStrings(a.key, b.key)
		}
		return compareStrings(a.owner, b.owner)
	})
	for _, k := range keys {
		closeSpan(k)
	}
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkSingleOwner fails t if two different workers acted on the same
// lease at overlapping times (S1). All workers of a cluster read the same
// clock, so their trace times compare. It returns the number of spans.
func checkSingleOwner(t *testing.T, trace []TraceEvent) int {
	t.Helper()
	n := 0
	spans := actSpans(trace)
	keys := make([]string, 0, len(spans))
	for k := range spans {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		ss := spans[key]
		n += len(ss)
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				a, b := ss[i], ss[j]
				if a.owner != b.owner && a.firstIdx <= b.lastIdx && b.firstIdx <= a.lastIdx {
					t.Errorf("S1: %s acted on %s in [%v, %v] and %s in [%v, %v]", a.owner, key, a.first, a.last, b.owner, b.first, b.last)
				}
			}
		}
	}
	return n
}

func TestCheckSingleOwnerDetectsOverlap(t *testing.T) {
	ev := func(kind TraceKind, at time.Duration, owner string) TraceEvent {
		return TraceEvent{Kind: kind, Mono: at, Owner: owner, Key: "k"}
	}
	// Positions in the trace decide between events of the same time.
	sameTime := []TraceEvent{
		ev(TraceLeaseAcquired, 0, "A"), ev(TraceDelivered, 5, "A"), ev(TraceLeaseReleased, 5, "A"),
		ev(TraceLeaseAcquired, 5, "B"), ev(TraceDelivered, 5, "B"),
	}
	if n := checkSingleOwner(t, sameTime); n != 2 {
		t.Errorf("%d spans, want 2", n)
	}
	ft2 := &testing.T{}
	checkSingleOwner(ft2, []TraceEvent{
		ev(TraceLeaseAcquired, 0, "A"), ev(TraceLeaseAcquired, 5, "B"), ev(TraceDelivered, 5, "B"),
		ev(TraceDelivered, 5, "A"), ev(TraceDelivered, 5, "B"),
	})
	if !ft2.Failed() {
		t.Errorf("interleaved acts at one time not reported")
	}
	overlapping := []TraceEvent{
		ev(TraceLeaseAcquired, 0, "A"), ev(TraceDelivered, 1, "A"),
		ev(TraceLeaseAcquired, 2, "B"), ev(TraceDelivered, 3, "B"),
		ev(TraceDelivered, 4, "A"),
	}
	ft := &testing.T{}
	checkSingleOwner(ft, overlapping)
	if !ft.Failed() {
		t.Errorf("overlap not reported")
	}
	spans := actSpans(overlapping)["k"]
	if len(spans) != 2 || spans[0].first != 1 || spans[0].last != 4 || spans[1].first != 3 {
		t.Fatalf("spans %+v", spans)
	}
	sequential := []TraceEvent{
		ev(TraceLeaseAcquired, 0, "A"), ev(TraceDelivered, 1, "A"), ev(TraceLeaseLost, 2, "A"),
		ev(TraceLeaseAcquired, 2, "B"), ev(TraceDelivered, 3, "B"),
		ev(TraceLeaseAcquired, 5, "A"), ev(TraceDelivered, 6, "A"),
	}
	if n := checkSingleOwner(t, sequential); n != 3 {
		t.Errorf("%d spans, want 3", n)
	}
}

// counts returns how many leases each live worker holds.
func (c *cluster) counts() []int {
	var out []int
	for _, tw := range c.workers {
		if !tw.down && !tw.stopped {
			out = append(out, len(tw.w.Held()))
		}
	}
	return out
}

func balanced(counts []int, shards int) bool {
	sum := 0
	for _, n := range counts {
		sum += n
	}
	return sum == shards && slices.Max(counts)-slices.Min(counts) <= 1
}

// feed puts one record on every shard.
func (c *cluster) feed(shards int) {
	for i := 0; i < shards; i++ {
		c.stream.put(shardKey(i), 1)
	}
}

// Balancing converges to within ±1 of shards/workers within a bound, and
// then stays put: no steal, no handover, over a long run. No two workers
// act on a shard at once throughout.
func TestBalanceConvergesAndStays(t *testing.T) {
	cases := []struct {
		shards, workers int
		staggered       bool          // workers join one by one, after the first took everything
		bound           time.Duration // from the last join to balance
	}{
		{10, 3, false, 4 * ld},
		{10, 3, true, 4 * ld},
		{7, 2, true, 4 * ld},
		{12, 4, false, 4 * ld},
		{16, 4, true, 4 * ld},
		{3, 5, false, 4 * ld},
		{1, 2, true, 4 * ld},
		// one worker took 200 leases before nine others joined: given out
		// a few in flight at a time, not one a round
		{200, 10, true, 30 * ld},
	}
	for _, mode := range []string{AssignmentScan, AssignmentAssigner} {
		for _, tc := range cases {
			name := fmt.Sprintf("%s/%d_shards_%d_workers", mode, tc.shards, tc.workers)
			if tc.staggered {
				name += "_staggered"
			}
			t.Run(name, func(t *testing.T) {
				c := newCluster(t, tc.shards, Config{Assignment: mode})
				c.feed(tc.shards)
				ids := make([]string, tc.workers)
				for i := range ids {
					ids[i] = fmt.Sprintf("W%d", i)
				}
				if tc.staggered {
					c.start(ids[0])
					c.runUntil(30*time.Second, "the first worker takes all", func() bool { return len(c.held(ids[0])) == tc.shards })
					for _, id := range ids[1:] {
						c.start(id)
						c.run(2 * time.Second)
						c.feed(tc.shards)
					}
				} else {
					for _, id := range ids {
						c.start(id)
					}
				}
				joined := c.now
				for !balanced(c.counts(), tc.shards) {
					if c.now-joined > tc.bound {
						t.Fatalf("not balanced %v after the last join: %v\n%s", tc.bound, c.counts(), c.table())
					}
					c.run(time.Second)
					c.feed(tc.shards)
				}
				t.Logf("balanced after %v: %v", c.now-joined, c.counts())
				before := map[string][]string{}
				for _, id := range ids {
					before[id] = c.held(id)
				}
				acquired := len(c.traceOf(TraceLeaseAcquired, "", ""))
				settled := c.now
				for i := 0; i < 60; i++ {
					c.run(10 * time.Second)
					c.feed(tc.shards)
				}
				if n := len(c.traceOf(TraceLeaseAcquired, "", "")); n != acquired {
					for _, e := range c.traceOf(TraceLeaseAcquired, "", "") {
						if e.Mono > settled {
							t.Errorf("after balance: %v", e)
						}
					}
				}
				for _, id := range ids {
					if got := c.held(id); !slices.Equal(got, before[id]) {
						t.Errorf("%s held %v, then %v", id, before[id], got)
					}
				}
				// Every lease lost was stolen (no lease expired under a live
				// worker).
				for _, e := range c.traceOf(TraceLeaseLost, "", "") {
					if !strings.HasPrefix(e.Reason, "condition failed") {
						t.Errorf("lost: %v", e)
					}
				}
				if n, m := len(c.traceOf(TraceLeaseLost, "", "")), countReason(c.traceOf(TraceLeaseAcquired, "", ""), "stolen"); n != m {
					t.Errorf("%d leases lost, %d stolen", n, m)
				}
				checkSingleOwner(t, c.trace)
			})
		}
	}
}

// One balancing round steals at most MaxLeasesToStealAtOnce leases, only
// when no lease is free, only from the most loaded worker, and never leaves
// the victim with fewer than the thief.
func TestStealBound(t *testing.T) {
	cases := []struct {
		name     string
		maxSteal int
		owned    map[string]int // live leases per other owner
		free     int
		want     int    // takes in the first round
		victim   string // owner of every lease taken ("" for free ones)
	}{
		{"one_at_a_time", 1, map[string]int{"X": 10}, 0, 1, "X"},
		{"three_at_once", 3, map[string]int{"X": 10}, 0, 3, "X"},
		{"never_past_half", 10, map[string]int{"X": 10}, 0, 5, "X"},
		{"disabled", -1, map[string]int{"X": 10}, 0, 0, ""},
		{"never_the_only_lease", 1, map[string]int{"X": 1}, 0, 0, ""},
		{"two_leases_one_each", 1, map[string]int{"X": 2}, 0, 1, "X"},
		{"free_before_stealing", 3, map[string]int{"X": 6}, 1, 1, ""},
		{"most_loaded_victim", 2, map[string]int{"X": 3, "Y": 7}, 0, 2, "Y"},
		{"balanced_within_one", 3, map[string]int{"X": 1, "Y": 1}, 0, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{MaxLeasesToStealAtOnce: tc.maxSteal})
			i := 0
			for _, owner := range []string{"X", "Y"} {
				for j := 0; j < tc.owned[owner]; j++ {
					u.put(Lease{Key: shardKey(i), Owner: owner, Counter: 1, Checkpoint: startSeq()})
					i++
				}
			}
			for j := 0; j < tc.free; j++ {
				u.put(Lease{Key: shardKey(i), Checkpoint: startSeq()})
				i++
			}
			u.tick() // the first scan
			got := u.takes()
			if len(got) != tc.want {
				t.Fatalf("%d takes, want %d: %v", len(got), tc.want, got)
			}
			for _, g := range got {
				if g.c.Expect.Owner != tc.victim {
					t.Errorf("took %v from %q, want from %q", g.c.Lease.Key, g.c.Expect.Owner, tc.victim)
				}
				if tc.victim != "" && g.reason != "stolen" {
					t.Errorf("reason %q", g.reason)
				}
			}
		})
	}
}

// A stolen lease: the thief acts only after its own view of the victim's
// version has stood still for LeaseDuration, the victim stops at its next
// renew, which fails, and the two never act at once.
func TestStolenLeaseHandover(t *testing.T) {
	const shards = 6
	c := newCluster(t, shards, Config{MaxLeasesToStealAtOnce: 2})
	c.feed(shards)
	a := c.start("A")
	c.runUntil(20*time.Second, "A holds all", func() bool { return len(c.held("A")) == shards })
	// Record when B first saw each version of each row.
	type version struct {
		key, owner string
		counter    int64
	}
	firstSeen := map[version]time.Duration{}
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id != "B" || call.Op != OpListLeases {
			return Result{}, false
		}
		r := Execute(t.Context(), c.store, c.stream, call)
		for _, l := range r.Listing.Leases {
			v := version{l.Key, l.Owner, l.Counter}
			if _, ok := firstSeen[v]; !ok {
				firstSeen[v] = c.now
			}
		}
		return r, true
	}
	b := c.start("B")
	for i := 0; i < 60 && len(c.held("B")) < shards/2; i++ {
		c.run(time.Second)
		c.feed(shards)
	}
	c.run(20 * time.Second)
	c.feed(shards)
	c.run(5 * time.Second)
	if len(c.held("A")) != shards/2 || len(c.held("B")) != shards/2 {
		t.Fatalf("held A %v B %v", c.held("A"), c.held("B"))
	}
	stolen := c.traceOf(TraceLeaseAcquired, "B", "")
	if len(stolen) != shards/2 {
		t.Fatalf("B acquired %v", stolen)
	}
	perRound := map[time.Duration]int{}
	for _, acq := range stolen {
		perRound[acq.Mono]++
		if acq.Reason != "stolen" || acq.Previous != "A" {
			t.Errorf("acquisition %v", acq)
		}
		seen, ok := firstSeen[version{acq.Key, "A", acq.Counter - 1}]
		if !ok {
			t.Fatalf("B took %s at counter %d without having seen it", acq.Key, acq.Counter-1)
		}
		delivered := c.traceOf(TraceDelivered, "B", acq.Key)
		if len(delivered) == 0 {
			t.Fatalf("B never delivered %s", acq.Key)
		}
		if delivered[0].Mono < seen+ld {
			t.Errorf("B delivered %s at %v, before %v = first saw A's version %d (%v) + LeaseDuration",
				acq.Key, delivered[0].Mono, seen+ld, acq.Counter-1, seen)
		}
		lost := c.traceOf(TraceLeaseLost, "A", acq.Key)
		if len(lost) != 1 || lost[0].Mono < acq.Mono || lost[0].Mono > acq.Mono+ri+time.Second {
			t.Errorf("A's loss of %s: %v, want one at its next renew after %v", acq.Key, lost, acq.Mono)
			continue
		}
		for _, d := range c.traceOf(TraceDelivered, "A", acq.Key) {
			if d.Mono > lost[0].Mono {
				t.Errorf("A delivered %s at %v after losing it", acq.Key, d.Mono)
			}
		}
		if len(a.lost) == 0 {
			t.Errorf("A's processor not told")
		}
	}
	for at, n := range perRound {
		if n > 2 {
			t.Errorf("%d leases stolen at %v, more than MaxLeasesToStealAtOnce", n, at)
		}
	}
	if len(perRound) < 2 {
		t.Errorf("steal rounds %v: want the cap of 2 to split the 3 steals", perRound)
	}
	if totalGot(b) == 0 {
		t.Errorf("B delivered nothing")
	}
	if checkSingleOwner(t, c.trace) < shards+shards/2 {
		t.Errorf("too few acting spans to check S1")
	}
}

func countReason(es []TraceEvent, reason string) int {
	n := 0
	for _, e := range es {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// An assigner that balances throughput sums the loads of its members in
// the order it meets the rows (the order it interned their keys, which
// differs between workers and runs that observed them differently): the
// sums must not depend on that order, or two runs of one seed decide
// differently (swarm seed 11 with the combination stale-resync and
// BalanceBy throughput: a handoff to w1 in one run, to w0 in the next).
// Each load is a whole number of thousandths of a KB per second, added
// exactly.
func TestThroughputLoadsIndependentOfOrder(t *testing.T) {
	loadsIn := func(order func(i int) int) map[string]float64 {
		u := newUnit(t, Config{Assignment: AssignmentAssigner, BalanceBy: BalanceThroughput})
		for n := 0; n < 40; n++ {
			i := order(n)
			u.w.observeRow(Lease{Key: shardKey(i), Owner: []string{"a", "b"}[i%2], Counter: 1, ThroughputKBps: 0.1*float64(i) + 0.07})
		}
		return u.w.loads()
	}
	first := loadsIn(func(n int) int { return n })
	if len(first) != 2 {
		t.Fatalf("loads %v: want the loads of a and b", first)
	}
	for k := 1; k < 40; k++ {
		got := loadsIn(func(n int) int { return (n*7 + k) % 40 }) // 7 is prime to 40: every row once
		for m, v := range first {
			if got[m] != v {
				t.Fatalf("the load of %s is %v over the rows in one order and %v in another", m, v, got[m])
			}
		}
	}
}

// The assigner counts an assignment it has in flight for its receiver
// only while its latest read of the row shows the version the write
// expects: an assignment sent from a scan whose reply came late, which a
// fresher scan shows bound to fail (its holder renewed since), counts for
// the holder. Counted for the receiver, it made the next round move a
// lease the wrong way, and back (swarm seed 5925 with -renewal session, B1).
func TestDoomedAssignmentCountsForTheHolder(t *testing.T) {
	c := start3(t)
	asg := c.worker(c.assignerOf()).w
	var key, holder, to string
	for _, id := range []string{"A", "B", "C"} {
		if held := c.held(id); id != c.assignerOf() && len(held) > 0 && key == "" {
			key, holder = held[0], id
		}
	}
	for _, id := range []string{"A", "B", "C"} {
		if id != holder && to == "" {
			to = id
		}
	}
	rs := asg.rows.get(key)
	if rs == nil || !rs.observed || rs.obs.row.Owner != holder {
		t.Fatalf("the assigner's view of %s: %+v, want held by %s", key, rs, holder)
	}
	before := asg.loads()
	row := rs.obs.row.Clone()
	row.Owner, row.Pending = "", to
	// an assignment sent from an older read: it expects the version before
	// the one the assigner has seen since
	rs.write = &write{kind: wAssign, key: key, rs: rs, expect: Expect{Owner: holder, Counter: rs.obs.row.Counter - 1}, row: row}
	after := asg.loads()
	rs.write = nil
	if after[holder] != before[holder] || after[to] != before[to] {
		t.Errorf("loads with a doomed assignment of %s (held by %s) to %s in flight: %v; want them unchanged: %v", key, holder, to, after, before)
	}
	// one that may land counts for its receiver
	rs.write = &write{kind: wAssign, key: key, rs: rs, expect: ExpectOf(rs.obs.row), row: row}
	live := asg.loads()
	rs.write = nil
	if live[holder] != before[holder]-1 || live[to] != before[to]+1 {
		t.Errorf("loads with an assignment of %s to %s in flight that may land: %v; want one lease moved from %s: %v", key, to, live, holder, before)
	}
}

// With MaxLeasesForWorker, the assigner counts against a member's cap the
// leases on their way to it: one of its own it hands over to the member,
// and a handoff asked of another holder. Uncounted, the member was given
// more than it may take and declined the one over its cap until its own
// handoffs were done (swarm seed 3795 with -renewal session, T2).
func TestCapCountsHandoffsOnTheirWay(t *testing.T) {
	c := assigned(t, 6, Config{MaxLeasesForWorker: 4})
	for i := 0; i < 6; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.start("B")
	c.runUntil(time.Minute, "3-3", func() bool { return len(c.held("A")) == 3 && len(c.held("B")) == 3 })
	c.run(5 * time.Second)
	asgID := c.assignerOf()
	other := "A"
	if asgID == "A" {
		other = "B"
	}
	w := c.worker(asgID).w
	if w.full(other) {
		t.Fatalf("%s holds 3 of its cap of 4 and is full in the assigner's view", other)
	}
	// the assigner hands one of its own leases over to the other member
	h := w.holdingOf(c.held(asgID)[0])
	h.handing, h.handoffTo = true, other
	full := w.full(other)
	h.handing, h.handoffTo = false, ""
	if !full {
		t.Errorf("%s holds 3 and one of the assigner's leases is on its way to it: want it full (cap 4)", other)
	}
	// a handoff asked of another holder: a row that names it in handoffTo
	rs := w.rows.get(c.held(asgID)[1])
	saved := rs.obs.row
	rs.obs.row.Owner, rs.obs.row.HandoffTo = "Z", other
	full = w.full(other)
	rs.obs.row = saved
	if !full {
		t.Errorf("%s holds 3 and a handoff to it is asked of another holder: want it full (cap 4)", other)
	}
}
