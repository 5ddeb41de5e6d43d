package sim

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// etcd worlds. A world whose lease table is an etcd store (World.Etcd.On;
// Options.Store "etcd", or a quarter of a swarm's worlds) runs the fake
// table as etcdstore lays out an etcd keyspace, and the engine with pushed
// assignments (Config.WatchPending):
//
//   - writes and GetLease, ListPending and consistent scans are
//     linearizable, and the pending index is exact (it is written in the
//     same transactions as the rows): no index lag;
//   - an eventually consistent scan is a serializable read: one snapshot of
//     the whole table as a member behind the leader saw it, at most
//     SerializableLag old (with the fault class stale-reads), never a mix of
//     rows of different ages as DynamoDB's;
//   - every revision is kept for History, then compacted;
//   - each worker keeps the watches it asks for (Ready.Watch) as Consumer
//     does with etcdstore (watch.go): a watch is established over the
//     worker's table link, reports every write that leaves a row waiting
//     for its value after that link's latency and a watch delay, breaks when
//     the link is cut, and resumes after the last revision it reported once
//     the link is back; one that cannot (that revision is compacted) is
//     lost, and the worker reads the index and watches again.
//
// Fault classes of etcd worlds, drawn only there (EtcdClasses): a leader
// change (every call that reaches the cluster during the election fails
// with an unknown outcome, half of the writes having applied, and every
// watch stream is cancelled, WithRequireLeader, and resumes after it),
// watch cuts (streams cut at random and, BUGGIFY-style, just before a
// write that makes a row wait for the watch's worker applies) and a short
// history (compaction soon after a write, so a watch cut for a while is
// lost).
//
// Everything here draws from the etcd world's own PRNG streams, and a
// world that is not an etcd world never reaches it: other worlds draw and
// run exactly as before.

// EtcdClasses are the fault classes of etcd worlds.
var EtcdClasses = []string{"leader-change", "watch-cut", "compaction"}

// Stores are the lease stores a run can simulate (Options.Store).
var Stores = []string{"dynamodb", "etcd"}

// PRNG streams of etcd worlds (see rng.go): far from the numbered ones.
const (
	streamEtcd      uint64 = 0xe7cd0001 // the world's draw
	streamEtcdFault uint64 = 0xe7cd0002 // watch delays, cuts, elections during the run
)

// EtcdWorld is the drawn etcd store of a world.
type EtcdWorld struct {
	On bool
	// SerializableLag bounds how old a serializable scan's snapshot is.
	SerializableLag time.Duration
	// WatchDelay is how much later than its link's latency a watch reports
	// a write.
	WatchDelay Latency
	// History is how long the store keeps its revisions.
	History time.Duration
	// CutEvery is the mean time between cuts of one watch's stream during
	// the chaos (0: none); CutBeforeAssign the chance that a write making
	// a row wait for a worker first cuts that worker's watch; Reconnect
	// bounds how long a cut stream takes to reconnect.
	CutEvery        time.Duration
	CutBeforeAssign float64
	Reconnect       time.Duration
	// LeaderChanges is how many leader changes the chaos has, each an
	// election of up to Election.
	LeaderChanges int
	Election      time.Duration
}

func (e EtcdWorld) String() string {
	if !e.On {
		return ""
	}
	s := fmt.Sprintf("; store etcd (serializable lag %v, watch delay %v+%v, history %v", e.SerializableLag, e.WatchDelay.Base, e.WatchDelay.Tail, e.History)
	if e.CutEvery > 0 {
		s += fmt.Sprintf(", watch cuts every %v and %.2f before assignments, reconnect within %v", e.CutEvery, e.CutBeforeAssign, e.Reconnect)
	}
	if e.LeaderChanges > 0 {
		s += fmt.Sprintf(", %d leader changes of up to %v", e.LeaderChanges, e.Election)
	}
	return s + ")"
}

// drawEtcd draws w's store (Options.Store; a swarm makes a quarter of its
// worlds etcd worlds) and, for an etcd world, its timings and fault
// classes, from its own PRNG stream.
func (w *World) drawEtcd(o Options, swarm bool) error {
	r := newRNG(o.Seed, streamEtcd)
	on := false
	switch o.Store {
	case "":
		on = swarm && r.chance(0.25)
	case "etcd":
		on = true
	case "dynamodb":
	default:
		return fmt.Errorf("sim: Store %q is not %s", o.Store, strings.Join(Stores, " or "))
	}
	for _, c := range EtcdClasses {
		if w.has(c) {
			on = true // an etcd fault class asks for an etcd world
		}
	}
	if !on {
		return nil
	}
	e := &w.Etcd
	e.On = true
	// the index is written with its rows: it never lags them
	w.Assignment.IndexLag = 0
	switch {
	case swarm:
		for _, c := range EtcdClasses {
			if r.chance(0.45) {
				w.Faults = append(w.Faults, c)
			}
		}
	case o.Faults == "all":
		w.Faults = append(w.Faults, EtcdClasses...)
	}
	e.WatchDelay = Latency{Base: r.between(100*time.Microsecond, 3*time.Millisecond), Tail: r.between(100*time.Microsecond, 5*time.Millisecond)}
	e.History = r.between(2*time.Minute, 10*time.Minute).Round(time.Second)
	e.Reconnect = r.between(20*time.Millisecond, 2*time.Second).Round(time.Millisecond)
	if w.has("stale-reads") {
		e.SerializableLag = r.between(10*time.Millisecond, 2*w.Engine.LeaseDuration).Round(time.Millisecond)
	}
	if w.has("compaction") {
		e.History = r.between(time.Second, 2*w.Engine.LeaseDuration).Round(100 * time.Millisecond)
	}
	if w.has("watch-cut") {
		e.CutEvery = r.logUniform(2*time.Second, 60*time.Second).Round(100 * time.Millisecond)
		e.CutBeforeAssign = r.rangeF(0.1, 0.6)
	}
	if w.has("leader-change") {
		e.LeaderChanges = r.intIn(1, 4)
		e.Election = r.between(100*time.Millisecond, 3*time.Second).Round(10 * time.Millisecond)
	}
	return nil
}

// ActLeaderChange: the cluster elects a new leader for Dur (see EtcdClasses).
const ActLeaderChange ActionKind = "leader-change"

// errLeaderChanged is the error of a call that reached the cluster during
// an election: its outcome is unknown.
var errLeaderChanged = errors.New("sim: etcdserver: leader changed (unknown outcome)")

// etcdState is the run's state of its etcd store: its PRNG stream, the
// election in progress, the watches (watch.go) and the compaction's
// samples of the revision.
type etcdState struct {
	rng           rng
	electionUntil time.Duration
	watches       []*simWatch
	free          []int
	// revs samples the table's revision at each compaction tick, oldest
	// first: what History ago the revision was
	revs []revAt
}

type revAt struct {
	at  time.Duration
	rev int64
}

// setupEtcd starts an etcd world's compaction and draws its leader
// changes into the schedule.
func (s *simulator) setupEtcd() []Action {
	e := &s.w.Etcd
	if !e.On {
		return nil
	}
	s.etcd.rng = newRNG(s.o.Seed, streamEtcdFault)
	s.q.push(event{at: s.compactEvery(), kind: evCompact})
	var out []Action
	for i := 0; i < e.LeaderChanges; i++ {
		at := s.etcd.rng.between(time.Second, s.w.Chaos-time.Second).Round(time.Millisecond)
		out = append(out, Action{At: at, Kind: ActLeaderChange, Dur: s.etcd.rng.between(50*time.Millisecond, e.Election).Round(time.Millisecond)})
	}
	return out
}

// compactEvery is the time between compaction passes.
func (s *simulator) compactEvery() time.Duration {
	return max(s.w.Etcd.History/4, 250*time.Millisecond)
}

// onCompact compacts the revisions older than the world's history.
func (s *simulator) onCompact() {
	e := &s.etcd
	e.revs = append(e.revs, revAt{at: s.now, rev: s.tbl.Revision()})
	i := 0
	for i+1 < len(e.revs) && e.revs[i+1].at <= s.now-s.w.Etcd.History {
		i++
	}
	if e.revs[i].at <= s.now-s.w.Etcd.History {
		s.tbl.Compact(e.revs[i].rev + 1)
	}
	e.revs = e.revs[i:]
	s.q.push(event{at: s.now + s.compactEvery(), kind: evCompact})
}

// leaderChange starts an election of a.Dur: calls fail meanwhile, and every
// watch stream is cancelled.
func (s *simulator) leaderChange(a Action) {
	if s.healed {
		return
	}
	s.fault(a.String(), "")
	s.etcd.electionUntil = s.now + a.Dur
	for _, w := range s.etcd.watches {
		if w != nil && w.state == watchUp {
			s.cutWatch(w, "leader change")
		}
	}
}

// inElection reports whether a call reaching the cluster now meets an
// election.
func (s *simulator) inElection() bool { return s.w.Etcd.On && s.now < s.etcd.electionUntil }

// electionCall is a store call that reached the cluster during an
// election: its outcome is unknown (a write applied half the time: it was
// committed as the old leader stepped down, its reply lost). It reports
// whether the write applied, and its outcome at the store.
func (s *simulator) electionCall(p *proc, f *inflight, res *engine.Result) (applied bool, atStore error) {
	f.fault = "leader-change"
	atStore = errLeaderChanged
	if f.call.Op.IsWrite() && s.etcd.rng.chance(0.5) {
		applied = s.execStore(p, f, res)
		atStore = res.Err
	}
	*res = engine.Result{ID: f.call.ID, Err: errLeaderChanged}
	return applied, atStore
}

// serializableScan answers an eventually consistent scan of an etcd world:
// one snapshot of the table as a lagging member saw it.
func (s *simulator) serializableScan(p *proc, f *inflight, res *engine.Result) {
	lag := time.Duration(0)
	sl := s.cl.slots[p.slot]
	switch {
	case sl.staleScans > 0:
		sl.staleScans-- // a restarted process's first scans (ActCrashAfterRenew)
		lag = s.w.Etcd.SerializableLag
	case s.etcd.rng.chance(s.rate(s.w.Rates.StaleRead)):
		lag = s.etcd.rng.between(0, s.w.Etcd.SerializableLag)
	}
	if lag > 0 {
		f.fault = "stale-read"
	}
	res.Listing, res.Err = s.tbl.ListLeasesAsOf(s.ctx, epoch.Add(s.now-lag))
}

// etcdApplied is a write that applied in an etcd world: a write that left
// its row waiting records the index's change (trace.KindIndex, which W3
// reads) and goes to the watches of its Pending value, a cut aimed at them
// first (watch-cut).
func (s *simulator) etcdApplied(f *inflight, before bool) {
	c := &f.call
	if (c.Op != engine.OpCreateLease && c.Op != engine.OpUpdateLease) || c.Lease.Pending == "" {
		return
	}
	who := c.Lease.Pending
	if before {
		if s.healed || s.w.Etcd.CutBeforeAssign <= 0 {
			return
		}
		for _, w := range s.etcd.watches {
			if w != nil && w.who == who && w.state == watchUp && s.etcd.rng.chance(s.w.Etcd.CutBeforeAssign) {
				s.cutWatch(w, "cut before a write that makes "+c.Lease.Key+" wait for "+who)
			}
		}
		return
	}
	s.emit(&trace.Record{Kind: trace.KindIndex, Worker: -1, Proc: -1, Key: c.Lease.Key, Reason: who, Counter: s.tbl.Revision()})
	s.watchChanged(who)
}

// ownerOnlyWrite is the planted bug etcd-owner-only-compare: an update or
// delete whose Txn compares the row's owner only.
func (s *simulator) ownerOnlyWrite(c *engine.Call) error {
	key := leaseKey(c)
	e := c.Expect
	if cur, err := s.tbl.GetLease(s.ctx, key); err == nil && cur.Owner == c.Expect.Owner {
		e = engine.ExpectOf(cur) // the counter it found, not the one expected
	}
	if c.Op == engine.OpDeleteLease {
		return s.tbl.DeleteLease(s.ctx, key, e)
	}
	return s.tbl.UpdateLease(s.ctx, e, c.Lease)
}

// The planted bugs of etcd worlds (they do nothing in other worlds).
func init() {
	Mutations["etcd-owner-only-compare"] = "etcd worlds: a conditional write's Txn compares the row's owner only, not its counter: a stale version of the same owner is overwritten"
	Mutations["etcd-watch-resume-at-current"] = "etcd worlds: a watch whose stream was cut resumes at the store's current revision, not after the last one it reported: the writes in between are never reported"
}
