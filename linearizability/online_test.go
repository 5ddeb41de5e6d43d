package linearizability_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	lin "github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/trace"
)

// small is a call of a random one-key history: what it did and when.
type small struct {
	op        engine.Op // OpCreateLease, OpUpdateLease, OpDeleteLease, OpGetLease
	call, ret int64
	exp       engine.Expect
	owner     string // the row written, or read
	counter   int64
	found     bool   // a read found a row
	outcome   string // writes: ok, condition-failed, unknown
	unordered bool   // (test) a perturbed outcome
	applied   bool   // (generation) the write applied
	appliedAt int64
}

var smallRows = []struct {
	owner   string
	counter int64
}{{"", 1}, {"w1", 2}, {"w2", 2}, {"w1", 3}}

// genSmall draws a history of n calls on one key, executed for real
// against one register at a moment inside each call's window (so it is
// linearizable), then, with perturb, one outcome changed (so it may not
// be).
func genSmall(r *rand.Rand, n int, perturb bool) []small {
	h := make([]small, n)
	for i := range h {
		c := &h[i]
		c.call = int64(r.IntN(120))
		c.ret = c.call + 1 + int64(r.IntN(30))
		c.appliedAt = c.call + int64(r.IntN(int(c.ret-c.call)+1))
		switch r.IntN(5) {
		case 0:
			c.op = engine.OpCreateLease
		case 1:
			c.op = engine.OpDeleteLease
		case 2, 3:
			c.op = engine.OpUpdateLease
		default:
			c.op = engine.OpGetLease
		}
		row := smallRows[r.IntN(len(smallRows))]
		c.owner, c.counter = row.owner, row.counter
		if c.op != engine.OpCreateLease {
			e := smallRows[r.IntN(len(smallRows))]
			c.exp = engine.Expect{Owner: e.owner, Counter: e.counter}
		}
	}
	// execute in apply order
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return h[order[a]].appliedAt < h[order[b]].appliedAt })
	present, owner, counter := false, "", int64(0)
	for _, i := range order {
		c := &h[i]
		switch c.op {
		case engine.OpGetLease:
			c.found, c.owner, c.counter = present, owner, counter
			continue
		case engine.OpCreateLease:
			c.applied = !present
		default:
			c.applied = present && owner == c.exp.Owner && counter == c.exp.Counter
		}
		c.outcome = "condition-failed"
		if c.applied {
			c.outcome = "ok"
			if c.op == engine.OpDeleteLease {
				present = false
			} else {
				present, owner, counter = true, c.owner, c.counter
			}
		}
		if r.IntN(5) == 0 {
			c.outcome = "unknown" // its reply was lost
		}
	}
	if perturb {
		c := &h[r.IntN(n)]
		c.unordered = true
		switch {
		case c.op == engine.OpGetLease && c.found:
			row := smallRows[r.IntN(len(smallRows))]
			c.owner, c.counter = row.owner, row.counter
		case c.op == engine.OpGetLease:
			c.found = true
		case c.outcome == "ok":
			c.outcome = "condition-failed"
		default:
			c.outcome = "ok"
		}
	}
	return h
}

// records writes h as the simulator would: a send and a reply for each
// write (a timeout and a call-end for one of unknown outcome), a reply for
// each read, in time order.
func records(h []small) []trace.Record {
	var recs []trace.Record
	cp := engine.SequenceCheckpoint("100")
	for i, c := range h {
		base := trace.Record{Proc: int32(i), Call: 1, Op: c.op, Key: "k", Sent: time.Duration(c.call)}
		if c.op == engine.OpGetLease {
			r := base
			r.Kind, r.T, r.Outcome = trace.KindReply, time.Duration(c.ret), trace.OutcomeNotFound
			if c.found {
				r.Outcome, r.RowOwner, r.Counter, r.Checkpoint = trace.OutcomeOK, c.owner, c.counter, cp
			}
			recs = append(recs, r)
			continue
		}
		s := base
		s.Kind, s.T, s.ExpOwner, s.ExpCounter = trace.KindSend, time.Duration(c.call), c.exp.Owner, c.exp.Counter
		if c.op != engine.OpDeleteLease {
			s.RowOwner, s.Counter, s.Checkpoint = c.owner, c.counter, cp
		}
		recs = append(recs, s)
		r := base
		r.Kind, r.T, r.Outcome = trace.KindReply, time.Duration(c.ret), c.outcome
		if c.outcome == "unknown" {
			r.Outcome = trace.OutcomeTimeout
			e := base
			e.Kind, e.T = trace.KindCallEnd, time.Duration(c.ret)
			recs = append(recs, r, e)
			continue
		}
		recs = append(recs, r)
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].T < recs[j].T })
	for i := range recs {
		recs[i].Seq = uint64(i + 1)
	}
	return recs
}

// bruteForce reports whether h is linearizable when a write of unknown
// outcome applies or not anywhere within its window: every order of the
// calls that respects real time is tried.
func bruteForce(h []small) bool {
	type st struct {
		present bool
		owner   string
		counter int64
	}
	n := len(h)
	var try func(done uint64, s st) bool
	memo := map[[2]any]bool{}
	try = func(done uint64, s st) bool {
		if done == uint64(1)<<n-1 {
			return true
		}
		k := [2]any{done, s}
		if v, ok := memo[k]; ok {
			return v
		}
		res := false
		for i := 0; i < n && !res; i++ {
			if done&(1<<i) != 0 {
				continue
			}
			ready := true
			for j := 0; j < n; j++ {
				if done&(1<<j) == 0 && j != i && h[j].ret < h[i].call {
					ready = false
				}
			}
			if !ready {
				continue
			}
			c := h[i]
			next := done | 1<<i
			if c.op == engine.OpGetLease {
				if s.present == c.found && (!c.found || (s.owner == c.owner && s.counter == c.counter)) {
					res = try(next, s)
				}
				continue
			}
			cond := !s.present
			if c.op != engine.OpCreateLease {
				cond = s.present && s.owner == c.exp.Owner && s.counter == c.exp.Counter
			}
			after := st{}
			if c.op != engine.OpDeleteLease {
				after = st{true, c.owner, c.counter}
			}
			switch c.outcome {
			case "ok":
				res = cond && try(next, after)
			case "condition-failed":
				res = !cond && try(next, s)
			default:
				res = try(next, s) || (cond && try(next, after))
			}
		}
		memo[k] = res
		return res
	}
	return try(0, st{})
}

func onlineVerdict(recs []trace.Record, lag time.Duration) lin.OnlineResult {
	o := lin.NewOnline(lin.OnlineConfig{ReadLag: lag})
	for i := range recs {
		o.Observe(&recs[i])
	}
	return o.Finish()
}

// TestOnlineMatchesBruteForce: on random one-key histories (executed for
// real, some with one outcome changed), the windowed online check says
// what an exhaustive search says; on those without writes of unknown
// outcome, it says what porcupine says of the same history (FromTrace and
// Check).
func TestOnlineMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	n := 4000
	if testing.Short() {
		n = 500
	}
	var legal, illegal, unknownWrites, windows int
	for i := 0; i < n; i++ {
		h := genSmall(r, 2+r.IntN(7), r.IntN(2) == 0)
		want := bruteForce(h)
		recs := records(h)
		got := onlineVerdict(recs, 31)
		if got.Ok() != want || len(got.TimedOut) > 0 {
			t.Fatalf("history %d: online says ok=%v (%+v), exhaustive search says %v:\n%s", i, got.Ok(), got, want, dumpSmall(h))
		}
		if want {
			legal++
		} else {
			illegal++
		}
		windows += got.Checks
		if !slices.ContainsFunc(h, func(c small) bool { return c.outcome == "unknown" }) {
			bh, err := lin.FromTrace(recs)
			if err != nil {
				t.Fatal(err)
			}
			res, err := lin.Check(bh, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Ok != want {
				t.Fatalf("history %d: porcupine says ok=%v, exhaustive search %v:\n%s", i, res.Ok, want, dumpSmall(h))
			}
		} else {
			unknownWrites++
		}
	}
	if legal < n/10 || illegal < n/10 || unknownWrites < n/10 || windows <= n {
		t.Errorf("a thin sample: %d linearizable, %d not, %d with writes of unknown outcome, %d windows", legal, illegal, unknownWrites, windows)
	}
	t.Logf("%d histories: %d linearizable, %d not, %d with writes of unknown outcome; %d windows", n, legal, illegal, unknownWrites, windows)
}

func dumpSmall(h []small) string {
	var s string
	for i, c := range h {
		s += fmt.Sprintf("  %d: %s [%d, %d] exp=%v row=%s/%d found=%v outcome=%s perturbed=%v\n", i, c.op, c.call, c.ret, c.exp, c.owner, c.counter, c.found, c.outcome, c.unordered)
	}
	return s
}

// TestOnlineBoundsUnknownWrites: a write whose reply was lost may have
// applied only until its call-end; a read that sees it after a read that
// did not, both after the call-end, breaks linearizability. With no
// call-end (a recorder that cannot know), it may apply at any time: the
// same history passes, as FromTrace and Check let it.
func TestOnlineBoundsUnknownWrites(t *testing.T) {
	cp := engine.SequenceCheckpoint("100")
	recs := []trace.Record{
		{Kind: trace.KindSend, T: 0, Proc: 1, Call: 1, Op: engine.OpCreateLease, Key: "k", RowOwner: "w1", Counter: 1, Checkpoint: cp},
		{Kind: trace.KindReply, T: 5, Proc: 1, Call: 1, Op: engine.OpCreateLease, Key: "k", Sent: 0, Outcome: trace.OutcomeOK},
		{Kind: trace.KindSend, T: 10, Proc: 1, Call: 2, Op: engine.OpUpdateLease, Key: "k", ExpOwner: "w1", ExpCounter: 1, RowOwner: "w1", Counter: 2, Checkpoint: cp},
		{Kind: trace.KindReply, T: 20, Proc: 1, Call: 2, Op: engine.OpUpdateLease, Key: "k", Sent: 10, Outcome: trace.OutcomeTimeout},
		{Kind: trace.KindCallEnd, T: 25, Proc: 1, Call: 2, Op: engine.OpUpdateLease, Key: "k", Sent: 10},
		{Kind: trace.KindReply, T: 40, Proc: 2, Call: 1, Op: engine.OpGetLease, Key: "k", Sent: 30, Outcome: trace.OutcomeOK, RowOwner: "w1", Counter: 1, Checkpoint: cp},
		{Kind: trace.KindReply, T: 60, Proc: 2, Call: 2, Op: engine.OpGetLease, Key: "k", Sent: 50, Outcome: trace.OutcomeOK, RowOwner: "w1", Counter: 2, Checkpoint: cp},
	}
	got := onlineVerdict(recs, 15)
	if got.Ok() || len(got.Illegal) != 1 || got.Windows[0] != [2]time.Duration{50, 60} {
		t.Errorf("online: %+v; want key k illegal in the window [50, 60]", got)
	}
	without := slices.DeleteFunc(slices.Clone(recs), func(r trace.Record) bool { return r.Kind == trace.KindCallEnd })
	if got := onlineVerdict(without, 15); !got.Ok() {
		t.Errorf("online without the call-end: %+v; want linearizable", got)
	}
	h, err := lin.FromTrace(without)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := lin.Check(h, 0); err != nil || !res.Ok {
		t.Errorf("FromTrace and Check: %+v %v; want linearizable", res, err)
	}
	// seen applied before its call-end, and nothing else wrong: fine
	ok := slices.Clone(recs[:5])
	ok = append(ok, trace.Record{Kind: trace.KindReply, T: 60, Proc: 2, Call: 2, Op: engine.OpGetLease, Key: "k", Sent: 50, Outcome: trace.OutcomeOK, RowOwner: "w1", Counter: 2, Checkpoint: cp})
	if got := onlineVerdict(ok, 15); !got.Ok() || got.Checks != 3 {
		t.Errorf("online: %+v; want linearizable, in 3 windows", got)
	}
}

// TestOnlineBudget: a window too large to search is unknown, not a pass,
// and the key's check stops there.
func TestOnlineBudget(t *testing.T) {
	cp := engine.SequenceCheckpoint("100")
	var recs []trace.Record
	// 20 concurrent creates of unknown outcome: one window, 2^20 orders
	for i := 0; i < 20; i++ {
		recs = append(recs, trace.Record{Kind: trace.KindSend, T: time.Duration(i), Proc: int32(i), Call: 1, Op: engine.OpCreateLease, Key: "k", RowOwner: fmt.Sprint("w", i), Counter: 1, Checkpoint: cp})
	}
	for i := 0; i < 20; i++ {
		recs = append(recs, trace.Record{Kind: trace.KindCallEnd, T: 100 + time.Duration(i), Proc: int32(i), Call: 1, Op: engine.OpCreateLease, Key: "k"})
	}
	o := lin.NewOnline(lin.OnlineConfig{ReadLag: 1, Budget: 1000})
	for i := range recs {
		o.Observe(&recs[i])
	}
	res := o.Finish()
	if res.Ok() || len(res.TimedOut) != 1 || len(res.Illegal) != 0 {
		t.Errorf("%+v: want key k timed out, not illegal, not ok", res)
	}
}

// TestOnlineOnSimulatorHistories: on simulator runs, the online check (as
// the run does it) agrees with FromTrace and Check over the kept trace:
// the same calls and keys, and every key that check finds illegal is
// illegal online too (online, writes of unknown outcome are bounded by
// their call-ends, which only makes the check stricter).
func TestOnlineOnSimulatorHistories(t *testing.T) {
	type run struct {
		seed     uint64
		mutation string
	}
	runs := []run{{1, ""}, {2, ""}, {3, ""}}
	for seed := uint64(1); seed <= 6; seed++ {
		runs = append(runs, run{seed, "unfenced-take"}, run{seed, "unfenced-checkpoint"})
	}
	if testing.Short() {
		runs = runs[:2]
	}
	caught := map[string]int{}
	for _, c := range runs {
		o := sim.Options{Seed: c.seed, Workers: 4, Shards: 8, Chaos: time.Minute, Faults: simFaults, Mutation: c.mutation, KeepTrace: true}
		if c.mutation != "" {
			o.Assignment = engine.AssignmentScan // where workers take leases themselves
		}
		r, err := sim.Run(o)
		if err != nil {
			t.Fatal(err)
		}
		h, err := lin.FromTrace(r.Trace)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := lin.Check(h, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		on := onlineVerdict(r.Trace, r.World.CallTimeout)
		if on.Ops != batch.Ops || on.Keys != batch.Keys || on.UnknownWrites != batch.UnknownWrites || on.Skipped != batch.Skipped {
			t.Errorf("seed %d %s: online %d calls on %d keys (%d unknown, %d left out), FromTrace %d on %d (%d, %d)", c.seed, c.mutation,
				on.Ops, on.Keys, on.UnknownWrites, on.Skipped, batch.Ops, batch.Keys, batch.UnknownWrites, batch.Skipped)
		}
		for _, k := range batch.Illegal {
			if !slices.Contains(on.Illegal, k) {
				t.Errorf("seed %d %s: key %s is illegal for Check, not online (%v)", c.seed, c.mutation, k, on.Illegal)
			}
		}
		if c.mutation == "" && (!on.Ok() || !batch.Ok) {
			t.Errorf("seed %d: a correct run: online %+v, Check %s", c.seed, on, batch.Info)
		}
		if c.mutation != "" && len(on.Illegal) > 0 {
			caught[c.mutation]++
		}
		if got := r.Lin; got.Ops != on.Ops || !slices.Equal(got.Illegal, on.Illegal) {
			t.Errorf("seed %d %s: the run's own check %+v differs from a check of its trace %+v", c.seed, c.mutation, got, on)
		}
		t.Logf("seed %d %s: %d calls, %d keys, %d windows, illegal %v (Check: %v)", c.seed, c.mutation, on.Ops, on.Keys, on.Checks, on.Illegal, batch.Illegal)
	}
	if !testing.Short() && (caught["unfenced-take"] == 0 || caught["unfenced-checkpoint"] == 0) {
		t.Errorf("the planted bugs caught online in seeds 1-6: %v; want both", caught)
	}
}

// TestOnlineCreateStorm: every worker of a large cluster creates the same
// lease at once (shard sync at start): one create applies, the others
// fail their condition, all in one window. It is decided, not left
// unknown; two creates that both applied are caught.
func TestOnlineCreateStorm(t *testing.T) {
	cp := engine.SequenceCheckpoint("100")
	storm := func(oks int) []trace.Record {
		var recs []trace.Record
		for i := 0; i < 150; i++ {
			recs = append(recs, trace.Record{Kind: trace.KindSend, T: time.Duration(i), Proc: int32(i), Call: 1, Op: engine.OpCreateLease, Key: "k", Checkpoint: cp})
		}
		for i := 0; i < 150; i++ {
			out := trace.OutcomeCondition
			if i < oks {
				out = trace.OutcomeOK
			}
			recs = append(recs, trace.Record{Kind: trace.KindReply, T: 1000 + time.Duration(i), Proc: int32(i), Call: 1, Op: engine.OpCreateLease, Key: "k", Sent: time.Duration(i), Outcome: out})
		}
		return recs
	}
	if got := onlineVerdict(storm(1), 1); !got.Ok() || got.Checks != 1 {
		t.Errorf("one create applied: %+v; want linearizable in one window", got)
	}
	if got := onlineVerdict(storm(2), 1); len(got.Illegal) != 1 || len(got.TimedOut) != 0 {
		t.Errorf("two creates applied: %+v; want illegal", got)
	}
}
