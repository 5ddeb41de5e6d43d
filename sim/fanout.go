package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
)

// Enhanced fan-out in the simulator. A fan-out world (World.FanOut.On)
// runs the engine with Config.Consumer FanOut against the fake's
// consumers and subscriptions (fakes.Kinesis: the 5-minute lifetime, drawn
// shorter here, one subscription per consumer and shard, ResourceInUse
// within 5 s, one call per second, ChildShards at the end). The calls
// travel the stream link like every other stream call. A NextEvent whose
// subscription has nothing to push waits at the service, as an HTTP/2
// stream does: it is parked until a record is put to its shard, the shard
// closes, its wait (Call.Wait) runs out or the subscription's lifetime
// ends, and is answered then.

// FanOutClasses are the fault classes of fan-out worlds: a swarm draws
// them only in a world that reads with enhanced fan-out, from a PRNG
// stream of its own (so that polling worlds draw exactly as before).
var FanOutClasses = []string{"sub-drop", "sub-in-use", "slow-push"}

// FanOutWorld is the drawn enhanced fan-out of a world.
type FanOutWorld struct {
	// On: the workers read with enhanced fan-out.
	On bool
	// Activation is how long a new consumer stays CREATING; Lifetime how
	// long a subscription lasts (5 minutes on Kinesis; drawn shorter so
	// that runs renew subscriptions).
	Activation, Lifetime time.Duration
	// Drop: the chance that a NextEvent finds its subscription dropped
	// mid-stream (sub-drop). InUse: that a SubscribeToShard is refused
	// with ResourceInUse or LimitExceeded although the fake's rules would
	// let it through (sub-in-use). SlowPush: that an event is pushed late,
	// by up to SlowPushMax (slow-push).
	Drop, InUse, SlowPush float64
	SlowPushMax           time.Duration
}

func (f FanOutWorld) String() string {
	if !f.On {
		return "polling"
	}
	return fmt.Sprintf("fan-out (activation %v, lifetime %v, drop %.3f, in-use %.3f, slow push %.3f up to %v)",
		f.Activation, f.Lifetime, f.Drop, f.InUse, f.SlowPush, f.SlowPushMax)
}

// consumerName is the stream consumer of fan-out worlds.
const consumerName = "sim-app"

var (
	errSubDropped = errors.New("sim: injected: the HTTP/2 stream was reset (InternalFailureException)")
	errSubInUse   = fmt.Errorf("sim: injected: %w", engine.ErrResourceInUse)
)

// drawFanOut draws the enhanced fan-out of w: whether it is on (Options.
// Consumer; a swarm draws it for 3 worlds in 10) and, if so, its timings
// and fault classes. It draws from its own PRNG stream.
func (w *World) drawFanOut(o Options, swarm bool) error {
	r := newRNG(o.Seed, streamFanOut)
	on := false
	switch o.Consumer {
	case "", "polling":
		on = o.Consumer == "" && swarm && r.chance(0.3)
	case "fan-out":
		on = true
	default:
		return fmt.Errorf("sim: Consumer %q is neither polling nor fan-out", o.Consumer)
	}
	for _, c := range FanOutClasses {
		if w.has(c) {
			on = true // a fan-out fault class asks for a fan-out world
		}
	}
	if !on {
		return nil
	}
	f := &w.FanOut
	f.On = true
	f.Activation = r.between(0, 3*time.Second).Round(10 * time.Millisecond)
	f.Lifetime = r.logUniform(15*time.Second, 5*time.Minute).Round(time.Second)
	if o.SubscriptionLifetime > 0 {
		f.Lifetime = o.SubscriptionLifetime
	}
	switch {
	case swarm:
		for _, c := range FanOutClasses {
			if r.chance(0.45) {
				w.Faults = append(w.Faults, c)
			}
		}
	case o.Faults == "all":
		w.Faults = append(w.Faults, FanOutClasses...)
	}
	if w.has("sub-drop") {
		f.Drop = r.rangeF(0.002, 0.05)
	}
	if w.has("sub-in-use") {
		f.InUse = r.rangeF(0.05, 0.4)
	}
	if w.has("slow-push") {
		f.SlowPush = r.rangeF(0.01, 0.2)
		f.SlowPushMax = r.between(200*time.Millisecond, 5*time.Second).Round(10 * time.Millisecond)
	}
	return nil
}

// boundExtra is what fan-out adds to the liveness bound: the consumer's
// activation, and a hand-off's wait for the previous holder's
// subscription (ResourceInUse for up to 5 s, retried every second or two).
func (f FanOutWorld) boundExtra() time.Duration {
	if !f.On {
		return 0
	}
	return f.Activation + 2*fakes.DefaultInUseWindow + 4*time.Second
}

// fanOutSim is the simulator's state of enhanced fan-out: for each call
// slot a wake generation (a parked NextEvent is answered by the first of
// its wakes; the others find the generation moved on) and whether its next
// apply answers even an idle subscription; and the parked calls by shard.
type fanOutSim struct {
	gen     []uint32
	force   []bool
	waiters map[string][]subWaiter
}

type subWaiter struct {
	slot int
	gen  uint32
}

// setupFanOut configures the fake's fan-out for a fan-out world.
func (s *simulator) setupFanOut() {
	if !s.w.FanOut.On {
		return
	}
	s.st.SetFanOutOptions(fakes.FanOutOptions{Activation: s.w.FanOut.Activation, Lifetime: s.w.FanOut.Lifetime,
		MaxEventRecords: max(s.full.GetRecordsLimit, 100)})
	s.fo.waiters = map[string][]subWaiter{}
}

func (s *simulator) slotState(i int) {
	for len(s.fo.gen) <= i {
		s.fo.gen = append(s.fo.gen, 0)
		s.fo.force = append(s.fo.force, false)
	}
}

// timeoutOf is the time a driver gives call c: the call timeout, plus the
// wait of a NextEvent.
func (s *simulator) timeoutOf(c *engine.Call) time.Duration { return s.w.CallTimeout + c.Wait }

// applyFanOut executes a fan-out call that has reached the stream, or
// parks a NextEvent that has nothing to answer yet; parked reports that.
func (s *simulator) applyFanOut(i int, f *inflight, res *engine.Result) (parked bool) {
	c := &f.call
	fw := &s.w.FanOut
	switch c.Op {
	case engine.OpDescribeConsumer:
		res.Consumer, res.Err = s.st.DescribeConsumer(s.ctx, c.Stream, c.ConsumerName)
	case engine.OpRegisterConsumer:
		res.Consumer, res.Err = s.st.RegisterConsumer(s.ctx, c.Stream, c.ConsumerName)
	case engine.OpDeregisterConsumer:
		res.Err = s.st.DeregisterConsumer(s.ctx, c.Stream, c.ConsumerName)
	case engine.OpUnsubscribe:
		res.Err = s.st.Unsubscribe(s.ctx, c.Subscription)
	case engine.OpSubscribe:
		if s.net.rng.chance(s.rate(fw.InUse)) {
			f.fault = "sub-in-use"
			res.Err = errSubInUse
			if s.net.rng.chance(0.3) {
				f.fault, res.Err = "sub-limit-exceeded", errThrottled
			}
			return false
		}
		s.expireShards()
		res.Subscription, res.Err = s.st.Subscribe(s.ctx, c.ConsumerARN, c.Stream, c.Shard, s.resumePosition(c.Stream, c.Shard, c.Position))
		if res.Err == nil {
			s.notOwed(s.cl.procs[f.proc], c) // config.go
		}
	case engine.OpNextEvent:
		s.slotState(i)
		force := s.fo.force[i]
		s.fo.force[i] = false
		ready, endsAt, ok := s.st.SubscriptionReady(c.Subscription)
		if ok && !force {
			wake := s.now + c.Wait
			if end := endsAt.Sub(epoch); end < wake {
				wake = max(end, s.now)
			}
			switch {
			case !ready:
				s.park(i, s.callKey(c), wake, true)
				return true
			case s.net.rng.chance(s.rate(fw.SlowPush)):
				f.fault = "slow-push"
				s.park(i, s.callKey(c), s.now+s.net.rng.between(10*time.Millisecond, fw.SlowPushMax), false)
				return true
			}
		}
		if ok && s.net.rng.chance(s.rate(fw.Drop)) && s.st.DropSubscription(c.Subscription, errSubDropped) {
			f.fault = "sub-drop"
		}
		s.expireShards()
		res.Event, res.Err = s.st.NextEvent(s.ctx, c.Subscription, c.Wait)
		if len(res.Event.ChildShards) > 0 {
			cs := append([]engine.Shard(nil), res.Event.ChildShards...)
			for j := range cs {
				s.tamperShard(&cs[j])
			}
			res.Event.ChildShards = cs
		}
	}
	return false
}

// park holds NextEvent call slot i until at (or, if wakeOnPut, until a
// record is put to shard or it closes, if sooner).
func (s *simulator) park(i int, shard string, at time.Duration, wakeOnPut bool) {
	s.slotState(i)
	gen := s.fo.gen[i]
	s.net.calls[i].pending++
	s.q.push(event{at: at, kind: evSubWake, a: uint64(i)<<32 | uint64(gen)})
	if wakeOnPut {
		s.fo.waiters[shard] = append(s.fo.waiters[shard], subWaiter{slot: i, gen: gen})
	}
}

// wakeShard answers the NextEvent calls parked on shard now: a record
// came, or the shard closed.
func (s *simulator) wakeShard(shard string) {
	if !s.w.FanOut.On {
		return
	}
	ws := s.fo.waiters[shard]
	if len(ws) == 0 {
		return
	}
	delete(s.fo.waiters, shard)
	for _, w := range ws {
		if s.fo.gen[w.slot] == w.gen && !s.net.calls[w.slot].answered {
			s.net.calls[w.slot].pending++
			s.q.push(event{at: s.now, kind: evSubWake, a: uint64(w.slot)<<32 | uint64(w.gen)})
		}
	}
}

// onSubWake answers a parked NextEvent, unless another wake did already.
func (s *simulator) onSubWake(a uint64) {
	i, gen := int(a>>32), uint32(a)
	f := s.net.calls[i]
	if s.fo.gen[i] != gen {
		f.pending--
		s.release(i)
		return
	}
	s.fo.gen[i]++
	s.fo.force[i] = true
	s.onApply(i, false)
}
