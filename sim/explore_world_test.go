package sim

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWorldSpecReplaysTheSeed: a seed's drawn schedule made explicit
// (SpecOf) runs the seed's run exactly; written to a world file and read
// back it is the same world and the same run; and a schedule that
// replaces the drawn one changes the run.
func TestWorldSpecReplaysTheSeed(t *testing.T) {
	for _, seed := range []uint64{3, 9} {
		o := Options{Seed: seed, Faults: "swarm", NoExcerpts: true}
		res, err := Run(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Drawn) == 0 {
			t.Fatalf("seed %d drew no schedule: pick another seed", seed)
		}
		w := SpecOf(o, res)
		path := filepath.Join(t.TempDir(), "world.json")
		if err := WriteWorld(path, w); err != nil {
			t.Fatal(err)
		}
		back, err := ReadWorld(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, w) {
			t.Fatalf("seed %d: the world file reads back as\n%+v\nnot\n%+v", seed, back, w)
		}
		o2 := back.RunOptions()
		o2.NoExcerpts = true
		res2, err := Run(o2)
		if err != nil {
			t.Fatal(err)
		}
		if res2.TraceHash != res.TraceHash {
			t.Errorf("seed %d: the world file ran with trace hash %016x, the seed %016x", seed, res2.TraceHash, res.TraceHash)
		}
		// replaced: no drawn faults at all
		none := back
		none.Schedule = nil
		o3 := none.RunOptions()
		o3.NoExcerpts = true
		res3, err := Run(o3)
		if err != nil {
			t.Fatal(err)
		}
		if res3.TraceHash == res.TraceHash || len(res3.Drawn) != 0 {
			t.Errorf("seed %d: an empty schedule that replaces the drawn one ran the same run (%016x, %d drawn)", seed, res3.TraceHash, len(res3.Drawn))
		}
	}
}

// TestWorldFileRejectsBadInput: unknown fields, kinds, roles and bad
// durations are refused with what is wrong.
func TestWorldFileRejectsBadInput(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"version":1,"seed":1,"bogus":2}`, "unknown field"},
		{`{"version":2,"seed":1}`, "version 2"},
		{`{"version":1,"seed":1,"replace":true,"schedule":[{"at":"1s","kind":"explode"}]}`, "unknown action kind"},
		{`{"version":1,"seed":1,"replace":true,"schedule":[{"at":"1s","kind":"crash","role":"king"}]}`, "unknown role"},
		{`{"version":1,"seed":1,"replace":true,"schedule":[{"at":"soon","kind":"crash"}]}`, `at "soon"`},
		{`{"version":1,"seed":1,"chaos":"long"}`, `chaos "long"`},
	} {
		var w WorldSpec
		err := json.Unmarshal([]byte(c.in), &w)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.in, err, c.want)
		}
	}
}

// TestCoverageDeterministic: the same world gives the same coverage map;
// another world a different one; the map is neither empty nor one state.
func TestCoverageDeterministic(t *testing.T) {
	states := func(seed uint64) []uint64 {
		c := NewCoverage()
		if _, err := Run(Options{Seed: seed, Observe: c.Observe, NoExcerpts: true}); err != nil {
			t.Fatal(err)
		}
		return c.States()
	}
	a, b, other := states(5), states(5), states(6)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 5 reached %d states, then %d", len(a), len(b))
	}
	if len(a) < 20 {
		t.Fatalf("seed 5 reached only %d abstract states", len(a))
	}
	if reflect.DeepEqual(a, other) {
		t.Fatal("seeds 5 and 6 reached the same abstract states")
	}
}

// TestCoverageTracksPhases: a hand-made trace moves a lease through its
// phases and a worker through its states; each change is a new state,
// repeating one is not.
func TestCoverageTracksPhases(t *testing.T) {
	c := NewCoverage()
	recs := []traceRecord{
		{kind: "proc-start", proc: 0, worker: 0},
		{kind: "lease-created", key: "s:1", proc: 0, worker: 0},
		{kind: "lease-acquired", key: "s:1", proc: 0, worker: 0},
		{kind: "acting", key: "s:1", proc: 0, worker: 0},
		{kind: "reply", key: "s:1", proc: 0, worker: 0, reason: "renew", outcome: "ok", call: 1},
		{kind: "reply", key: "s:1", proc: 0, worker: 0, reason: "renew", outcome: "ok", call: 2}, // the same state
		{kind: "reply", key: "s:1", proc: 0, worker: 0, reason: "renew", outcome: "timeout", call: 3},
		{kind: "call-end", key: "s:1", proc: 0, worker: 0, reason: "renew", call: 3},
		{kind: "proc-stop", proc: 0, worker: 0},
	}
	var counts []int
	for _, r := range recs {
		c.Observe(*r.record(t))
		counts = append(counts, len(c.States()))
	}
	want := []int{1, 2, 3, 5, 6, 6, 8, 9, 11} // the worker after the call end is as it was before the timeout
	if !reflect.DeepEqual(counts, want) {
		t.Fatalf("states after each record: %v, want %v", counts, want)
	}
}
