package engine

import "strings"

// observe is the driver's look at every trace event of its worker, before
// the configured Tracer gets it: it logs what an operator must see (every
// lease taken, handed over, released or lost, with why; the assigner's
// moves; malformed rows; dropped aggregates). It runs on the loop's
// goroutine, inside Step.
func (c *Consumer) observe(e TraceEvent) {
	if e.Key == AssignerKey {
		switch e.Kind {
		case TraceLeaseAcquired:
			c.log.Info("became the assigner: this worker hands leases out", "previous", e.Previous)
		case TraceLeaseLost:
			c.log.Warn("no longer the assigner", "cause", e.Reason)
		case TraceLeaseReleased:
			c.log.Info("released the assigner row")
		}
		return
	}
	if IsReserved(e.Key) {
		return
	}
	switch e.Kind {
	case TraceLeaseAcquired:
		c.log.Info("lease taken", "lease", e.Key, "shard", e.Shard.String(), "reason", e.Reason, "previous_owner", e.Previous)
	case TraceHandingOver:
		c.log.Info("handing the lease over", "lease", e.Key, "shard", e.Shard.String(), "to", strings.TrimPrefix(e.Reason, "to "))
	case TraceLeaseReleased:
		c.log.Info("lease released", "lease", e.Key, "shard", e.Shard.String(), "reason", e.Reason)
	case TraceLeaseLost:
		c.log.Warn("lease lost", "lease", e.Key, "shard", e.Shard.String(), "cause", e.Reason)
	case TraceAssigned:
		c.log.Info("assigner: lease moved", "lease", e.Key, "shard", e.Shard.String(), "what", e.Reason, "previous_owner", e.Previous)
	case TraceModeFallback:
		c.log.Warn("taking leases without an assigner", "reason", e.Reason)
	case TraceRenewalFallback:
		c.log.Warn("renewing every lease's row: the table is shared with or was adopted from KCL", "lease", e.Key, "reason", e.Reason)
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
