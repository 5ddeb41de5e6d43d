package sim

import "time"

// epoch is the true-time origin of every run's wall clocks.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// wclock is one process's view of time: a monotonic reading with rate
// drift, and a wall reading with offset, drift and steps.
type wclock struct {
	monoOrigin time.Duration
	drift      float64 // rate error of both readings: local = (1+drift)·true
	wallOffset time.Duration
	steps      time.Duration // sum of the wall steps so far
}

func (c *wclock) mono(t time.Duration) time.Duration {
	return c.monoOrigin + t + time.Duration(float64(t)*c.drift)
}

func (c *wclock) wall(t time.Duration) time.Time {
	return epoch.Add(c.wallOffset + t + time.Duration(float64(t)*c.drift) + c.steps)
}

// epochNanos is epoch in Unix nanoseconds.
var epochNanos = epoch.UnixNano()

// wallNanos is wall(t).UnixNano(), without building the time.Time.
func (c *wclock) wallNanos(t time.Duration) int64 {
	return epochNanos + int64(c.wallOffset+t+time.Duration(float64(t)*c.drift)+c.steps)
}

// trueAt returns the earliest true time at which the monotonic reading is
// at least m.
func (c *wclock) trueAt(m time.Duration) time.Duration {
	t := time.Duration(float64(m-c.monoOrigin) / (1 + c.drift))
	for c.mono(t) < m {
		t++
	}
	for t > 0 && c.mono(t-1) >= m {
		t--
	}
	return t
}
