package fakes

import "time"

// Clock is the time source of a fake. Now must not go backwards between
// calls of one fake: the fakes assume a non-decreasing clock (Kinesis clamps
// record arrival times so that they never decrease within a shard).
type Clock interface {
	Now() time.Time
}

// defaultStart is the reading of the ManualClock a fake creates when its
// options name no Clock.
var defaultStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// ManualClock is a Clock that moves only when told to. Its zero value reads
// the zero time.Time; NewManualClock starts it elsewhere. It is not safe for
// concurrent use.
type ManualClock struct {
	now time.Time
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now returns the clock's current reading.
func (c *ManualClock) Now() time.Time { return c.now }

// Set moves the clock to t. Moving it backwards breaks the assumption of
// the fakes that read it.
func (c *ManualClock) Set(t time.Time) { c.now = t }

// Advance moves the clock forward by d and returns the new reading.
func (c *ManualClock) Advance(d time.Duration) time.Time {
	c.now = c.now.Add(d)
	return c.now
}

// ClockFunc adapts a function to Clock, e.g. a simulator's true virtual
// time: fakes.ClockFunc(func() time.Time { return epoch.Add(sim.now) }).
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }
