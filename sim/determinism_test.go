package sim

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
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
			r, err := Run(Options{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if r.TraceHash != hashes[seed] {
				t.Errorf("seed %d under GOMAXPROCS=%d: hash %016x, want %016x", seed, procs, r.TraceHash, hashes[seed])
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
