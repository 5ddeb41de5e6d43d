package main

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim"
)

// worldHeader describes a run's drawn world for the -seed header, for
// people: one topic per line, an engine setting left at its default shown
// as the value the engine uses ("10s (default)"), only the fault rates in
// force, as percentages.
func worldHeader(w sim.World) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d workers, %d shards, chaos %v + quiet %v\n", w.Workers, w.Shards, w.Chaos, w.Quiet)
	faults := "none"
	if len(w.Faults) > 0 {
		faults = strings.Join(w.Faults, ", ")
	}
	fmt.Fprintf(&b, "  faults: %s\n", faults)
	fmt.Fprintf(&b, "  engine: %s\n", engineLine(w.Engine))
	fmt.Fprintf(&b, "  fault rates: %s\n", ratesLine(w.Rates))
	balance := "not checked"
	if w.Balance {
		balance = "checked"
	}
	fmt.Fprintf(&b, "  world: table latency %v+%v, stream latency %v+%v, call timeout %v, retention %v, put rate %.2f/s/shard, clock drift ±%.4f, checkpoint pace %v, liveness bound %v, balance %s\n",
		w.TableLatency.Base.Round(time.Microsecond), w.TableLatency.Tail.Round(time.Microsecond), w.StreamLatency.Base.Round(time.Microsecond),
		w.StreamLatency.Tail.Round(time.Microsecond), w.CallTimeout, w.Retention, w.PutRate, w.DriftBound, w.CheckpointPace, w.Bound, balance)
	more := fmt.Sprintf("reading %v", w.FanOut)
	if w.SkipAfter > 0 {
		more += fmt.Sprintf(", a batch skipped after %d failed deliveries in a row", w.SkipAfter)
	}
	more += assignmentText(w.Assignment) + w.KPL.String() + w.Boundary.String()
	fmt.Fprintf(&b, "  %s\n", strings.TrimPrefix(more, "; "))
	if w.Etcd.On {
		fmt.Fprintf(&b, "  store: %s\n", strings.TrimPrefix(w.Etcd.String(), "; store "))
	}
	return b.String()
}

// assignmentText is the world's assignment mode and the pending index's
// lag, "exact" for an index written with the rows (an etcd world's).
func assignmentText(a sim.AssignmentWorld) string {
	if a.IndexLag == 0 {
		return fmt.Sprintf("; assignment %s (index exact)", a.Mode)
	}
	return a.String()
}

// engineLine names each engine setting with the value the engine uses,
// marking the defaults.
func engineLine(e sim.EngineParams) string {
	cfg := engine.Config{Owner: "w", Streams: []engine.StreamConfig{{Name: "s"}},
		LeaseDuration: e.LeaseDuration, RenewInterval: e.RenewInterval, SafetyMargin: e.SafetyMargin, MaxClockDrift: e.MaxClockDrift,
		TakeInterval: e.TakeInterval, ShardSyncInterval: e.ShardSyncInterval, MaxLeasesForWorker: e.MaxLeasesForWorker,
		MaxLeasesToStealAtOnce: e.MaxLeasesToStealAtOnce, GetRecordsLimit: e.GetRecordsLimit, IdleTimeBetweenReads: e.IdleTimeBetweenReads,
		ConsistentTakeScans: e.ConsistentTakeScans}
	full, err := cfg.Validate()
	if err != nil {
		full = cfg // the simulator's worlds are valid; show what was drawn
	}
	def := func(drawn bool, v string) string {
		if drawn {
			return v
		}
		return v + " (default)"
	}
	leases := "no cap"
	if full.MaxLeasesForWorker > 0 {
		leases = fmt.Sprint(full.MaxLeasesForWorker)
	}
	scans := "eventually consistent"
	if full.ConsistentTakeScans {
		scans = "strongly consistent"
	}
	return strings.Join([]string{
		"lease " + def(e.LeaseDuration != 0, full.LeaseDuration.String()),
		"renew " + def(e.RenewInterval != 0, full.RenewInterval.String()),
		"margin " + def(e.SafetyMargin != 0, full.SafetyMargin.String()),
		"clock drift bound " + def(e.MaxClockDrift != 0, fmt.Sprintf("%.4f", full.MaxClockDrift)),
		"take scans every " + def(e.TakeInterval != 0, full.TakeInterval.String()),
		"shard sync every " + def(e.ShardSyncInterval != 0, full.ShardSyncInterval.String()),
		"leases per worker " + def(e.MaxLeasesForWorker != 0, leases),
		"steals per round " + def(e.MaxLeasesToStealAtOnce != 0, fmt.Sprint(full.MaxLeasesToStealAtOnce)),
		"records per read " + def(e.GetRecordsLimit != 0, fmt.Sprint(full.GetRecordsLimit)),
		"idle between reads " + def(e.IdleTimeBetweenReads != 0, full.IdleTimeBetweenReads.String()),
		"take scans " + scans,
	}, ", ")
}

// ratesLine names the fault rates in force (non-zero), as percentages of
// calls (durations as they are), by their field names in words.
func ratesLine(r sim.Rates) string {
	v := reflect.ValueOf(r)
	var parts []string
	for i := range v.NumField() {
		f, name := v.Field(i), words(v.Type().Field(i).Name)
		switch x := f.Interface().(type) {
		case float64:
			if x != 0 {
				parts = append(parts, fmt.Sprintf("%s %.2f%%", name, 100*x))
			}
		case time.Duration:
			if x != 0 {
				parts = append(parts, fmt.Sprintf("%s %v", name, x.Round(time.Millisecond)))
			}
		default:
			if !f.IsZero() {
				parts = append(parts, fmt.Sprintf("%s %v", name, x))
			}
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// words turns a Go field name into lower-case words: "RequestLoss" is
// "request loss".
func words(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
