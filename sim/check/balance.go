package check

import (
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// B1 is the balance invariant: balancing does not churn. In a steady
// fleet (no worker started or stopped, no fault, no lease created, ended,
// lost or handed out anew, the same assigner) no lease moves twice for
// balance within engine.MoveQuiet, and no member both receives and gives
// leases for balance: a move never takes a receiver above the fair share
// nor a source below it, so a move made is never undone while the fleet
// stays as it is. The same holds for the steals of workers that take
// leases themselves (a thief steals only from a worker holding two more),
// as far as each thief can know: several thieves that steal at once may
// leave two workers tied at the most, and the next thief steals from
// either, from one that has just stolen too. So a worker that steals and
// is then stolen from breaks B1 only if a steal took it past the fair
// share of the leases held (above it, or below it), or if the lease flow
// between two workers reverses (an oscillation).
const B1 = "B1"

// b1Checker checks B1 (with Options.Timing). A fleet is steady from the
// moment its last disturbance happened plus Timing.settle (the time the
// assigner's member list may still change after it); the moves it
// counts are the handoff requests the assigner wrote (and its own leases
// it hands over), and the steals.
type b1Checker struct {
	o      Options
	tm     *Timing
	keys   *keyTable
	settle time.Duration
	// quiet is the time of the latest disturbance
	quiet time.Duration
	asg   int32 // the assigner row's holder (-1: none)
	// gave and got: when each owner last gave or received a lease for
	// balance
	gave, got map[string]time.Duration
	// steals: the leases each owner holds (true holdings, from the
	// trace), the live processes' owners, whether the owner's last
	// stolen lease took it above the fair share, and when the last steal
	// from one owner to another was
	held    map[string]int
	live    map[int32]string
	overGot map[string]bool
	stole   map[[2]string]time.Duration
	out     []Violation
}

// bkey is what B1 keeps of one key.
type bkey struct {
	moved    time.Duration // when its last completed balance move was requested (0: none)
	req      time.Duration // a balance move requested and not completed (0: none)
	handedTo string        // released to this owner by a handoff: its take completes the move
	stolen   bool          // taken by a steal: its victim's loss is part of the move
	holder   string        // who holds it (true holdings: lease acquired, not lost, released or ended since)
}

func newB1(o Options, keys *keyTable) *b1Checker {
	tm := o.Timing
	settle := tm.settle()
	if tm.Scan {
		// a worker that takes leases itself counts an owner until its
		// leases expire in its view and it has scanned again
		settle = max(settle, tm.wait(tm.LeaseDuration)+2*tm.jit(tm.TakeInterval)+time.Second)
	}
	return &b1Checker{o: o, tm: tm, keys: keys, settle: settle, asg: -1, gave: map[string]time.Duration{}, got: map[string]time.Duration{},
		held: map[string]int{}, live: map[int32]string{}, overGot: map[string]bool{}, stole: map[[2]string]time.Duration{}}
}

func (c *b1Checker) disturb(t time.Duration) { c.quiet = max(c.quiet, t) }

// steady reports whether the fleet was steady at t.
func (c *b1Checker) steady(t time.Duration) bool { return t >= c.quiet+c.settle }

func (c *b1Checker) key(k string) *bkey {
	ks := c.keys.get(k)
	if ks.bk == nil {
		ks.bk = &bkey{}
	}
	return ks.bk
}

// hold records that owner now holds key's lease ("": nobody).
func (c *b1Checker) hold(bk *bkey, owner string) {
	if bk.holder != "" {
		c.held[bk.holder]--
	}
	bk.holder = owner
	if owner != "" {
		c.held[owner]++
	}
}

// share returns the fair share of the leases held among the live
// processes' owners: floor and ceiling.
func (c *b1Checker) share() (lo, hi int) {
	members := map[string]bool{}
	for _, o := range c.live {
		members[o] = true
	}
	n := 0
	for _, k := range c.held {
		n += k
	}
	if len(members) == 0 {
		return 0, n
	}
	return n / len(members), (n + len(members) - 1) / len(members)
}

func (c *b1Checker) observe(r *trace.Record) {
	switch r.Kind {
	case trace.LeaseLost, trace.LeaseReleased, trace.ShardEnded, trace.LeaseDeleted:
		if r.Key != engine.AssignerKey && r.Key != "" {
			if bk := c.key(r.Key); bk.holder == r.Owner {
				c.hold(bk, "")
			}
		}
	}
	switch r.Kind {
	case trace.KindProcStart:
		c.live[r.Proc] = r.Owner
	case trace.KindProcStop:
		delete(c.live, r.Proc)
	}
	switch r.Kind {
	case trace.KindProcStart, trace.KindProcStop, trace.LeaseCreated, trace.ShardEnded, trace.LeaseDeleted, trace.Kind(engine.TraceModeFallback):
		c.disturb(r.T)
		if r.Kind == trace.KindProcStop && r.Proc == c.asg {
			c.asg = -1
		}
	case trace.KindFault:
		t := r.T
		if strings.Contains(r.Reason, "pause") {
			t += pauseFor(r.Reason)
		}
		c.disturb(t)
	case trace.KindReply:
		if pathOp(r.Op) && (r.Fault != "" || failedOutcome(r.Outcome)) {
			c.disturb(r.T)
		}
	case trace.LeaseAcquired:
		if r.Key == engine.AssignerKey {
			c.asg = r.Proc
			c.disturb(r.T)
			return
		}
		bk := c.key(r.Key)
		switch {
		case r.Reason == "assigned" && bk.handedTo != "" && bk.handedTo == r.Owner:
			bk.moved, bk.req, bk.handedTo = bk.req, 0, "" // the move completed
		case r.Reason == "stolen" && r.Previous != "" && r.Previous != r.Owner:
			bk.stolen = true
			c.move(r, r.Previous, r.Owner, false)
			_, hi := c.share()
			c.overGot[r.Owner] = c.held[r.Owner]+1 > hi // counting the lease it takes
			c.stole[[2]string{r.Previous, r.Owner}] = r.T
		default:
			bk.handedTo, bk.req = "", 0
			c.disturb(r.T)
		}
		c.hold(bk, r.Owner)
	case trace.LeaseReleased:
		if r.Key == engine.AssignerKey {
			c.disturb(r.T)
			return
		}
		if to := HandedTo(r.Reason); to != "" {
			c.key(r.Key).handedTo = to
			return
		}
		c.disturb(r.T)
	case trace.LeaseLost:
		if r.Key != engine.AssignerKey {
			if bk := c.key(r.Key); bk.stolen {
				bk.stolen = false // its thief took it
				return
			}
		}
		c.disturb(r.T)
	case trace.Assigned:
		if to, ok := strings.CutPrefix(r.Reason, "handoff to "); ok {
			c.move(r, r.Previous, to, true)
			return
		}
		c.disturb(r.T) // an assignment anew, or a cancelled request
	case trace.HandingOver:
		if r.Proc == c.asg && r.Proc >= 0 {
			// the assigner hands one of its own leases over: a move of
			// its own making
			to, _ := strings.CutPrefix(r.Reason, "to ")
			c.move(r, r.Owner, to, true)
		}
	}
}

// move is a balance move of r.Key from owner from to owner to, requested
// at r.T (byAssigner: a handoff the assigner asked for, not a steal).
func (c *b1Checker) move(r *trace.Record, from, to string, byAssigner bool) {
	bk := c.key(r.Key)
	start := c.quiet + c.settle
	defer func() {
		c.gave[from], c.got[to] = r.T, r.T
		if byAssigner {
			bk.req = r.T
		}
	}()
	if !c.steady(r.T) || len(c.out) >= c.o.max() {
		return
	}
	v := Violation{Invariant: B1, Key: r.Key, Workers: []string{from, to}, To: r.T, Seqs: []uint64{r.Seq}}
	quiet := time.Duration(float64(engine.MoveQuiet)/(1+c.tm.Drift)) - time.Second
	switch {
	case byAssigner && bk.moved > 0 && bk.moved >= start && r.T-bk.moved < quiet:
		v.From = bk.moved
		v.Detail = "in a steady fleet the lease moves again for balance " + (r.T - bk.moved).String() + " after its last move (to " + to + "), within " + engine.MoveQuiet.String()
	case !byAssigner && c.stole[[2]string{to, from}] >= start && c.stole[[2]string{to, from}] > 0:
		v.From = c.stole[[2]string{to, from}]
		v.Detail = "in a steady fleet " + to + " steals a lease back from " + from + ", which stole one from it at " + v.From.String() + ": the steals oscillate"
	case !byAssigner && c.got[from] >= start && c.got[from] > 0 && c.stealPast(from):
		v.From = c.got[from]
		v.Detail = "in a steady fleet " + to + " steals a lease from " + from + ", which stole one at " + c.got[from].String() + ": one of the steals took " + from + " past the fair share"
	case byAssigner && c.tm.BalanceByCount && c.got[from] >= start && c.got[from] > 0:
		v.From = c.got[from]
		v.Detail = "in a steady fleet " + from + " gives a lease for balance (to " + to + ") after it received one at " + c.got[from].String() + ": a move that is undone took a member past the fair share"
	case !byAssigner && c.gave[to] >= start && c.gave[to] > 0 && c.held[to]+1 > c.ceil():
		v.From = c.gave[to]
		v.Detail = "in a steady fleet " + to + " steals a lease from " + from + " after one was stolen from it at " + c.gave[to].String() + ", past the fair share"
	case byAssigner && c.tm.BalanceByCount && c.gave[to] >= start && c.gave[to] > 0:
		v.From = c.gave[to]
		v.Detail = "in a steady fleet " + to + " receives a lease for balance (from " + from + ") after it gave one at " + c.gave[to].String() + ": a move that is undone took a member past the fair share"
	default:
		return
	}
	c.out = append(c.out, v)
}

// stealPast reports whether the steal being made from owner from takes it
// below the fair share, or its own last steal took it above.
func (c *b1Checker) stealPast(from string) bool {
	lo, _ := c.share()
	return c.overGot[from] || c.held[from]-1 < lo
}

func (c *b1Checker) ceil() int {
	_, hi := c.share()
	return hi
}
