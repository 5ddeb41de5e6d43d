package driversim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// action is one timed fault of the schedule, drawn from the seed before
// the run starts.
type action struct {
	at   time.Duration
	kind string // a fault class
	pick uint32 // the slot: pick modulo the slots at the time
	dur  time.Duration
	// crash, shutdown: the delay before the restart; partition with
	// cutFor > 0 (hold): how long the holder is cut off from the table
	delay  time.Duration
	cutFor time.Duration
	flag   bool   // crash: restart under a new owner id; partition: calls hang
	which  string // partition: store, stream or both
}

// drawSchedule draws the timed faults of the chaos phase.
func (w *world) drawSchedule(r rng) []action {
	wd := w.w
	ld := wd.Engine.LeaseDuration
	at := func() time.Duration { return r.between(time.Second, wd.Chaos-time.Second).Round(time.Millisecond) }
	pick := func() uint32 { return r.Uint32() }
	var out []action
	for _, class := range wd.Faults {
		switch class {
		case "handoff-pause":
			for i := r.intIn(2, 5); i > 0; i-- {
				a := action{at: at(), kind: class, pick: pick()}
				if r.chance(0.6) {
					// long enough for another consumer to take the lease
					// and act on it: the holder's view of expiry, a take
					// scan, the take's latency
					lo := ld + wd.Engine.TakeInterval + time.Second
					a.dur = r.between(lo, lo+2*ld)
				} else {
					a.dur = r.logUniform(time.Millisecond, ld)
				}
				out = append(out, a)
			}
		case "pause":
			for i := r.intIn(1, 4); i > 0; i-- {
				out = append(out, action{at: at(), kind: class, pick: pick(), dur: r.logUniform(10*time.Millisecond, 3*ld)})
			}
		case "hold":
			for i := r.intIn(1, 3); i > 0; i-- {
				a := action{at: at(), kind: class, pick: pick(), dur: r.between(ld/2, 4*ld)}
				if r.chance(0.6) {
					a.cutFor = r.between(ld+wd.Engine.TakeInterval, 3*ld+wd.Engine.TakeInterval)
				}
				out = append(out, a)
			}
		case "partition":
			for i := r.intIn(1, 4); i > 0; i-- {
				out = append(out, action{at: at(), kind: class, pick: pick(), dur: r.between(500*time.Millisecond, 3*ld),
					flag: r.chance(0.5), which: []string{"store", "stream", "both"}[r.IntN(3)]})
			}
		case "crash":
			for i := r.intIn(1, 3); i > 0; i-- {
				out = append(out, action{at: at(), kind: class, pick: pick(), delay: r.between(0, 2*ld), flag: r.chance(0.5)})
			}
		case "shutdown":
			for i := r.intIn(1, 3); i > 0; i-- {
				a := action{at: at(), kind: class, pick: pick(), delay: r.between(0, ld)}
				if r.chance(0.7) {
					// the processors are slow to finish: the shutdown may
					// hit its deadline (a lease duration) with batches and
					// checkpoints in flight
					a.dur = r.between(ld/2, 3*ld)
				}
				out = append(out, a)
			}
		case "reshard":
			for i := r.intIn(1, 3); i > 0; i-- {
				out = append(out, action{at: at(), kind: class, flag: r.chance(0.5)})
			}
		case "expired-iterators":
			for i := r.intIn(1, 3); i > 0; i-- {
				out = append(out, action{at: at(), kind: class})
			}
		case "scale-out":
			out = append(out, action{at: at(), kind: class})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// target returns the slot an action aims at: the first from pick (modulo
// the slots) whose consumer acts on a lease, else pick's; the caller holds
// w.mu.
func (w *world) target(pick uint32) *slot {
	first := int(pick % uint32(len(w.slots)))
	for i := range w.slots {
		sl := w.slots[(first+i)%len(w.slots)]
		if sl.node != nil && !sl.node.dead && len(sl.node.acting) > 0 {
			return sl
		}
	}
	return w.slots[first]
}

// do carries out a; the caller holds w.mu.
func (w *world) do(a action) {
	sl := w.target(a.pick)
	n := sl.node
	who := func() string { return n.owner + "#" + strconv.Itoa(int(n.id)) }
	switch a.kind {
	case "handoff-pause":
		if n != nil {
			n.handoff = append(n.handoff, a.dur)
		}
	case "pause":
		if n != nil {
			w.stats.Pauses++
			w.fault(sl.idx, "", fmt.Sprintf("pause %s for %v", who(), a.dur))
			n.freeze(a.dur)
		}
	case "hold":
		if n != nil && n.holdNext == nil && len(n.acting) > 0 {
			keys := slices.Sorted(maps.Keys(n.acting))
			n.holdNext = &hold{key: keys[int(a.pick/7)%len(keys)], dur: a.dur, release: make(chan struct{})}
			if a.cutFor > 0 {
				w.stats.Partitions++
				w.fault(sl.idx, "", fmt.Sprintf("cut %s off from the table for %v (its next batch is held)", who(), a.cutFor))
				n.cutStore, n.cutHang = time.Now().Add(a.cutFor), true
			}
		}
	case "partition":
		if n != nil {
			w.stats.Partitions++
			w.fault(sl.idx, "", fmt.Sprintf("cut %s off from the %s for %v (hang=%v)", who(), a.which, a.dur, a.flag))
			until := time.Now().Add(a.dur)
			if a.which != "stream" {
				n.cutStore = until
			}
			if a.which != "store" {
				n.cutStream = until
			}
			n.cutHang = a.flag
		}
	case "crash":
		if n != nil && !n.dead {
			w.fault(sl.idx, "", "crash "+who())
			n.crash()
			w.restartLater(sl, nil, a.delay, a.flag)
		}
	case "shutdown":
		if n != nil && !n.dead {
			w.stats.Shutdowns++
			desc := "shut down " + who()
			if a.dur > 0 {
				desc += fmt.Sprintf(" (its processors stall for %v)", a.dur)
				n.stallUntil = time.Now().Add(a.dur)
			}
			w.fault(sl.idx, "", desc)
			n.cancel()
			w.restartLater(sl, n.done, a.delay, false)
		}
	case "reshard":
		if a.flag {
			w.split(w.rSched)
		} else {
			w.merge(w.rSched)
		}
	case "expired-iterators":
		w.stats.IteratorExpiries++
		w.fault(-1, "", "every shard iterator expires")
		w.kin.ExpireIterators()
	case "scale-out":
		w.stats.ScaleOuts++
		s := w.newSlot()
		w.fault(s.idx, "", "scale out: a new consumer "+s.owner)
		w.startNode(s)
	}
}

// restartLater starts a new incarnation in sl delay after done is closed
// (nil: now), unless the slot has one by then or the run has ended; the
// caller holds w.mu.
func (w *world) restartLater(sl *slot, done <-chan struct{}, delay time.Duration, newOwner bool) {
	w.aux.Add(1)
	go func() {
		defer w.aux.Done()
		if done != nil {
			<-done
		}
		time.Sleep(delay)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.ended || sl.node != nil {
			return
		}
		w.restart(sl, newOwner)
	}()
}

// restart starts a new incarnation in a slot that has none; the caller
// holds w.mu.
func (w *world) restart(sl *slot, newOwner bool) {
	if newOwner {
		sl.restarts++
		sl.owner = "w" + strconv.Itoa(sl.idx) + "-r" + strconv.Itoa(sl.restarts)
	}
	w.stats.Restarts++
	w.startNode(sl)
}

// heal ends the chaos phase: every fault stops, paused consumers wake,
// held processors go, and every slot without a consumer gets one; the
// caller holds w.mu.
func (w *world) heal() {
	w.healed = true
	w.emitWorld(trace.Record{Kind: trace.KindPhase, Reason: "heal"})
	for _, n := range w.nodes {
		n.cutStore, n.cutStream, n.stallUntil, n.handoff = time.Time{}, time.Time{}, time.Time{}, nil
		n.unfreeze()
		n.releaseHolds()
	}
	for _, sl := range w.slots {
		if sl.node == nil {
			w.restart(sl, false)
		}
	}
}
