package sim

import (
	"flag"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/internal/planted"
)

var flagTestsJSON = flag.String("sim.tests.json", "", "TestReadsFlatCatchesEveryWorkerScans: write its row (internal/mutants, runner \"test\") to this file (make mutants)")

// readsPerShardHour returns the lease-table rows read per shard-hour of a
// world of workers workers and 40 shards without faults, its assignment
// by an assigner, with mutation planted.
func readsPerShardHour(t *testing.T, workers int, mutation string) float64 {
	t.Helper()
	res, err := Run(Options{Seed: 1, Workers: workers, Shards: 40, Faults: "none", Chaos: 4 * time.Minute, Quiet: 2 * time.Minute,
		Assignment: "assigner", Mutation: mutation, NoExcerpts: true, LinBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	return res.Figures.TableRowsPerShardHour
}

// readsGrowth is how many times the rows read per shard-hour of 12
// workers are those of 2.
func readsGrowth(t *testing.T, mutation string) float64 {
	return readsPerShardHour(t, 12, mutation) / readsPerShardHour(t, 2, mutation)
}

// TestReadsPerShardHourFlatInWorkers: with an assigner, reads of the table
// per shard-hour do not grow with the workers (only the assigner scans;
// the others read the rows that wait for them): 12 workers read at most
// 1.5 times what 2 read (the measured figures, docs/figures.md: 1,123
// rows at 2 workers, 1,332 at 50).
func TestReadsPerShardHourFlatInWorkers(t *testing.T) {
	if g := readsGrowth(t, ""); g > 1.5 {
		t.Errorf("rows read per shard-hour grow %.2f times from 2 to 12 workers, want at most 1.5", g)
	}
}

// TestReadsFlatCatchesEveryWorkerScans: the planted bug every-worker-scans
// (every worker scans as the assigner does) breaks
// TestReadsPerShardHourFlatInWorkers's bound.
func TestReadsFlatCatchesEveryWorkerScans(t *testing.T) {
	planted.SkipUnlessEnabled(t)
	const bug = EngineMutationPrefix + "every-worker-scans"
	g := readsGrowth(t, bug)
	caught := g > 1.5
	if !caught {
		t.Errorf("with %s rows read per shard-hour grow only %.2f times from 2 to 12 workers: the test does not see it", bug, g)
	}
	if *flagTestsJSON != "" {
		row := mutants.Row{Name: bug, Class: mutants.Classes[bug], Caught: caught, Invariant: "TestReadsPerShardHourFlatInWorkers", Runner: "test"}
		if err := mutants.WriteKeeping(*flagTestsJSON, []mutants.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
}
