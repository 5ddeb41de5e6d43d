package sim

import (
	"flag"
	"testing"
	"time"
)

func benchSim(b *testing.B, workers, shards int, chaos time.Duration, faults string) {
	var virt float64
	var events uint64
	for i := 0; i < b.N; i++ {
		res, err := Run(Options{Seed: uint64(i + 1), Workers: workers, Shards: shards, Chaos: chaos, Quiet: time.Nanosecond, Faults: faults})
		if err != nil {
			b.Fatal(err)
		}
		virt += res.VirtualSeconds
		events += res.Events
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(virt/sec, "virtual-s/s")
	b.ReportMetric(float64(events)/sec, "events/s")
}

// BenchmarkSim10x100: 10 workers, 100 shards, 10 virtual minutes of
// chaos (swarm faults).
func BenchmarkSim10x100(b *testing.B) { benchSim(b, 10, 100, 10*time.Minute, "swarm") }

// BenchmarkSim10x100Quiet: the same without faults.
func BenchmarkSim10x100Quiet(b *testing.B) { benchSim(b, 10, 100, 10*time.Minute, "none") }

var flagBig = flag.Bool("sim.big", false, "run the 100 workers x 2,000 shards benchmarks (minutes each)")

// BenchmarkSim100x2000: 100 workers, 2,000 shards, 2 virtual minutes
// (with -sim.big).
func BenchmarkSim100x2000(b *testing.B) {
	if !*flagBig {
		b.Skip("set -sim.big")
	}
	benchSim(b, 100, 2000, 2*time.Minute, "none")
}
