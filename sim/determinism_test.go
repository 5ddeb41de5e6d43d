package sim

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// TestDeterminism: the same seed gives the same trace hash, twice in one
// process, under GOMAXPROCS 1 and 4, and in a fresh process.
func TestDeterminism(t *testing.T) {
	seeds := []uint64{1, 7, 42}
	hashes := map[uint64]uint64{}
	for _, seed := range seeds {
		a, err := Run(Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Run(Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if a.TraceHash != b.TraceHash || a.Events != b.Events {
			t.Fatalf("seed %d: two runs differ: %016x/%d vs %016x/%d", seed, a.TraceHash, a.Events, b.TraceHash, b.Events)
		}
		hashes[seed] = a.TraceHash
	}
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		for _, seed := range seeds {
			// with and without the trace kept: the same run
			for _, keep := range []bool{false, true} {
				r, err := Run(Options{Seed: seed, KeepTrace: keep})
				if err != nil {
					t.Fatal(err)
				}
				if r.TraceHash != hashes[seed] {
					t.Errorf("seed %d under GOMAXPROCS=%d (trace kept: %v): hash %016x, want %016x", seed, procs, keep, r.TraceHash, hashes[seed])
				}
				if keep && (len(r.Trace) != r.Records || trace.HashRecords(r.Trace) != r.TraceHash) {
					t.Errorf("seed %d: the kept trace has %d records hashing to %016x; the run had %d records, hash %016x",
						seed, len(r.Trace), trace.HashRecords(r.Trace), r.Records, r.TraceHash)
				}
				if !keep && r.Trace != nil {
					t.Errorf("seed %d: a trace was kept without KeepTrace", seed)
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
	if testing.Short() || os.Getenv("SIM_DETERMINISM_CHILD") != "" {
		return
	}
	// a fresh process under each GOMAXPROCS
	for _, procs := range []string{"1", "4"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeterminismChild$", "-test.v")
		cmd.Env = append(os.Environ(), "SIM_DETERMINISM_CHILD=1", "GOMAXPROCS="+procs)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("child GOMAXPROCS=%s: %v\n%s", procs, err, out.String())
		}
		for _, seed := range seeds {
			want := fmt.Sprintf("hash %d %016x", seed, hashes[seed])
			if !strings.Contains(out.String(), want) {
				t.Errorf("child GOMAXPROCS=%s: want %q in\n%s", procs, want, out.String())
			}
		}
	}
}

// TestDeterminismChild prints the hashes for TestDeterminism's children.
func TestDeterminismChild(t *testing.T) {
	if os.Getenv("SIM_DETERMINISM_CHILD") == "" {
		t.Skip("run by TestDeterminism")
	}
	for _, seed := range []uint64{1, 7, 42} {
		r, err := Run(Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("hash %d %016x\n", seed, r.TraceHash)
	}
}

// TestFailingRunRerunsForExcerpts: a run that breaks an invariant without
// its trace kept is re-run with it to fill in the excerpts, and reports
// exactly what the run that kept its trace from the start reports.
func TestFailingRunRerunsForExcerpts(t *testing.T) {
	var o Options
	var a *Result
	for seed := uint64(1); seed <= 10 && (a == nil || a.OK()); seed++ {
		o = Options{Seed: seed, Mutation: "unfenced-checkpoint", Faults: "partition,pause,crash,clog", Workers: 4, Shards: 8, Chaos: time.Minute, Assignment: "scan"}
		var err error
		if a, err = Run(o); err != nil {
			t.Fatal(err)
		}
	}
	if a.OK() {
		t.Fatal("the planted bug was not caught in 10 seeds: the test needs a failing run")
	}
	if a.Trace != nil {
		t.Error("the re-run's trace was returned without KeepTrace")
	}
	for _, v := range a.Violations {
		if len(v.Excerpt) == 0 {
			t.Errorf("violation without an excerpt: %v", v)
		}
	}
	o.KeepTrace = true
	b, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if a.TraceHash != b.TraceHash || !reflect.DeepEqual(a.Violations, b.Violations) || !reflect.DeepEqual(a.Tolerated, b.Tolerated) || a.Figures != b.Figures {
		t.Errorf("the run without its trace (hash %016x, %d violations) differs from the one with it (hash %016x, %d violations)",
			a.TraceHash, len(a.Violations), b.TraceHash, len(b.Violations))
	}
	o.KeepTrace, o.NoExcerpts = false, true
	c, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.TraceHash != a.TraceHash || len(c.Violations) != len(a.Violations) || len(c.Violations[0].Excerpt) != 0 {
		t.Errorf("NoExcerpts: hash %016x, %d violations, first excerpt %d lines; want hash %016x, %d violations, no excerpt",
			c.TraceHash, len(c.Violations), len(c.Violations[0].Excerpt), a.TraceHash, len(a.Violations))
	}
}
