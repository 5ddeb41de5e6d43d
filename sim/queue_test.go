package sim

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// TestQueueInterleaved: events come out in (time, push order) order, however
// pushes and pops interleave.
func TestQueueInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var q queue
	var model []event
	var pushed uint64
	for step := 0; step < 20000; step++ {
		if q.len() == 0 || r.IntN(3) > 0 {
			pushed++
			e := event{at: time.Duration(r.IntN(500)), a: pushed}
			q.push(e)
			e.seq = pushed
			model = append(model, e)
			continue
		}
		sort.SliceStable(model, func(i, j int) bool { return less(&model[i], &model[j]) })
		want := model[0]
		model = model[1:]
		if got := q.pop(); got.at != want.at || got.a != want.a {
			t.Fatalf("step %d: popped (%v, %d), want (%v, %d)", step, got.at, got.a, want.at, want.a)
		}
	}
	if q.len() != len(model) {
		t.Fatalf("%d left, want %d", q.len(), len(model))
	}
}
