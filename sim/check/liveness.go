package check

import (
	"sort"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// l1Checker checks liveness after healing (see CheckL1): how long each
// open shard went without an acting process from Heal+Bound on, how long
// each record put in [Heal+Bound, End-Bound] took to reach a processor,
// and the balance at the end.
//
// Per shard it keeps (in its keyState) whether it is open (created and
// not closed), its coverage, and the first record (in sequence order) of
// the window that reached no processor within Bound (late).
type l1Checker struct {
	o     *Options
	ten   *tenures
	puts  *putLogs
	keys  *keyTable
	live  map[int32]string // processes started and not stopped
	order []*keyState      // shards in creation order
}

// coverage follows one shard's stretches without an acting process: the
// sweep of the whole-history check over its tenures in start order,
// done as they start and end.
type coverage struct {
	openTenures int
	reach       time.Duration // covered up to here
	worst       time.Duration
	worstAt     time.Duration
}

type lateRecord struct {
	seq      Seq
	raw      string
	t        time.Duration
	received time.Duration
	seqNo    uint64
}

func newL1(o *Options, ts *tenures, pl *putLogs, keys *keyTable) *l1Checker {
	return &l1Checker{o: o, ten: ts, puts: pl, keys: keys, live: map[int32]string{}}
}

func (c *l1Checker) from() time.Duration { return c.o.Heal + c.o.Bound }

func (c *l1Checker) created(ks *keyState) {
	if !ks.open {
		c.order = append(c.order, ks)
	}
	ks.open = true
}

func (c *l1Checker) coverage(ks *keyState) *coverage {
	cv := ks.cover
	if cv == nil {
		from := c.from()
		cv = &coverage{reach: from, worstAt: from}
		ks.cover = cv
	}
	return cv
}

// started is a tenure starting: with none open on its key, the time since
// the key was last covered is a gap.
func (c *l1Checker) started(_ *keyTenures, t *tenure) {
	cv := c.coverage(t.kt.ks)
	if cv.openTenures == 0 && t.Start > cv.reach {
		if g := t.Start - cv.reach; g > cv.worst {
			cv.worst, cv.worstAt = g, cv.reach
		}
	}
	cv.openTenures++
}

func (c *l1Checker) closed(t *tenure) {
	cv := c.coverage(t.kt.ks)
	cv.openTenures--
	cv.reach = max(cv.reach, t.EndT)
}

func (c *l1Checker) inWindow(x *put) bool {
	return x.t >= c.from() && x.t <= c.o.End-c.o.Bound
}

// receivedPut is a record's first receipt.
func (c *l1Checker) receivedPut(p *shardPuts, x *put) {
	if c.inWindow(x) && x.received-x.t > c.o.Bound {
		c.lateOne(p.ks, x)
	}
}

// lostPut is a record forgotten without being received (trimmed).
func (c *l1Checker) lostPut(p *shardPuts, x *put) {
	if c.inWindow(x) && !x.notOwed {
		c.lateOne(p.ks, x)
	}
}

func (c *l1Checker) lateOne(ks *keyState, x *put) {
	if !ks.hasLate || x.seq.Compare(ks.late.seq) < 0 {
		ks.hasLate = true
		ks.late = lateRecord{seq: x.seq, raw: x.raw, t: x.t, received: x.received, seqNo: x.seqNo}
	}
}

func (c *l1Checker) finish(final []engine.Lease, finalKnown bool) []Violation {
	o := c.o
	if o.Heal <= 0 || o.Bound <= 0 || o.End-o.Heal < 2*o.Bound {
		return nil
	}
	if len(c.live) == 0 {
		return nil
	}
	var out []Violation
	add := func(v Violation) {
		if len(out) < o.max() {
			v.Invariant = L1
			out = append(out, v)
		}
	}
	// ownership: from Heal+Bound on, an open shard may go without an
	// acting process for at most Bound at a time (a handover in progress
	// at the end is not a failure)
	c.ten.eachOpen(func(t *tenure) {
		end := o.End
		if _, ok := c.live[t.Proc]; !ok {
			end = t.End
		}
		cv := c.coverage(t.kt.ks)
		cv.reach = max(cv.reach, end)
		cv.openTenures--
	})
	for _, ks := range c.order {
		if !ks.open {
			continue
		}
		key := ks.name
		cv := c.coverage(ks)
		worst, worstAt := cv.worst, cv.worstAt
		if g := o.End - cv.reach; g > worst {
			worst, worstAt = g, cv.reach
		}
		if worst > o.Bound {
			add(Violation{Key: key, From: worstAt, To: worstAt + worst,
				Detail: "open shard had no process acting on it for " + worst.String() + " after healing (bound " + o.Bound.String() + ")"})
		}
	}
	// progress
	for _, p := range c.puts.sorted() {
		for _, x := range p.kept() {
			if x.received < 0 && !x.notOwed && c.inWindow(&x) {
				c.lateOne(p.ks, &x)
			}
		}
	}
	// a late record is judged against the run's end (which may have come
	// earlier than the end it was first judged against: see SetEnd); a
	// shard's records are put in sequence order, so its first late one is
	// also its earliest
	inWindow := func(x *lateRecord) bool { return x.t >= c.from() && x.t <= o.End-o.Bound }
	for _, ks := range c.keys.sorted(func(ks *keyState) bool { return ks.hasLate && inWindow(&ks.late) }) {
		key, x := ks.name, ks.late
		d := "record " + seqName(x.raw, x.seq.sub) + " put at " + x.t.String() + " after healing "
		if x.received < 0 {
			d += "was never delivered"
		} else {
			d += "took " + (x.received - x.t).String() + " to reach a processor"
		}
		add(Violation{Key: key, From: x.t, To: x.t + o.Bound, Seqs: []uint64{x.seqNo}, Detail: d + " (bound " + o.Bound.String() + ")"})
	}
	if o.Balance && finalKnown {
		for _, v := range c.unbalanced(final) {
			add(v)
		}
	}
	return out
}

// unbalanced returns, for the table final, a violation for each live
// owner that holds more or fewer than its fair share of the unfinished
// leases the live owners hold, BalanceSlack aside (none without live
// processes).
func (c *l1Checker) unbalanced(final []engine.Lease) []Violation {
	o := c.o
	if len(c.live) == 0 {
		return nil
	}
	counts := map[string]int{}
	for _, owner := range c.live {
		counts[owner] = 0
	}
	n := 0
	for _, l := range final {
		if l.Checkpoint.Sequence == engine.ShardEnd || l.Owner == "" {
			continue
		}
		if _, ok := counts[l.Owner]; ok {
			counts[l.Owner]++
			n++
		}
	}
	w := len(counts)
	lo, hi := n/w-o.BalanceSlack, (n+w-1)/w+o.BalanceSlack
	owners := make([]string, 0, w)
	for k := range counts {
		owners = append(owners, k)
	}
	sort.Strings(owners)
	var out []Violation
	for _, ow := range owners {
		if c := counts[ow]; c < lo || c > hi {
			out = append(out, Violation{Invariant: L1, Workers: []string{ow}, From: o.Heal + o.Bound, To: o.End,
				Detail: "unbalanced at the end: " + ow + " holds " + itoa(c) + " of " + itoa(n) + " leases across " + itoa(w) + " live workers (allowed " + itoa(lo) + ".." + itoa(hi) + ")"})
		}
	}
	return out
}
