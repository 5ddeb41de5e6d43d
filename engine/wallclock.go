package engine

import "time"

// The decision core keeps the wall reading of each Step (Now.Wall) apart
// from its monotonic one, and reads it only through wallClock, which
// reports every read in the trace (TraceWallRead). No lease decision may
// depend on the wall clock: a worker's wall clock may be offset from the
// others' by minutes and may step, forward or back, at any moment (NTP);
// lease expiry is timed on the monotonic clock alone (see observation).
// The simulator's checkers flag a lease decision taken in a step that
// read the wall clock (invariant W1 of package sim/check), and a test of
// this package fails on any other read of Now.Wall in the core.

// wallClock returns the wall reading of the current Step and reports the
// read, with its purpose, in the trace (once per purpose and Step).
func (w *Worker) wallClock(purpose string) time.Time {
	if w.wallRead != purpose {
		w.wallRead = purpose
		w.emit(TraceEvent{Kind: TraceWallRead, Reason: purpose})
	}
	return w.wall
}
