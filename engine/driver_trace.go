package engine

import (
	"log/slog"
	"strings"
)

// logTrace returns a Tracer that logs the trace events an operator must
// see, then hands every event to next (if set).
//
//   - TraceAggregateDropped: a corrupt KPL aggregate at WARN; one dropped
//     for the shard's hash key range at INFO (the KPL puts its user records
//     again, so nothing is lost).
//   - TraceAggregateUndecoded at WARN.
func logTrace(log *slog.Logger, next Tracer) Tracer {
	return func(e TraceEvent) {
		switch e.Kind {
		case TraceAggregateDropped:
			if strings.HasPrefix(e.Reason, DropCorrupt) {
				log.Warn("KPL aggregated record dropped: it does not de-aggregate", "lease", e.Key, "sequence", e.First, "reason", e.Reason)
			} else {
				log.Info("KPL aggregated record dropped: its user records belong to another shard, where the KPL puts them again",
					"lease", e.Key, "sequence", e.First, "user_records", e.Count, "reason", e.Reason)
			}
		case TraceAggregateUndecoded:
			log.Warn("record with the KPL magic bytes does not de-aggregate; delivered as it was read", "lease", e.Key, "sequence", e.First, "reason", e.Reason)
		}
		if next != nil {
			next(e)
		}
	}
}
