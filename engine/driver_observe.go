package engine

import "strings"

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
	case TraceAggregateDropped:
		if strings.HasPrefix(e.Reason, DropCorrupt) {
			c.log.Warn("KPL aggregated record dropped: it does not de-aggregate", "lease", e.Key, "sequence", e.First, "reason", e.Reason)
		} else {
			c.log.Info("KPL aggregated record dropped: its user records belong to another shard, where the KPL puts them again",
				"lease", e.Key, "sequence", e.First, "user_records", e.Count, "reason", e.Reason)
		}
	case TraceAggregateUndecoded:
		c.log.Warn("record with the KPL magic bytes does not de-aggregate; delivered as it was read", "lease", e.Key, "sequence", e.First, "reason", e.Reason)
	}
}
