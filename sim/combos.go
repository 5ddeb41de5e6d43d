package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Combinations: worlds that need several rare things at once are drawn on
// purpose. The swarm draws each class of faults, each option and each knob
// independently, so a world with a reshard, table writes failing, a short
// lease and a long shard-sync interval all at once comes about once in
// hundreds of seeds; a combination draws exactly that for its share of the
// worlds. A world draws at most one combination (World.Combo), from a PRNG
// stream of its own; a world that draws none draws everything else as
// before, and a combination changes only what it names (the rest of its
// world is the one the seed draws). Every combination stays inside the
// assumptions.
type Combo struct {
	Name string
	// What says what the combination puts together.
	What string
	// Share is the share of the swarm's worlds that draw it.
	Share float64
	// engine adjusts the drawn engine parameters (before they are
	// validated); world the rest of the drawn world (after every other
	// draw, before the liveness bound is derived); schedule adds
	// actions to the run's schedule. r is the combination's own stream.
	engine   func(w *World, e *EngineParams, r rng)
	world    func(w *World, r rng, full engine.Config)
	schedule func(s *simulator, r rng) []Action
	// boundary: world turns boundary seeking on with knobs of its own;
	// calms: it takes the aimed and targeted faults away (calm); still:
	// it turns boundary seeking off (its held scans and replies, its cuts
	// and pauses would delay the takeovers and failovers it times).
	boundary, calms, still bool
}

// Combos is the catalogue of combinations.
var Combos = []Combo{
	{
		Name:  "reshard-table-errors",
		What:  "splits and merges while a tenth to a fifth of the table's calls fail with 500s, in a world with a short lease (3-5 s) and a long shard-sync interval (20-30 s)",
		Share: 0.04,
		engine: func(w *World, e *EngineParams, r rng) {
			shortLease(e, r, 3*time.Second, 5*time.Second)
			e.ShardSyncInterval = r.between(20*time.Second, 30*time.Second).Round(time.Second)
		},
		world: func(w *World, r rng, _ engine.Config) {
			w.addFaults("split", "merge", "table-errors")
			w.Rates.TableTransient = r.rangeF(0.1, 0.2)
		},
	},
	{
		Name:  "merge-assigner-failover",
		What:  "merges, each followed within half a lease duration by a crash of the assigner, in an assigner world",
		Share: 0.04,
		world: func(w *World, r rng, _ engine.Config) {
			w.Assignment.Mode = engine.AssignmentAssigner
			w.Workers = max(w.Workers, 3)
		},
		schedule: func(s *simulator, r rng) []Action {
			var out []Action
			ld := s.full.LeaseDuration
			for i := r.intIn(2, 4); i > 0; i-- {
				at := r.between(5*time.Second, s.w.Chaos-ld).Round(time.Millisecond)
				out = append(out, Action{At: at, Kind: ActMerge},
					Action{At: at + r.between(0, ld/2).Round(time.Millisecond), Kind: ActCrash, Role: RoleAssigner, Dur: r.between(ld/2, 2*ld).Round(time.Millisecond), NewOwner: r.chance(0.5)})
			}
			return out
		},
	},
	{
		Name:  "throttled-rolling-deploy",
		What:  "a rolling deploy (every worker shut down and restarted in turn) while the table throttles half or more of its calls",
		Share: 0.04,
		world: func(w *World, r rng, _ engine.Config) { w.Workers = max(w.Workers, 3) },
		schedule: func(s *simulator, r rng) []Action {
			ld := s.full.LeaseDuration
			gap := r.between(ld/2, 2*ld).Round(time.Millisecond)
			t0 := r.between(5*time.Second, max(6*time.Second, s.w.Chaos/3)).Round(time.Millisecond)
			out := []Action{{At: t0 - ld/2, Kind: ActTableThrottle, Dur: time.Duration(s.w.Workers+1)*gap + ld, Value: r.rangeF(0.5, 0.9)}}
			for i := 0; i < s.w.Workers; i++ {
				if t := t0 + time.Duration(i)*gap; t < s.w.Chaos {
					out = append(out, Action{At: t, Kind: ActShutdown, Worker: i, Dur: r.between(time.Second, 5*time.Second).Round(time.Millisecond)})
				}
			}
			return out
		},
	},
	{
		Name:  "split-during-handoffs",
		What:  "workers join a balancing assigner fleet (handoffs follow) while shards split",
		Share: 0.04,
		engine: func(w *World, e *EngineParams, r rng) {
			e.MaxLeasesForWorker, e.MaxLeasesToStealAtOnce = 0, r.intIn(1, 2)
		},
		world: func(w *World, r rng, _ engine.Config) {
			w.Assignment.Mode = engine.AssignmentAssigner
			w.Shards = max(w.Shards, 6)
		},
		schedule: func(s *simulator, r rng) []Action {
			var out []Action
			for i := r.intIn(2, 3); i > 0; i-- {
				at := r.between(10*time.Second, s.w.Chaos-10*time.Second).Round(time.Millisecond)
				out = append(out, Action{At: at, Kind: ActScaleOut})
				for j := r.intIn(1, 2); j > 0; j-- {
					out = append(out, Action{At: at + r.between(0, 2*s.full.LeaseDuration).Round(time.Millisecond), Kind: ActSplit})
				}
			}
			return out
		},
	},
	{
		Name: "expiry-race",
		What: "holders cut off the table just after a renewal while their shards are busy, every clock at the drift bound, " +
			"the takers' scans and polls timed to the instant the leases expire in their view, replies allowed up to well past the margin, " +
			"and a calm world otherwise (reshards and bursts at most, no other aimed or targeted fault)",
		Share:    0.12,
		boundary: true, calms: true,
		engine: func(w *World, e *EngineParams, r rng) {
			// a margin with room for a mid-act pause: at least four times
			// what the drift needs
			defaultTimings(e)
			min := engine.MinSafetyMargin(e.LeaseDuration, e.MaxClockDrift)
			hi := (e.LeaseDuration - e.RenewInterval) / 2
			e.SafetyMargin = r.between(min*4, max(min*4, hi)).Round(time.Millisecond)
			if e.SafetyMargin >= e.LeaseDuration-e.RenewInterval {
				e.SafetyMargin = 0
			}
		},
		world: func(w *World, r rng, full engine.Config) {
			calm(w, full)
			w.Workers = max(w.Workers, 2)
			// a page held to the holder's last moment must be within its
			// call's timeout
			w.CallTimeout = max(w.CallTimeout, full.SafetyMargin+full.IdleTimeBetweenReads+time.Second)
			b := &w.Boundary
			*b = BoundaryWorld{On: true, Drift: true, ScanAtExpiry: r.rangeF(0.6, 1), ScanAfterRenew: r.rangeF(0.5, 1), PollAfterAssign: 1,
				CutAfterRenew: r.intIn(6, 10), CutVictim: r.rangeF(0, 1)}
			if r.chance(0.5) {
				b.LateReply = r.rangeF(0.1, 0.4)
			}
		},
	},
	{
		Name: "restart-race",
		What: "holders crashed just after a renewal and restarted under their own id before the lease expires, their first scans stale " +
			"(showing the row before that renewal), a taker watching each, and a calm world otherwise",
		Share:    0.08,
		boundary: true, calms: true,
		engine: func(w *World, e *EngineParams, r rng) {
			e.ConsistentTakeScans = false // the restarted process resumes from an eventually consistent scan
		},
		world: func(w *World, r rng, full engine.Config) {
			calm(w, full)
			w.Workers = max(w.Workers, 3)
			b := &w.Boundary
			*b = BoundaryWorld{On: true, Drift: r.chance(0.5), ScanAtExpiry: r.rangeF(0.5, 1), ScanAfterRenew: r.rangeF(0.5, 1), PollAfterAssign: 1,
				CrashAfterRenew: r.intIn(3, 6)}
			if w.Rates.StaleLag == 0 {
				w.Rates.StaleLag = full.LeaseDuration
			}
		},
	},
	{
		Name: "stale-resync",
		What: "several splits and merges early, finished parents deleted soon (a short lease), frequent shard syncs, " +
			"and eventually consistent scans that show deleted rows gone and every other row as it was long ago",
		Share:    0.06,
		boundary: true,
		engine: func(w *World, e *EngineParams, r rng) {
			shortLease(e, r, 3*time.Second, 6*time.Second)
			e.ShardSyncInterval = r.between(3*time.Second, 6*time.Second).Round(time.Second)
			e.ConsistentTakeScans = false
		},
		world: staleResync,
		schedule: func(s *simulator, r rng) []Action {
			var out []Action
			for i := r.intIn(3, 6); i > 0; i-- {
				kind := ActSplit
				if r.chance(0.4) {
					kind = ActMerge
				}
				out = append(out, Action{At: r.between(2*time.Second, s.w.Chaos/2).Round(time.Millisecond), Kind: kind})
			}
			return out
		},
	},
	// The assigner-failure combinations (strike.go): the assigner struck
	// at moments aimed at its work, its row lapsing while holders die.
	{
		Name: "assigner-failovers",
		What: "an assigner fleet (3-5 workers) whose assigner is struck again and again at moments aimed at its work (just after its scan, " +
			"just after an assignment or take of its own applies, as a deputy reads its row): crashed and restarted under its own id (some " +
			"about when its row expires) or a new one, paused, or cut off from the table while it reads its shards; a holder crashed before " +
			"some strikes, so that the assigner has a lease to hand out; a 3-6 s lease, a chaos of at least 150-240 s, more shards than workers, " +
			"pending polls every twentieth to tenth of a lease duration; " +
			"a calm world otherwise, without boundary seeking",
		Share: 0.08,
		calms: true, still: true,
		engine: func(w *World, e *EngineParams, r rng) {
			shortLease(e, r, 3*time.Second, 6*time.Second) // many strikes in the chaos
			e.MaxLeasesForWorker = 0
		},
		world: func(w *World, r rng, full engine.Config) {
			calm(w, full)
			w.Boundary = BoundaryWorld{}
			w.Assignment.Mode = engine.AssignmentAssigner
			w.Workers = max(w.Workers, r.intIn(3, 5))
			// more shards than workers: the assigner holds leases too
			w.Shards = max(w.Shards, w.Workers+r.intIn(1, w.Workers))
			w.Chaos = max(w.Chaos, r.between(150*time.Second, 240*time.Second).Round(time.Second)) // room for many strikes
			// its deputies and the new owners of its leases read often:
			// a takeover and the handing out of its leases follow its
			// row's expiry closely
			ld := full.LeaseDuration
			w.Config.PendingPollInterval = r.between(ld/20, ld/10).Round(10 * time.Millisecond)
		},
		schedule: assignerFailovers,
	},
	{
		Name: "assigner-lapse",
		What: "an assigner fleet (4-6 workers, more shards, a 3-6 s lease, a chaos of at least 150-240 s) whose holders die one at a time, their leases expiring between the assigner's scans " +
			"(a scan interval of a tenth to a fifth of the lease duration and a take interval of one to one and a half, or a scan interval " +
			"of a third to a half and a take interval of a half to nine tenths), pending polls every twentieth to tenth of a lease duration, and the assigner's " +
			"row lapsing once or twice (the assigner paused or cut off from the table for more than a lease duration while the rest of the " +
			"fleet works), each far from the others; a calm world otherwise, without boundary seeking",
		Share: 0.08,
		calms: true, still: true,
		engine: func(w *World, e *EngineParams, r rng) {
			shortLease(e, r, 3*time.Second, 6*time.Second) // many lapses and crashes in the chaos
			e.MaxLeasesForWorker = 0
			// a take interval of at least the lease duration goes with a
			// short scan interval, a shorter one with a long scan
			// interval (world)
			if r.chance(0.5) {
				e.TakeInterval = time.Duration(float64(e.LeaseDuration) * r.rangeF(1, 1.5)).Round(100 * time.Millisecond)
			} else {
				e.TakeInterval = time.Duration(float64(e.LeaseDuration) * r.rangeF(0.5, 0.9)).Round(100 * time.Millisecond)
			}
		},
		world: func(w *World, r rng, full engine.Config) {
			calm(w, full)
			w.Boundary = BoundaryWorld{}
			w.Assignment.Mode = engine.AssignmentAssigner
			w.Workers = max(w.Workers, r.intIn(4, 6))
			w.Shards = max(w.Shards, w.Workers+r.intIn(1, w.Workers))
			w.Chaos = max(w.Chaos, r.between(150*time.Second, 240*time.Second).Round(time.Second)) // room for many lapses and crashes
			ld := full.LeaseDuration
			if full.TakeInterval < ld {
				w.Config.AssignerScanInterval = r.between(ld/3, ld/2).Round(10 * time.Millisecond)
			} else {
				w.Config.AssignerScanInterval = r.between(ld/10, ld/5).Round(10 * time.Millisecond)
			}
			// deputies that read the assigner row often (a dead assigner
			// is replaced soon after its row expires), new owners that
			// read what waits for them often
			w.Config.PendingPollInterval = r.between(ld/20, ld/10).Round(10 * time.Millisecond)
		},
		schedule: assignerLapse,
	},
	crashJoin,     // combos_handoff.go
	joinBalance,   // combos_handoff.go
	deposedTake,   // combos_deposed.go
	stealRelease,  // combos_steal.go
	sessionStrike, // combos_session.go
	// sync-race (syncrace.go)
	{
		Name: comboSyncRace,
		What: "splits three to four lease durations apart, each followed at once by a split of a child and either a process paused between its sync scan's reply and its decisions " +
			"until just under two lease durations after the scan (its creates then landing just under a lease-duration call timeout) or the children's creates throttled past the parent's delete grace, " +
			"in a scan-mode TRIM_HORIZON world with a 3-5 s lease, 1-2 s shard syncs, holders crashed and restarted under their own id, stale scans in half the worlds, and a calm world otherwise",
		Share:    0.10,
		boundary: true, calms: true,
		engine: func(w *World, e *EngineParams, r rng) {
			shortLease(e, r, 3*time.Second, 5*time.Second)
			e.ShardSyncInterval = r.between(time.Second, 2*time.Second).Round(time.Second)
			e.TakeInterval = (e.LeaseDuration / 3).Round(100 * time.Millisecond)
			e.ConsistentTakeScans = false
		},
		world:    syncRace,
		schedule: syncRaceSchedule,
	},
}

// staleResync is the combination stale-resync's world.
func staleResync(w *World, r rng, full engine.Config) {
	w.addFaults("split", "merge")
	b := &w.Boundary
	if !b.On {
		*b = BoundaryWorld{On: true}
	}
	b.StaleMix = r.rangeF(0.5, 1)
	w.Rates.StaleRead = max(w.Rates.StaleRead, r.rangeF(0.3, 1))
	if w.Rates.StaleLag == 0 {
		w.Rates.StaleLag = full.LeaseDuration
	}
}

// calm leaves a world only the fault classes that do not strike the table
// or the processes (reshards, bursts, slow processors, idle shards, short
// retention), and no aimed or targeted fault: the boundary actions of a
// race combination then meet nothing else.
func calm(w *World, full engine.Config) {
	if w.has("drift-beyond") {
		w.DriftBound = full.MaxClockDrift / 2 * 0.98
	}
	w.TableLatency.Spike, w.StreamLatency.Spike = 0, 0
	w.FanOut.Drop, w.FanOut.InUse, w.FanOut.SlowPush = 0, 0, 0
	w.keepFaults("split", "merge", "bursts", "slow-processor", "idle-shards", "retention")
	w.Aim, w.Target = AimWorld{}, TargetWorld{}
	w.Rates = Rates{Checkpoint: w.Rates.Checkpoint, SlowProcessor: w.Rates.SlowProcessor}
}

// ComboWorld is the combination a world drew (Combo empty: none).
type ComboWorld struct {
	Name string
}

func (c ComboWorld) String() string {
	if c.Name == "" {
		return ""
	}
	return "; combination " + c.Name
}

// ComboShare returns the share of the swarm's worlds that draw a
// combination (the sum of the Combos' shares).
func ComboShare() float64 {
	var s float64
	for _, c := range Combos {
		s += c.Share
	}
	return s
}

// combo returns the world's combination, nil if none.
func (w *World) combo() *Combo {
	for i := range Combos {
		if Combos[i].Name == w.Combo.Name {
			return &Combos[i]
		}
	}
	return nil
}

// drawCombo draws w's combination (Options.Combo; a swarm draws one for
// the sum of their shares of its worlds) from its own stream, and returns
// the stream the combination's adjustments draw from.
func (w *World) drawCombo(o Options, swarm bool) (rng, error) {
	r := newRNG(o.Seed, streamCombo)
	x := r.Float64() // first, whatever the option
	switch o.Combo {
	case "":
		if !swarm {
			return r, nil
		}
		for _, c := range Combos {
			if x < c.Share {
				if c.overrides(o) == "" { // a pinned option wins: no combination
					w.Combo.Name = c.Name
				}
				break
			}
			x -= c.Share
		}
	case "off":
	default:
		i := slices.IndexFunc(Combos, func(c Combo) bool { return c.Name == o.Combo })
		if i < 0 {
			return r, fmt.Errorf("sim: Combo %q is not one of the combinations (simrun -list), off, or empty (drawn by a swarm)", o.Combo)
		}
		if pin := Combos[i].overrides(o); pin != "" {
			return r, fmt.Errorf("sim: Combo %q sets what %s pins (a combination's boundary knobs, or the calm world it needs)", o.Combo, pin)
		}
		w.Combo.Name = o.Combo
	}
	return r, nil
}

// overrides returns the pinned option of o (as a simrun flag) that c's
// world would override, "" if none: boundary seeking pinned off for a
// combination that seeks boundaries, aimed or targeted faults pinned on
// for one that calms its world, boundary seeking pinned on for one that
// turns it off.
func (c *Combo) overrides(o Options) string {
	switch {
	case c.boundary && o.Boundary == "off":
		return "-boundary off"
	case c.still && o.Boundary == "on":
		return "-boundary on"
	case c.calms && o.Aim == "on":
		return "-aim on"
	case c.calms && o.Targeted == "on":
		return "-targeted on"
	}
	return ""
}

// comboSchedule returns the combination's actions.
func (s *simulator) comboSchedule() []Action {
	c := s.w.combo()
	if c == nil || c.schedule == nil {
		return nil
	}
	return c.schedule(s, newRNG(s.o.Seed, streamComboRun))
}

// defaultTimings sets the lease timings a world left to the engine's
// defaults to those defaults.
func defaultTimings(e *EngineParams) {
	if e.LeaseDuration == 0 {
		e.LeaseDuration, e.RenewInterval = engine.DefaultLeaseDuration, engine.DefaultRenewInterval
	}
	if e.MaxClockDrift == 0 {
		e.MaxClockDrift = engine.DefaultMaxClockDrift
	}
}

// shortLease sets a lease duration in [lo, hi] and a renew interval and
// margin that go with it.
func shortLease(e *EngineParams, r rng, lo, hi time.Duration) {
	e.LeaseDuration = r.between(lo, hi).Round(100 * time.Millisecond)
	e.RenewInterval = (e.LeaseDuration / time.Duration(r.intIn(3, 6))).Truncate(10 * time.Millisecond)
	e.SafetyMargin = 0 // the default for the new lease
	if e.TakeInterval > 0 {
		e.TakeInterval = time.Duration(float64(e.LeaseDuration) * r.rangeF(0.5, 1.5)).Round(100 * time.Millisecond)
	}
}

// addFaults adds fault classes to the world's.
func (w *World) addFaults(classes ...string) {
	for _, c := range classes {
		if !w.has(c) {
			w.Faults = append(w.Faults, c)
		}
	}
}

// keepFaults keeps only the world's fault classes among classes.
func (w *World) keepFaults(classes ...string) {
	w.Faults = slices.DeleteFunc(w.Faults, func(c string) bool { return !slices.Contains(classes, c) })
}

// assignerFailovers is the schedule of the combination assigner-failovers:
// strikes at the assigner three to five lease durations apart, each drawn
// (a moment, a fault), a quarter of them a cut just after its take of a
// lease whose holder was crashed just before, half the others after a
// crash of a holder.
func assignerFailovers(s *simulator, r rng) []Action {
	ld := s.full.LeaseDuration
	var out []Action
	gap := func() time.Duration { return r.between(3*ld, 5*ld).Round(time.Millisecond) }
	for t := r.between(5*time.Second, 5*time.Second+2*ld).Round(time.Millisecond); t < s.w.Chaos-ld; t += gap() {
		if r.chance(0.25) {
			// a holder dies; the assigner's take of its lease applies,
			// and the assigner is cut off the table (the take's reply
			// lost) for a little less than a lease duration: its row
			// lapses with the take's outcome unknown, which it learns
			// once the link heals, before the take's own validity ends
			lo, hi := ld-s.full.RenewInterval/2, ld-s.full.SafetyMargin-ld/20
			out = append(out, Action{At: max(time.Second, t-r.between(0, ld/2).Round(time.Millisecond)), Kind: ActCrash, Role: RoleHolder,
				Dur: r.between(ld, 3*ld).Round(time.Millisecond), NewOwner: r.chance(0.5)},
				Action{At: t, Kind: ActStrikeAssigner, Target: StrikeAfterTake, Dir: StrikeCut, Dur: r.between(lo, max(lo, hi)).Round(time.Millisecond)})
			continue
		}
		crashed := r.chance(0.5)
		if crashed {
			out = append(out, Action{At: max(time.Second, t-r.between(0, ld).Round(time.Millisecond)), Kind: ActCrash, Role: RoleHolder,
				Dur: r.between(ld, 3*ld).Round(time.Millisecond), NewOwner: r.chance(0.5)})
		}
		a := Action{At: t, Kind: ActStrikeAssigner}
		switch x := r.Float64(); {
		case x < 0.4:
			a.Target = StrikeAfterScan
		case x < 0.7:
			a.Target = StrikeAfterAssign
		default:
			a.Target = StrikeDeputyRead
		}
		switch x := r.Float64(); {
		case x < 0.5:
			// its row lapses while it works on: a deputy takes it over
			// (and a holder died just before: the assigner may take its
			// lease as the row lapses)
			a.Dir, a.Dur = StrikeRowFail, r.between(ld, 3*ld/2).Round(time.Millisecond)
			if !crashed {
				out = append(out, Action{At: max(time.Second, t-r.between(ld/3, 2*ld/3).Round(time.Millisecond)), Kind: ActCrash, Role: RoleHolder,
					Dur: r.between(ld, 3*ld).Round(time.Millisecond), NewOwner: r.chance(0.5)})
			}
		case x < 0.6:
			// restarted under its own id about when its row expires: it
			// resumes its leases as a deputy takes the row over
			a.Dir, a.Dur = StrikeCrash, r.between(ld*8/10, ld*13/10).Round(time.Millisecond)
		case x < 0.75:
			a.Dir, a.Dur, a.NewOwner = StrikeCrash, r.between(ld/2, 4*ld).Round(time.Millisecond), r.chance(0.5)
		case x < 0.85:
			a.Dir, a.Dur = StrikePause, r.between(ld/2, 2*ld).Round(time.Millisecond)
		case x < 0.95:
			// cut for longer than a lease duration: its row lapses while
			// it reads its shards
			a.Dir, a.Dur = StrikeCut, r.between(ld, 3*ld).Round(time.Millisecond)
		default:
			// cut for a little less: it learns that a take of its applied
			// after its row lapsed, before that take's own validity ends
			lo := ld - s.full.RenewInterval
			a.Dir, a.Dur = StrikeCut, r.between(lo, max(lo, ld-s.full.SafetyMargin)).Round(time.Millisecond)
		}
		out = append(out, a)
	}
	return out
}

// assignerLapse is the schedule of the combination assigner-lapse: every
// four lease durations (or a third of the chaos, if shorter), drawn, a
// holder crashes (restarted two to four lease durations later, under a
// new owner id half the time) or the assigner's row lapses (its writes of
// it throttled, or the assigner paused or cut off the table, for more
// than a lease duration).
func assignerLapse(s *simulator, r rng) []Action {
	ld := s.full.LeaseDuration
	var out []Action
	slot := min(4*ld, (s.w.Chaos-5*time.Second)/3)
	n := int((s.w.Chaos - 5*time.Second) / slot)
	for i := 0; i < n; i++ {
		t := 5*time.Second + time.Duration(i)*slot + r.between(0, slot/4).Round(time.Millisecond)
		if r.chance(0.5) {
			a := Action{At: t, Kind: ActStrikeAssigner, Target: StrikeAfterScan, Dur: r.between(ld+s.full.SafetyMargin, 2*ld).Round(time.Millisecond)}
			switch x := r.Float64(); {
			case x < 0.6:
				a.Dir = StrikeRowFail
			case x < 0.8:
				a.Dir = StrikePause
			default:
				a.Dir = StrikeCut
			}
			out = append(out, a)
			continue
		}
		out = append(out, Action{At: t, Kind: ActCrash, Role: RoleHolder, Dur: r.between(2*ld, 4*ld).Round(time.Millisecond), NewOwner: r.chance(0.5)})
	}
	return out
}
