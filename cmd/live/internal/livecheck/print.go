package livecheck

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/sim/check"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// stopWords says how the worker processes ended, in words: "2 stopped
// cleanly, 1 killed".
func stopWords(stops map[string]int) string {
	words := map[string]string{
		"exit":          "stopped cleanly",
		"error":         "stopped on an error",
		"crash":         "killed by the harness",
		"vanished":      "ended without a word (killed?)",
		"second signal": "exited at a second signal",
	}
	var out []string
	for k, n := range stops {
		w, ok := words[k]
		if !ok {
			w = "ended (" + k + ")"
		}
		out = append(out, fmt.Sprintf("%d %s", n, w))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("run: %s, %s (%s: %s)", secs(r.Duration), plural(r.Processes, "process", "processes"), plural(r.Workers, "worker process", "worker processes"), stopWords(r.Stops))
	wc := r.Writes
	p("lease-table writes: %d sent, %d applied (%d acknowledged, %d of unknown outcome to the writer, shown applied by the history), %d not applied; %d applies reordered by version",
		wc.Sent, wc.Acknowledged+wc.Inferred, wc.Acknowledged, wc.Inferred, wc.NotApplied, wc.Reordered)
	p("lease-table writes sent by class: %s", r.writesLine())
	p("")
	p("records")
	p("  produced (as the producer recorded)          %d", r.Produced)
	if r.Aggregated > 0 {
		p("    user records of KPL aggregates, each counted %d", r.Aggregated)
	}
	p("  delivered at least once                      %d", r.Delivered)
	p("  lost (never delivered)                       %d", r.Lost)
	for _, e := range r.LostExamples {
		p("      %s", e)
	}
	p("  delivered, not covered by a final checkpoint %d", r.Uncovered)
	for _, e := range r.UncoveredEx {
		p("      %s", e)
	}
	if r.BeforeLatest > 0 {
		p("  put before the shard's first LATEST iterator, never read (outside the contract) %d", r.BeforeLatest)
	}
	if r.NotRequired > 0 {
		p("  put within the grace period at the end (not required) %d", r.NotRequired)
	}
	if r.Unrecorded > 0 {
		p("  received but never recorded as put (earlier or unrecorded producers) %d, in %s", r.Unrecorded, strings.Join(r.UnrecordedShards, ", "))
		p("      not checked: the history cannot know whether every such record was delivered; only records recorded as put are")
	}
	p("  delivered more than once                     %d (%d extra deliveries)", r.Duplicated, r.Extra)
	p("    re-delivered after the last checkpoint     %d", r.DupCauses["after-checkpoint"])
	p("    retried after a failed batch               %d", r.DupCauses["failed-batch-retry"])
	p("    anything else                              %d", r.DupCauses["other"])
	for _, e := range r.DupOther {
		p("      %s", e)
	}
	p("  child shards read: %d from splits, %d from merges (both parents first: S5)", r.ChildrenSplit, r.ChildrenMerge)
	p("  records put into a child shard before anyone held its lease: %d, delivered %d", r.ChildEarly, r.ChildEarlyGot)
	if len(r.Malformed) > 0 {
		p("")
		p("lease table: %d malformed rows (skipped by the engine, never changed; fix or delete them by hand)", len(r.Malformed))
		for _, m := range r.Malformed {
			key := m.Key
			if key == "" {
				key = "(no readable leaseKey)"
			}
			p("  %s: %s", key, m.Reason)
		}
	}
	p("")
	p("leases")
	p("  checkpoint regressions in the write logs     %d", r.CheckpointRegressions)
	for _, e := range r.RegressionEx {
		p("      %s", e)
	}
	p("  writes landed after the writer lost the lease %d", r.LateWrites)
	for _, e := range r.LateEx {
		p("      %s", e)
	}
	losses := make([]string, 0, len(r.Losses))
	for k, n := range r.Losses {
		losses = append(losses, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(losses)
	p("  lease losses: %s; balance steals %d", orNone(strings.Join(losses, ", ")), r.BalanceSteals)
	p("  takes of an expired lease before the holder's lease ran out (stale view) %d", r.EarlyTakes)
	for _, e := range r.EarlyTakeEx {
		p("      %s", e)
	}
	p("  healthy workers' leases lost to another worker's write (not a balance steal) %d", r.HealthyLostToOthers)
	for _, e := range r.HealthyLostEx {
		p("      %s", e)
	}
	p("  healthy workers' leases expired (their renewals did not apply in time) %d", r.HealthyExpired)
	p("")
	p("faults")
	if len(r.Kills) == 0 && len(r.Pauses) == 0 && len(r.Vanished) == 0 {
		p("  none recorded")
	}
	for _, k := range r.Kills {
		p("  kill  %-14s at %8s: %d shards, failover max %s mean %s%s", k.Who, secs(k.At), k.Shards, secs(k.Max), secs(k.Mean), pending(k.Pending))
	}
	for _, k := range r.Vanished {
		p("  ended without a word %-14s at %8s (killed?): %d shards, failover max %s mean %s%s", k.Who, secs(k.At), k.Shards, secs(k.Max), secs(k.Mean), pending(k.Pending))
	}
	for _, x := range r.Pauses {
		p("  %-5s %-14s at %8s for %s: %d shards, takeover max %s mean %s%s; leases expired in its own view %d, acts on them after that %d",
			x.Kind, x.Who, secs(x.At), secs(x.Resumed-x.At), x.Shards, secs(x.Max), secs(x.Mean), pending(x.Pending), x.Expired, x.Zombie)
		for _, e := range x.ZombieEx {
			p("      %s", e)
		}
	}
	h := r.Handoffs
	mean := 0.0
	if h.Count > 0 {
		mean = float64(h.Redelivered) / float64(h.Count)
	}
	p("  handoffs %d: records re-delivered %d (per handoff: mean %.1f, max %d)", h.Count, h.Redelivered, mean, h.Max)
	causes := make([]string, 0, len(h.ByCause))
	for k := range h.ByCause {
		causes = append(causes, k)
	}
	sort.Strings(causes)
	for _, k := range causes {
		c := h.ByCause[k]
		p("    after %-18s %3d handoffs, %5d re-delivered (max %d)", k+":", c.Count, c.Redelivered, c.Max)
	}
	if f := r.Measure; len(f.Failovers) > 0 {
		p("  failovers (unplanned; from the old owner's last act, renewal or release to the new owner's first act, sim/check.Measure): p50 %s, p99 %s, max %s over %d",
			secs(check.Percentile(f.Failovers, 50)), secs(check.Percentile(f.Failovers, 99)), secs(check.Percentile(f.Failovers, 100)), len(f.Failovers))
	}
	if f := r.Measure; f.PlannedMoves > 0 {
		p("  planned moves (shutdown, cooperative handoff; from the old owner's last act or release) %d, %d with every record checkpointed: gap p50 %s, p99 %s, max %s; re-delivered per move %.1f",
			f.PlannedMoves, f.CheckpointedMoves, secs(check.Percentile(f.HandoffGaps, 50)), secs(check.Percentile(f.HandoffGaps, 99)), secs(check.Percentile(f.HandoffGaps, 100)),
			float64(f.PlannedRedelivered)/float64(f.PlannedMoves))
	}
	for _, g := range r.Longest {
		kind := "failover"
		if g.Planned {
			kind = "planned move"
		}
		p("    longest %-12s %s: %s -> %s, %s without an acting owner, until %s", kind, g.Key, g.From, g.To, secs(g.Gap), secs(g.At))
	}
	p("")
	p("invariants (sim/check)")
	names := map[string]string{check.S1: "single owner (informational: wall clocks, not true time)", check.S2: "fenced writes",
		check.S3: "no lost checkpoint", check.S4: "at-least-once", check.S5: "parents first", check.S6: "order within a shard",
		check.G1: "graceful handoff: the next owner starts after the final checkpoint"}
	for _, inv := range []string{check.S1, check.S2, check.S3, check.S4, check.S5, check.S6, check.G1} {
		p("  %-3s %-57s %d", inv, names[inv], r.Invariants[inv])
	}
	p("  %-3s %-57s %d", Lin, "lease-table history linearizable (porcupine)", r.Invariants[Lin])
	p("      %s", r.Lin.line())
	for _, v := range r.Lin.Visualizations {
		p("      visualization: %s", v)
	}
	if len(r.Violations) > 0 {
		p("")
		p("violations")
		for _, v := range r.Violations {
			p("  %s", v.String())
			for _, l := range v.Excerpt {
				p("      %s", l)
			}
		}
	}
	p("")
	if r.Failed() {
		if len(r.Malformed) > 0 {
			p("verdict: FAIL (%d malformed rows in the lease table)", len(r.Malformed))
			return
		}
		p("verdict: FAIL")
	} else {
		p("verdict: PASS")
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func pending(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d never acted on again)", n)
}
