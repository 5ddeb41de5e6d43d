package sim

import (
	"reflect"
	"testing"
	"time"
)

// TestMomentsLandInTheirWindow: a run that keeps moments (as the explorer's
// do) is the run without them (the same trace hash); its moments are
// windows of the chaos phase of workers among its slots; and the mutation
// aim-window adds a fault of a moment's worker inside that moment's window,
// to a world that runs exactly as its parent up to the fault (the prefix
// of the trace before it is the parent's), so the fault meets the window.
func TestMomentsLandInTheirWindow(t *testing.T) {
	aimed := 0
	for _, seed := range []uint64{3, 5, 9} {
		o := Options{Seed: seed, Faults: "swarm", NoExcerpts: true, KeepTrace: true}
		plain, err := Run(o)
		if err != nil {
			t.Fatal(err)
		}
		o.moments = true
		res, err := Run(o)
		if err != nil {
			t.Fatal(err)
		}
		if res.TraceHash != plain.TraceHash {
			t.Fatalf("seed %d: keeping moments changed the run: hash %x, not %x", seed, res.TraceHash, plain.TraceHash)
		}
		if len(res.Moments) == 0 || len(res.Moments) > maxMoments {
			t.Fatalf("seed %d: %d moments kept (want 1-%d)", seed, len(res.Moments), maxMoments)
		}
		for _, m := range res.Moments {
			if m.From < time.Second || m.To < m.From || m.From > res.World.Chaos || m.Worker < 0 || m.Worker >= res.World.Workers+8 {
				t.Fatalf("seed %d: moment %+v is not a window of the chaos phase (%v) of a slot", seed, m, res.World.Chaos)
			}
		}
		w := SpecOf(o, res)
		sh := ShapeOf(res)
		if !reflect.DeepEqual(sh.Moments, res.Moments) {
			t.Fatalf("seed %d: the shape does not carry the run's moments", seed)
		}
		r := newRNG(seed, streamExplore)
		for try := 0; try < 40 && aimed < 6; try++ {
			a, how, ok := aimWindow(sh, r, sh.Workers, func(d time.Duration) time.Duration { return d })
			if !ok {
				continue
			}
			var in *OpMoment
			for i := range sh.Moments {
				if m := &sh.Moments[i]; m.Worker == workerOf(a) && a.At >= m.From && a.At <= m.To {
					in = m
					break
				}
			}
			if in == nil {
				t.Fatalf("seed %d: %s is inside no window of its worker", seed, how)
			}
			if a.At < time.Second || a.At > sh.Chaos-time.Second {
				continue // the explorer clamps it into the chaos phase: no longer in the window
			}
			child := w
			child.Replace = true
			child.Schedule = append(append([]Action(nil), w.Schedule...), a)
			sortSchedule(child.Schedule)
			co := child.RunOptions()
			co.NoExcerpts, co.KeepTrace = true, true
			cres, err := Run(co)
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, how, err)
			}
			n := 0
			for n < len(plain.Trace) && plain.Trace[n].T < a.At {
				n++
			}
			if len(cres.Trace) < n || !reflect.DeepEqual(cres.Trace[:n], plain.Trace[:n]) {
				t.Fatalf("seed %d: %s: the child's run differs from its parent's before the fault", seed, how)
			}
			aimed++
		}
	}
	if aimed < 3 {
		t.Fatalf("aim-window aimed %d faults inside the chaos phase over 3 seeds (want 3 or more)", aimed)
	}
}

func workerOf(a Action) int {
	if len(a.Workers) > 0 {
		return a.Workers[0]
	}
	return a.Worker
}
