package engine

// observe is the driver's look at every trace event of its worker, before
// the configured Tracer gets it: it logs what an operator must see. It runs
// on the loop's goroutine, inside Step.
func (c *Consumer) observe(e TraceEvent) {
	switch e.Kind {
	case TraceMalformedRow:
		// The core reports each malformed key once per worker; the row is
		// skipped (never taken, changed or deleted) until someone fixes or
		// removes it.
		c.log.Warn("malformed lease row skipped: fix or delete it by hand", "key", e.Key, "reason", e.Reason)
	}
}
