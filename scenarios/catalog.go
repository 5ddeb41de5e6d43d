package scenarios

import (
	"sort"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/trace"
)

// Scenario is a named, readable story from production, run by the simulator.
type Scenario struct {
	Name  string // e.g. "rolling-deploy"
	Story string // one or two sentences: what happens in production
	// Options are the workers, shards, durations, faults ("none" or a
	// list) and scripted Actions of the story; Seed is left 0 (the caller
	// picks it) and Scenario is set to Name. Fields left zero are drawn
	// from the seed.
	Options sim.Options
}

// Default names the default scenario: swarm faults on a drawn world.
const Default = "swarm"

const s = time.Second

// shard returns the id of initial shard i of the simulated stream.
func shard(i int) string {
	const digits = "000000000000"
	n := []byte(digits)
	for p := len(n) - 1; i > 0 && p >= 0; p-- {
		n[p] = byte('0' + i%10)
		i /= 10
	}
	return "shardId-" + string(n)
}

// catalog returns fresh values (Options hold slices and funcs; callers may
// change their copy).
func catalog() []Scenario {
	list := []Scenario{
		{
			Name:    Default,
			Story:   "The swarm: a drawn world (cluster, stream, engine configuration) under a drawn mix of every fault class.",
			Options: sim.Options{Faults: "swarm"},
		},
		{
			Name: "rolling-deploy",
			Story: "A deploy restarts every one of five workers in turn, one every 15 s: each shuts down gracefully, " +
				"hands its leases back and comes back 3 s later under the same owner id.",
			Options: sim.Options{Workers: 5, Shards: 12, Faults: "none", Chaos: 120 * s, Actions: rolling(5, 20*s, 15*s, 3*s)},
		},
		{
			Name: "crash-mid-split",
			Story: "A reshard splits shard 0 and, a millisecond later (before it has read to the parent's end), the worker that " +
				"owns shard 0's lease crashes and stays down 20 s while shard 1 is split too: another worker must finish the " +
				"closed parent before either child is read.",
			Options: sim.Options{Workers: 3, Shards: 3, Faults: "none", Chaos: 90 * s, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActSplit, Shard: shard(0)},
				{At: 30*s + time.Millisecond, Kind: sim.ActCrash, Shard: shard(0), Dur: 20 * s},
				{At: 31 * s, Kind: sim.ActSplit, Shard: shard(1)},
			}},
		},
		{
			Name: "partitioned-while-checkpointing",
			Story: "Five times, for 15 s each, the lease table becomes unreachable from worker 0 while it keeps reading the stream " +
				"and its processor keeps checkpointing: its checkpoints and renewals fail, worker 1 takes its shards, and no write of the cut-off owner may land afterwards. " +
				"(Leases of 6 s and balancing, so worker 0 wins shards back between the cuts.)",
			Options: sim.Options{Workers: 2, Shards: 6, Faults: "none", Chaos: 150 * s, Engine: pinLease(6*s, 2), Actions: repeatedly(5, 20*s, 25*s,
				sim.Action{Kind: sim.ActPartition, Workers: []int{0}, Target: "table", Dir: "both", Dur: 15 * s})},
		},
		{
			Name: "gc-pause-longer-than-lease",
			Story: "A stop-the-world GC pause freezes the worker that owns shard 0 for 60 s, longer than any lease duration; the others take its " +
				"shards, and when it wakes its queued results and timers must not let it deliver or checkpoint on leases it lost.",
			Options: sim.Options{Workers: 3, Shards: 8, Faults: "none", Chaos: 120 * s, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActPause, Shard: shard(0), Dur: 60 * s},
			}},
		},
		{
			Name: "clock-step-backward",
			Story: "NTP steps worker 0's wall clock back by 10 minutes while it holds leases (and worker 1's back by 1 minute later): " +
				"lease decisions use the monotonic clock only, so nothing may change.",
			Options: sim.Options{Workers: 3, Shards: 6, Faults: "none", Chaos: 90 * s, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActClockStep, Worker: 0, Extra: -10 * time.Minute},
				{At: 50 * s, Kind: sim.ActClockStep, Worker: 1, Extra: -time.Minute},
			}},
		},
		{
			Name: "clock-step-forward",
			Story: "NTP steps worker 0's wall clock forward by 10 minutes while it holds leases (and worker 1's forward by 1 minute later): " +
				"nobody may think a lease expired because a wall clock jumped.",
			Options: sim.Options{Workers: 3, Shards: 6, Faults: "none", Chaos: 90 * s, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActClockStep, Worker: 0, Extra: 10 * time.Minute},
				{At: 50 * s, Kind: sim.ActClockStep, Worker: 1, Extra: time.Minute},
			}},
		},
		{
			Name: "throttled-failover",
			Story: "The worker that owns shard 0 crashes and, at the same moment, the lease table starts throttling 90% of calls for 40 s: " +
				"the survivors must take over its shards through the throttling, without double ownership.",
			Options: sim.Options{Workers: 3, Shards: 9, Faults: "none", Chaos: 100 * s, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActCrash, Shard: shard(0)},
				{At: 30 * s, Kind: sim.ActTableThrottle, Dur: 40 * s, Value: 0.9},
			}},
		},
		{
			Name: "scale-1-20-2",
			Story: "Traffic spikes: the fleet scales from 1 worker to 20 (one every second), then back down to 2 " +
				"(one every 2 s), while the leases are rebalanced across it.",
			Options: sim.Options{Workers: 1, Shards: 24, Faults: "none", Chaos: 150 * s, Actions: scale1to20to2()},
		},
		{
			Name: "merge-split-owners",
			Story: "Two adjacent shards owned by two different workers are merged: the child must not be read before both " +
				"parents are finished. (Each worker is capped at one lease, which pins the two parents to different workers.)",
			Options: sim.Options{Workers: 2, Shards: 2, Faults: "none", Chaos: 90 * s,
				Engine: func(c *engine.Config) { c.MaxLeasesForWorker = 1 },
				Actions: []sim.Action{
					{At: 40 * s, Kind: sim.ActMerge, Shard: shard(0)},
				}},
		},
		{
			Name: "stale-reads-takeover",
			Story: "The lease table serves eventually consistent scans that return stale rows while the worker that owns shard 0 " +
				"crashes and the others take over its shards: a stale row may delay a take, never make a wrong one.",
			Options: sim.Options{Workers: 3, Shards: 9, Faults: "stale-reads", Chaos: 100 * s,
				Engine: func(c *engine.Config) { c.ConsistentTakeScans = false },
				Actions: []sim.Action{
					{At: 30 * s, Kind: sim.ActCrash, Shard: shard(0), Dur: 30 * s},
				}},
		},
		{
			Name: "sdk-retry-applied-take",
			Story: "The owner of shard 0 crashes, and while the others take its shards the SDK retries half of their takes after they " +
				"had applied (the first reply was lost): each retry fails its condition against the taker's own row, and must " +
				"not read as a lost lease. Later the owner of shard 1 crashes under the same retries.",
			Options: sim.Options{Workers: 4, Shards: 12, Faults: "none", Chaos: 100 * s, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActCrash, Shard: shard(0), Dur: 30 * s},
				{At: 30 * s, Kind: sim.ActSDKRetry, Target: trace.WriteTake, Value: 0.5, Dur: 60 * s},
				{At: 60 * s, Kind: sim.ActCrash, Shard: shard(1), Dur: 20 * s},
			}},
		},
		{
			Name: "restart-same-owner",
			Story: "The worker that owns shard 0 crashes and its process manager restarts it 1 s later under the same owner id, " +
				"well inside its leases: the new process resumes them from the stored checkpoints, not from its predecessor's " +
				"memory. 30 s later it happens again.",
			Options: sim.Options{Workers: 3, Shards: 6, Faults: "none", Chaos: 90 * s, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActCrash, Shard: shard(0), Dur: time.Second},
				{At: 60 * s, Kind: sim.ActCrash, Shard: shard(0), Dur: time.Second},
			}},
		},
		{
			Name: "shipped-defaults",
			Story: "The engine exactly as shipped (lease 10 s, renew 3 s, shard sync 10 s, take scans every lease " +
				"duration, one steal at a time) on 10 workers and 100 shards; three workers crash in turn and come back " +
				"under new owner ids. Its figures are the ones docs/figures.md sets beside KCL's defaults.",
			Options: sim.Options{Workers: 10, Shards: 100, Faults: "none", Chaos: 10 * time.Minute, Engine: shippedDefaults,
				Actions: threeCrashes()},
		},
		{
			Name: "short-lease",
			Story: "shipped-defaults with a 3 s lease renewed every second (the rest as shipped) on 10 workers and 100 " +
				"shards; three workers crash in turn and come back under new owner ids. With -renewal session it is the " +
				"short lease that session renewal makes affordable; docs/figures.md sets it beside shipped-defaults.",
			Options: sim.Options{Workers: 10, Shards: 100, Faults: "none", Chaos: 10 * time.Minute, Engine: shortLease,
				Actions: threeCrashes()},
		},
		{
			Name: "slow-clock-holder-cut-off",
			Story: "Worker 0's clock runs as slow as the configured drift bound allows and worker 1's as fast, and worker 0 " +
				"loses the lease table for 30 s while it keeps reading its busy shards: it acts until its own view of expiry, " +
				"worker 1 takes as soon as its own view says so, and only the safety margin keeps the two apart in true time. " +
				"(Lease 10 s, drift 0.05, scans every 100 ms; without the margin, engine:no-safety-margin, the two overlap.)",
			Options: sim.Options{Workers: 2, Shards: 2, Faults: "none", Chaos: 90 * s, Drifts: []float64{-1, 1}, Engine: slowClockHolder,
				Actions: []sim.Action{
					{At: 25 * s, Kind: sim.ActBurst, Dur: 60 * s, Value: 20},
					{At: 30 * s, Kind: sim.ActPartition, Workers: []int{0}, Target: "table", Dir: "both", Dur: 30 * s},
				}},
		},
		{
			Name: "fan-out-handoffs",
			Story: "The application reads with enhanced fan-out, each subscription renewed every 6 s, and the service refuses " +
				"some subscriptions as duplicates (ResourceInUse or LimitExceeded: sub-in-use). The owner of shard 0 crashes and " +
				"its process manager restarts it at once, a worker is deployed (graceful shutdown, back 3 s later), and shard 2 " +
				"splits: a hand-off may meet the previous holder's subscription (ResourceInUse for 5 s), every renewal must " +
				"resume exactly after the last continuation, and the split's end names its children.",
			Options: sim.Options{Workers: 3, Shards: 6, Faults: "sub-in-use", Consumer: "fan-out", SubscriptionLifetime: 6 * s, Chaos: 120 * s,
				Actions: []sim.Action{
					{At: 30 * s, Kind: sim.ActCrash, Shard: shard(0), Dur: 100 * time.Millisecond},
					{At: 60 * s, Kind: sim.ActShutdown, Worker: 1, Dur: 3 * s},
					{At: 80 * s, Kind: sim.ActSplit, Shard: shard(2)},
				}},
		},
		{
			Name: "migrate-to-assigner-and-back",
			Story: "A fleet of five workers that scan the table and take leases themselves migrates, by a rolling deploy in the " +
				"middle of crashes, partitions and a split, to leases handed out by an assigner, one worker every 10 s; " +
				"then it rolls back. Old and new workers run side by side on one table throughout: no lease is ever acted " +
				"on twice, nothing is lost.",
			Options: sim.Options{Workers: 5, Shards: 12, Faults: "crash,partition,latency,split", Chaos: 4 * time.Minute, Assignment: engine.AssignmentScan,
				Actions: migrate(5, 20*s, 10*s)},
		},
		{
			Name: "assigner-crash",
			Story: "The assigner crashes at 40 s and again (the one that replaced it) at 80 s, each while another worker is " +
				"paused past its lease: a deputy takes the assigner row over once it expires in its own view, reassigns the " +
				"crashed assigner's leases at once and the paused worker's when they expire.",
			Options: sim.Options{Workers: 4, Shards: 12, Faults: "none", Chaos: 2 * time.Minute, Assignment: engine.AssignmentAssigner,
				Actions: []sim.Action{
					// the owner of the assigner row: the assigner
					{At: 40 * s, Kind: sim.ActCrash, Shard: engine.AssignerKey, Dur: 30 * s},
					{At: 40 * s, Kind: sim.ActPause, Shard: shard(5), Dur: 15 * s},
					{At: 80 * s, Kind: sim.ActCrash, Shard: engine.AssignerKey, Dur: 30 * s},
				}},
		},
		{
			Name: "foreign-app",
			Story: "A second application, started with a stream name that is not this table's (a typo, or two applications " +
				"that picked the same table name), joins at 30 s: it must stop at start, naming the mismatch, and write nothing, " +
				"while the application that owns the table goes on as if nothing happened.",
			Options: sim.Options{Workers: 3, Shards: 4, Faults: "crash,partition,latency", Chaos: 90 * s, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActForeignApp, Value: 2},
				{At: 50 * s, Kind: sim.ActForeignApp, Value: 6},
			}},
		},
		{
			Name: "stream-recreated",
			Story: "At 40 s the stream is deleted and created again under its name, with one shard less (its shard ids start " +
				"again at 0): every worker must stop at its next shard sync, without ending, deleting or moving back any row.",
			Options: sim.Options{Workers: 3, Shards: 4, Faults: "latency,loss", Chaos: 60 * s, Quiet: 120 * s, Actions: []sim.Action{
				{At: 40 * s, Kind: sim.ActRecreateStream},
			}},
		},
		{
			Name: "checkpoint-older-than-retention",
			Story: "The only worker is down for 6 minutes while the stream keeps a short retention (30 s to 5 min): when " +
				"it comes back its checkpoints point below the trim horizon, and the lost records are counted, not hidden.",
			Options: sim.Options{Workers: 1, Shards: 4, Faults: "retention", Chaos: 7 * time.Minute, Actions: []sim.Action{
				{At: 30 * s, Kind: sim.ActCrash, Worker: 0, Dur: 6 * time.Minute},
			}},
		},
	}
	for i := range list {
		list[i].Options.Scenario = list[i].Name
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list
}

// migrate switches workers 0..n-1 to assigner mode and restarts them one
// after another from first, every apart; then switches them back the same
// way.
func migrate(n int, first, every time.Duration) []sim.Action {
	var out []sim.Action
	back := first + time.Duration(n+3)*every
	for i := 0; i < n; i++ {
		for _, step := range []struct {
			at   time.Duration
			mode string
		}{{first + time.Duration(i)*every, engine.AssignmentAssigner}, {back + time.Duration(i)*every, engine.AssignmentScan}} {
			out = append(out, sim.Action{At: step.at, Kind: sim.ActSwitchMode, Worker: i, Target: step.mode},
				sim.Action{At: step.at, Kind: sim.ActShutdown, Worker: i, Dur: 2 * time.Second})
		}
	}
	return out
}

// rolling restarts workers 0..n-1 one after another: worker i shuts down
// gracefully at first+i·every and restarts down later.
func rolling(n int, first, every, down time.Duration) []sim.Action {
	var out []sim.Action
	for i := 0; i < n; i++ {
		out = append(out, sim.Action{At: first + time.Duration(i)*every, Kind: sim.ActShutdown, Worker: i, Dur: down})
	}
	return out
}

// scale1to20to2 adds 19 workers one a second from 20 s, then removes 18 of
// them one every 2 s from 60 s, leaving workers 0 and 1.
func scale1to20to2() []sim.Action {
	var out []sim.Action
	for i := 1; i <= 19; i++ {
		out = append(out, sim.Action{At: 20*s + time.Duration(i-1)*s, Kind: sim.ActScaleOut})
	}
	for i := 19; i >= 2; i-- {
		out = append(out, sim.Action{At: 60*s + time.Duration(19-i)*2*s, Kind: sim.ActScaleIn, Worker: i})
	}
	return out
}

// repeatedly returns n copies of a, the first at first, then one every
// every.
func repeatedly(n int, first, every time.Duration, a sim.Action) []sim.Action {
	var out []sim.Action
	for i := 0; i < n; i++ {
		a.At = first + time.Duration(i)*every
		out = append(out, a)
	}
	return out
}

// pinLease fixes the lease timing of a story (lease duration, renewal at a
// quarter of it, the default margin and take interval) and the balancing
// (steal at most steal leases a round; no cap), keeping the drawn rest.
// shippedDefaults resets every setting the simulator draws to the
// engine's default.
func shippedDefaults(c *engine.Config) {
	c.LeaseDuration, c.RenewInterval, c.SafetyMargin, c.MaxClockDrift = 0, 0, 0, 0
	c.TakeInterval, c.ShardSyncInterval = 0, 0
	c.MaxLeasesForWorker, c.MaxLeasesToStealAtOnce = 0, 0
	c.GetRecordsLimit, c.IdleTimeBetweenReads, c.ConsistentTakeScans = 0, 0, false
}

// threeCrashes are the crashes of shipped-defaults and short-lease: three
// workers in turn, back under new owner ids.
func threeCrashes() []sim.Action {
	return []sim.Action{
		{At: 2 * time.Minute, Kind: sim.ActCrash, Worker: 1, Dur: 2 * time.Minute, NewOwner: true},
		{At: 5 * time.Minute, Kind: sim.ActCrash, Worker: 4, Dur: 2 * time.Minute, NewOwner: true},
		{At: 8 * time.Minute, Kind: sim.ActCrash, Worker: 7, Dur: time.Minute, NewOwner: true},
	}
}

// shortLease is shippedDefaults with a 3 s lease renewed every second.
func shortLease(c *engine.Config) {
	shippedDefaults(c)
	c.LeaseDuration, c.RenewInterval = 3*time.Second, time.Second
}

// slowClockHolder pins the timing that leaves the least slack between a
// cut-off holder's last act and a taker's first: a long lease with the
// largest drift the simulator draws, the smallest margin the engine allows
// for it, take scans every 100 ms (consistent, so the taker sees the last
// renewal at once) and reads every 100 ms.
func slowClockHolder(c *engine.Config) {
	// a taker that scans the table itself, as soon as its view says so
	c.Assignment = engine.AssignmentScan
	c.LeaseDuration, c.RenewInterval, c.MaxClockDrift, c.SafetyMargin = 10*s, 2500*time.Millisecond, 0.05, 0
	c.TakeInterval, c.ConsistentTakeScans = 100*time.Millisecond, true
	c.IdleTimeBetweenReads, c.GetRecordsLimit = 100*time.Millisecond, 1000
	c.MaxLeasesToStealAtOnce, c.MaxLeasesForWorker = 1, 0
}

func pinLease(lease time.Duration, steal int) func(*engine.Config) {
	return func(c *engine.Config) {
		c.LeaseDuration = lease
		c.RenewInterval = lease / 4
		c.SafetyMargin = 0
		c.TakeInterval = 0
		c.MaxLeasesToStealAtOnce = steal
		c.MaxLeasesForWorker = 0
	}
}

// All returns the catalog, sorted by name; it includes the default.
func All() []Scenario { return catalog() }

// Lookup returns the scenario named name.
func Lookup(name string) (Scenario, bool) {
	for _, sc := range catalog() {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}

// Names returns the names of the catalog, sorted.
func Names() []string {
	var out []string
	for _, sc := range catalog() {
		out = append(out, sc.Name)
	}
	return out
}
