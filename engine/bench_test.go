package engine

import (
	"testing"
	"time"
)

// BenchmarkWorkerSteadyState measures the decision core alone: 4 workers
// holding 200 leases between them, records flowing, renewals, scans and
// checkpoints, in virtual time. It reports the cost of one Step.
func BenchmarkWorkerSteadyState(b *testing.B) {
	const shards = 200
	c := newCluster(&testing.T{}, shards, Config{})
	for _, id := range []string{"A", "B", "C", "D"} {
		c.start(id)
	}
	c.run(2 * time.Minute) // balanced
	steps := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.feed(shards)
		before := c.steps
		c.run(time.Second)
		steps += c.steps - before
	}
	b.StopTimer()
	if steps > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
		b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
	}
}
