package sim

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestMutateKeepsWorldsValid: over a few seeds and many draws, every
// mutated world keeps its actions inside the chaos phase, its workers
// among the slots, its mid-act pauses within the slack, survives a
// round trip through its file format, and runs (one of them per seed).
func TestMutateKeepsWorldsValid(t *testing.T) {
	for _, seed := range []uint64{2, 7} {
		o := Options{Seed: seed, NoExcerpts: true}
		res, err := Run(o)
		if err != nil {
			t.Fatal(err)
		}
		w, sh := SpecOf(o, res), ShapeOf(res)
		r := newRNG(seed, streamExplore)
		ops := map[string]bool{}
		for i := 0; i < 300; i++ {
			var how string
			w, how = Mutate(w, sh, r)
			ops[how[:4]] = true
			for j, a := range w.Schedule {
				if a.At < time.Second || a.At > sh.Chaos-time.Second {
					t.Fatalf("seed %d, %s: action %d at %v outside the chaos phase (%v)", seed, how, j, a.At, sh.Chaos)
				}
				if a.Worker < 0 || a.Worker >= sh.Workers {
					t.Fatalf("seed %d, %s: action %d on worker %d of %d", seed, how, j, a.Worker, sh.Workers)
				}
				for _, x := range a.Workers {
					if x < 0 || x >= sh.Workers {
						t.Fatalf("seed %d, %s: action %d on worker %d of %d", seed, how, j, x, sh.Workers)
					}
				}
				if a.Kind == ActPause && a.MidAct && a.Dur > sh.Slack {
					t.Fatalf("seed %d, %s: a mid-act pause of %v beyond the slack %v", seed, how, a.Dur, sh.Slack)
				}
			}
			b, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			var back WorldSpec
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, w) {
				t.Fatalf("seed %d, %s: the world does not survive its file format: %v", seed, how, err)
			}
			if len(w.Schedule) > 60 {
				w.Schedule = w.Schedule[:30]
			}
		}
		if len(ops) < 5 {
			t.Errorf("seed %d: only %d kinds of mutation in 300 draws: %v", seed, len(ops), ops)
		}
		mo := w.RunOptions()
		mo.NoExcerpts = true
		mres, err := Run(mo)
		if err != nil {
			t.Fatalf("seed %d: the mutated world does not run: %v", seed, err)
		}
		if !mres.Inside {
			t.Errorf("seed %d: the mutated world left the assumptions: %v", seed, mres.Outside)
		}
	}
}

// TestExplorerResumes: a search stopped after k executions and resumed
// from its state (through JSON) makes the same choices and reaches the
// same state as one that ran straight through.
func TestExplorerResumes(t *testing.T) {
	const n, k = 6, 3
	straight := &Explorer{St: NewExploreState(11, "", false, 1), Init: 2}
	for i := 0; i < n; i++ {
		if _, err := straight.Step(); err != nil {
			t.Fatal(err)
		}
	}
	first := &Explorer{St: NewExploreState(11, "", false, 1), Init: 2}
	for i := 0; i < k; i++ {
		if _, err := first.Step(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(first.St)
	if err != nil {
		t.Fatal(err)
	}
	var st ExploreState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	resumed := &Explorer{St: &st, Init: 2}
	for i := k; i < n; i++ {
		if _, err := resumed.Step(); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := json.Marshal(straight.St)
	c, _ := json.Marshal(resumed.St)
	if string(a) != string(c) {
		t.Fatalf("the resumed search differs from the straight one:\n%s\n%s", c, a)
	}
	if len(straight.St.Corpus) < 2 || straight.St.Distinct() == 0 {
		t.Fatalf("the search kept %d worlds and %d states", len(straight.St.Corpus), straight.St.Distinct())
	}
	mutated := 0
	for _, en := range straight.St.Corpus {
		if en.World.Note != "" && en.World.Note[:4] == "exec" {
			mutated++
		}
	}
	t.Logf("%d executions: %d states, corpus %d (%d mutated)", n, straight.St.Distinct(), len(straight.St.Corpus), mutated)
}
