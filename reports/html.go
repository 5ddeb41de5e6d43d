package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

//go:embed report.tmpl
var reportTmpl string

//go:embed report.css
var reportCSS string

//go:embed report.js
var reportJS string

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":    fmtMs,
	"f":     func(v float64, d int) string { return strconv.FormatFloat(v, 'f', d, 64) },
	"join":  strings.Join,
	"inc":   func(i int) int { return i + 1 },
	"minus": func(a, b int) int { return a - b },
}).Parse(reportTmpl))

// page is what the template draws.
type page struct {
	Title    string
	Sweep    *Sweep
	Multi    bool
	Failed   bool
	CSS      template.CSS
	JS       template.JS
	Timeline *timelineView
	// Failing seeds other than the one drawn.
	OtherFailing []Seed
	Totals       Totals
}

type timelineView struct {
	Seed       Seed
	Violations []violationView
	Tolerated  []violationView
	SVG        template.HTML
	Legend     []legendItem
	World      []kv
	Engine     []kv
	Rates      []kv
	Schedule   []scheduleRow
	Tier       string
	Outside    []string
	Lanes      int
	Slots      int
	Bars       int
	Merged     bool
	Omitted    int
	Replay     string
	TraceHash  string
	HashNote   string
	FinalRows  int
	Split      bool
}

type violationView struct {
	N         int
	Invariant string
	Shard     string
	Workers   string
	From, To  string
	Detail    string
	Excerpt   string
	Replay    string
}

type kv struct{ K, V string }

type scheduleRow struct {
	At      string
	Kind    string
	What    string
	Applied bool
	Later   bool // decided by the run (a restart, the end of a partition)
}

func fmtMs(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
	case v >= 1000:
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
}

// HTML writes the self-contained report of sw; res (with its trace) is
// the run of sw.TimelineSeed, or nil.
func HTML(w io.Writer, sw *Sweep, res *sim.Result) error {
	p := &page{Sweep: sw, Multi: len(sw.Seeds) > 1, Totals: sw.Totals, CSS: template.CSS(reportCSS), JS: template.JS(reportJS)}
	p.Failed = sw.Totals.Failed > 0
	verdict := "pass"
	if p.Failed {
		verdict = "FAIL"
	}
	if len(sw.Seeds) == 1 {
		p.Title = fmt.Sprintf("shardlease sim: %s seed %d (%s)", sw.Scenario, sw.Seeds[0].Seed, verdict)
	} else {
		p.Title = fmt.Sprintf("shardlease sim: %s, %d seeds (%s)", sw.Scenario, len(sw.Seeds), verdict)
	}
	for _, s := range sw.Failing() {
		if res == nil || s.Seed != res.World.Seed {
			p.OtherFailing = append(p.OtherFailing, s)
		}
	}
	if res != nil {
		p.Timeline = newTimelineView(sw, res)
	}
	return tmpl.Execute(w, p)
}

func newTimelineView(sw *Sweep, res *sim.Result) *timelineView {
	tl := buildTimeline(res)
	v := &timelineView{SVG: template.HTML(tl.svg()), Legend: tl.legend(), Tier: res.Tier(), Outside: res.Outside,
		Lanes: len(tl.shards), Slots: len(tl.slots), Bars: tl.bars, Merged: tl.merged, Omitted: tl.omitted,
		Split: tl.split > 0, Replay: res.Replay, TraceHash: fmt.Sprintf("%016x", res.TraceHash), FinalRows: len(res.Final)}
	for _, s := range sw.Seeds {
		if s.Seed == res.World.Seed {
			v.Seed = s
		}
	}
	if v.Seed.TraceHash == "" {
		v.Seed = NewSeed(sw.Scenario, sim.Options{}, res, 0)
	}
	if v.Seed.TraceHash != v.TraceHash {
		v.HashNote = fmt.Sprintf("the re-run drawn here has trace hash %s, the sweep's run had %s: determinism broken (D1)", v.TraceHash, v.Seed.TraceHash)
	}
	n := 0
	for _, x := range res.Violations {
		n++
		v.Violations = append(v.Violations, viewOf(n, x, res.Replay))
	}
	for _, x := range res.Tolerated {
		n++
		v.Tolerated = append(v.Tolerated, viewOf(n, x, res.Replay))
	}
	w := res.World
	v.World = []kv{
		{"seed", strconv.FormatUint(w.Seed, 10)},
		{"workers (initial)", strconv.Itoa(w.Workers)},
		{"shards (initial)", strconv.Itoa(w.Shards)},
		{"chaos phase", w.Chaos.String()},
		{"healing phase", w.Quiet.String()},
		{"fault classes", orNone(strings.Join(w.Faults, ", "))},
		{"tier", res.Tier()},
		{"table latency", fmt.Sprintf("%v + exp(%v), spikes %.3f", w.TableLatency.Base, w.TableLatency.Tail, w.TableLatency.Spike)},
		{"stream latency", fmt.Sprintf("%v + exp(%v), spikes %.3f", w.StreamLatency.Base, w.StreamLatency.Tail, w.StreamLatency.Spike)},
		{"call timeout", w.CallTimeout.String()},
		{"retention", w.Retention.String()},
		{"put rate", fmt.Sprintf("%.2f records/s per initial shard", w.PutRate)},
		{"clock drift (actual)", fmt.Sprintf("±%.4f", w.DriftBound)},
		{"checkpoint pace", w.CheckpointPace.String()},
		{"liveness bound (L1)", w.Bound.String()},
		{"balance checked", strconv.FormatBool(w.Balance)},
	}
	e := w.Engine
	v.Engine = []kv{
		{"lease duration", dflt(e.LeaseDuration)},
		{"renew interval", dflt(e.RenewInterval)},
		{"safety margin", dflt(e.SafetyMargin)},
		{"max clock drift", strconv.FormatFloat(e.MaxClockDrift, 'f', 4, 64)},
		{"take interval", dflt(e.TakeInterval)},
		{"shard sync interval", dflt(e.ShardSyncInterval)},
		{"max leases per worker", dfltI(e.MaxLeasesForWorker)},
		{"max leases to steal at once", dfltI(e.MaxLeasesToStealAtOnce)},
		{"GetRecords limit", dfltI(e.GetRecordsLimit)},
		{"idle time between reads", dflt(e.IdleTimeBetweenReads)},
		{"consistent take scans", strconv.FormatBool(e.ConsistentTakeScans)},
	}
	r := w.Rates
	for _, x := range []struct {
		k string
		v float64
	}{{"request loss", r.RequestLoss}, {"reply loss", r.ReplyLoss}, {"SDK retry of an applied write", r.Dup},
		{"table throttling", r.TableThrottle}, {"table 5xx", r.TableTransient}, {"stale scans", r.StaleRead},
		{"GetRecords throttling", r.StreamThrottle}, {"expired iterators", r.ExpiredIterator},
		{"slow processor", r.SlowProcessor}, {"failed batches", r.FailedBatch}, {"checkpoint per batch", r.Checkpoint}} {
		if x.v != 0 {
			v.Rates = append(v.Rates, kv{x.k, strconv.FormatFloat(x.v, 'f', 4, 64)})
		}
	}
	if r.StaleLag != 0 {
		v.Rates = append(v.Rates, kv{"stale scan lag up to", r.StaleLag.String()})
	}
	applied := map[string]bool{}
	for i := range res.Trace {
		if res.Trace[i].Kind == trace.KindFault {
			applied[faultKey(res.Trace[i].T, res.Trace[i].Reason)] = true
		}
	}
	scripted := len(res.Schedule)
	// the run appends the actions it decides itself (restarts, heals) after
	// the drawn and scripted ones; they are the ones out of time order
	for i := 1; i < len(res.Schedule); i++ {
		if res.Schedule[i].At < res.Schedule[i-1].At {
			scripted = i
			break
		}
	}
	for i, a := range res.Schedule {
		s := strings.TrimSpace(a.String())
		what := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(s, fmt.Sprintf("%.3fs", a.At.Seconds()))), string(a.Kind)))
		v.Schedule = append(v.Schedule, scheduleRow{At: fmt.Sprintf("%.3f s", a.At.Seconds()), Kind: string(a.Kind), What: what,
			Applied: applied[faultKey(a.At, a.String())], Later: i >= scripted || a.Kind == sim.ActRestart || a.Kind == "heal-link"})
	}
	return v
}

func viewOf(n int, x check.Violation, replay string) violationView {
	if x.Replay != "" {
		replay = x.Replay
	}
	return violationView{N: n, Invariant: x.Invariant, Shard: x.Key, Workers: strings.Join(x.Workers, ", "),
		From: secs(x.From), To: secs(x.To), Detail: x.Detail, Excerpt: strings.Join(x.Excerpt, "\n"), Replay: replay}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func dflt(d time.Duration) string {
	if d == 0 {
		return "engine default"
	}
	return d.String()
}

func dfltI(i int) string {
	if i == 0 {
		return "engine default"
	}
	return strconv.Itoa(i)
}
