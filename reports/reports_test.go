package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/trace"
)

// busy is a short run with splits, merges, crashes, pauses, partitions and
// clock steps, so every kind of mark shows up.
func busy(t testing.TB, seed uint64) (sim.Options, *sim.Result) {
	t.Helper()
	o := sim.Options{Seed: seed, Workers: 3, Shards: 4, Chaos: 40 * time.Second, Scenario: "test",
		Faults: "split,merge,crash,pause,partition,clock-steps,table-throttle", KeepTrace: true}
	res, err := sim.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	return o, res
}

// planted is a short run that breaks S2 (a planted bug).
func planted(t testing.TB) (sim.Options, *sim.Result) {
	t.Helper()
	o := sim.Options{Seed: 1, Workers: 4, Shards: 4, Chaos: 30 * time.Second, Quiet: 30 * time.Second, Scenario: "test",
		Faults: "partition,pause,crash,clog", Mutation: "unfenced-checkpoint", KeepTrace: true, Assignment: "scan"}
	res, err := sim.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() {
		t.Fatal("the planted bug broke nothing")
	}
	return o, res
}

func render(t testing.TB, o sim.Options, res *sim.Result) (*Sweep, string) {
	t.Helper()
	s := NewSeed(o.Scenario, o, res, 100*time.Millisecond)
	sw := NewSweep(o.Scenario, "a story", "go run ./cmd/simrun -test", []Seed{s}, 100*time.Millisecond, 1)
	var b bytes.Buffer
	if err := HTML(&b, sw, res); err != nil {
		t.Fatal(err)
	}
	return sw, b.String()
}

func shardsCreated(res *sim.Result) int {
	n := 0
	for i := range res.Trace {
		if res.Trace[i].Kind == trace.KindShardCreated {
			n++
		}
	}
	return n
}

func TestHTMLSelfContainedWithTimeline(t *testing.T) {
	o, res := busy(t, 3)
	_, h := render(t, o, res)
	// nothing to fetch: no external scripts, styles, images or fonts
	for _, re := range []string{`(?i)<script[^>]+src=`, `(?i)<link[^>]+href=`, `(?i)<img`, `(?i)url\(\s*['"]?(https?:)?//`, `(?i)@import`, `(?i)(src|href)="(https?:)?//`} {
		if m := regexp.MustCompile(re).FindString(h); m != "" {
			t.Errorf("report loads something: %q", m)
		}
	}
	lanes := strings.Count(h, `<g class="lane`)
	if want := shardsCreated(res); lanes != want {
		t.Errorf("%d shard lanes, %d shards created", lanes, want)
	}
	slots := strings.Count(h, `<g class="slot"`)
	if slots < o.Workers {
		t.Errorf("%d worker lanes for %d workers", slots, o.Workers)
	}
	for _, want := range []string{`<svg id="timeline"`, `class="bar o`, `class="chaos"`, `class="heal"`, "Fault schedule", "Configuration of seed 3", `data-rendered="pending"`} {
		if !strings.Contains(h, want) {
			t.Errorf("report has no %q", want)
		}
	}
	has := func(kind sim.ActionKind) bool {
		for _, a := range res.Schedule {
			if a.Kind == kind {
				return true
			}
		}
		return false
	}
	marks := map[sim.ActionKind]string{sim.ActSplit: `class="mark split"`, sim.ActMerge: `class="mark merge"`, sim.ActPause: `class="band pause"`,
		sim.ActPartition: `class="band partition"`, sim.ActClockStep: `class="mark clock"`, sim.ActTableThrottle: `class="band tthrottle"`}
	for k, m := range marks {
		if has(k) && !strings.Contains(h, m) {
			t.Errorf("the schedule has %s but the timeline has no %s", k, m)
		}
	}
	sched := h[strings.Index(h, `id="schedule"`):]
	sched = sched[:strings.Index(sched, "</table>")]
	if rows := strings.Count(sched, "<tr class="); rows != len(res.Schedule) {
		t.Errorf("%d schedule rows for %d actions", rows, len(res.Schedule))
	}
	if len(h) > 2<<20 {
		t.Errorf("report of a small run is %d bytes", len(h))
	}
}

func TestViolationLeads(t *testing.T) {
	o, res := planted(t)
	sw, h := render(t, o, res)
	if sw.Totals.Failed != 1 || sw.TimelineSeed != 1 {
		t.Errorf("totals %+v", sw.Totals)
	}
	iv, ifig := strings.Index(h, `id="violations"`), strings.Index(h, `id="figures"`)
	if iv < 0 || iv > ifig {
		t.Errorf("violations at %d, figures at %d", iv, ifig)
	}
	if !strings.Contains(h, res.Replay) || !strings.Contains(h, "FAIL") {
		t.Error("no replay command or verdict")
	}
	if n := strings.Count(h, `<g class="viol`); n != len(res.Violations)+len(res.Tolerated) {
		t.Errorf("%d violation marks for %d violations", n, len(res.Violations)+len(res.Tolerated))
	}
	if !strings.Contains(h, `id="tv1"`) || !strings.Contains(h, `href="#tv1"`) {
		t.Error("the first violation is not linked to its mark")
	}
}

func TestWriteFiles(t *testing.T) {
	o, res := busy(t, 4)
	s := NewSeed("test", o, res, time.Second)
	sw := NewSweep("test", "", "cmd", []Seed{s}, time.Second, 1)
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := Write(dir, sw, res); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var back Sweep
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Seeds) != 1 || back.Seeds[0].TraceHash != s.TraceHash || back.Seeds[0].Violations == nil {
		t.Errorf("summary.json: %+v", back)
	}
	if _, err := os.Stat(filepath.Join(dir, HTMLFile)); err != nil {
		t.Error(err)
	}
	// a report without a timeline (every seed failed to start) still renders
	sw2 := NewSweep("test", "", "cmd", []Seed{{Scenario: "test", Seed: 9, Error: "bad config"}}, time.Second, 1)
	var b bytes.Buffer
	if err := HTML(&b, sw2, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "could not run") {
		t.Error("the error is not shown")
	}
}

func TestSweepTotals(t *testing.T) {
	seeds := []Seed{
		{Seed: 3, OK: true, Tier: "inside", Events: 10, VirtualSeconds: 100, WallSeconds: 1, Failovers: 2, FailoverP50Ms: 300, FailoverMaxMs: 900, Handoffs: 4, RedeliveriesPerHandoff: 2, TableOpsPerShardHour: 100},
		{Seed: 1, OK: false, Tier: "inside", Events: 20, VirtualSeconds: 100, WallSeconds: 1, Violations: []Violation{{Invariant: "S2"}, {Invariant: "S3"}}, Failovers: 1, FailoverP50Ms: 100, FailoverMaxMs: 100, Handoffs: 1, RedeliveriesPerHandoff: 7, TableOpsPerShardHour: 300},
		{Seed: 2, OK: true, Tier: "outside", Events: 30, VirtualSeconds: 200, WallSeconds: 2, Tolerated: []Violation{{Invariant: "S1"}}, Failovers: 1, FailoverP50Ms: 200, FailoverMaxMs: 200, TableOpsPerShardHour: 200},
	}
	sw := NewSweep("s", "", "c", seeds, 2*time.Second, 2)
	tt := sw.Totals
	if sw.Seeds[0].Seed != 1 || sw.Seeds[2].Seed != 3 {
		t.Error("seeds not sorted")
	}
	if tt.Seeds != 3 || tt.Passed != 2 || tt.Failed != 1 || tt.Violations != 2 || tt.Tolerated != 1 || tt.ByInvariant["S2"] != 1 || tt.Tiers["outside"] != 1 {
		t.Errorf("counts %+v", tt)
	}
	if tt.FailoverP50Ms != 200 || tt.FailoverMaxMs != 900 || tt.Failovers != 4 || tt.Handoffs != 5 || tt.RedeliveriesPerHandoff != 3 || tt.TableOpsPerShardHour != 200 {
		t.Errorf("figures %+v", tt)
	}
	if tt.VirtualPerWallSecond != 200 || tt.VirtualPerCoreSecond != 100 || tt.Events != 60 {
		t.Errorf("speed %+v", tt)
	}
	if sw.TimelineSeed != 1 {
		t.Errorf("timeline seed %d, want the failing 1", sw.TimelineSeed)
	}
}

// TestBarsCapped: a run with very many short tenures is drawn with at
// most MaxBars bars.
func TestBarsCapped(t *testing.T) {
	var recs []trace.Record
	seq := uint64(0)
	add := func(r trace.Record) {
		seq++
		r.Seq = seq
		recs = append(recs, r)
	}
	add(trace.Record{Kind: trace.KindProcStart, Worker: 0, Proc: 0, Owner: "w0"})
	add(trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: "k"})
	for i := 0; i < 3*MaxBars; i++ {
		at := time.Duration(i) * 10 * time.Millisecond
		add(trace.Record{T: at, Kind: trace.Acting, Worker: 0, Proc: 0, Owner: "w0", Key: "k"})
		add(trace.Record{T: at + 5*time.Millisecond, Kind: trace.StoppedActing, Worker: 0, Proc: 0, Owner: "w0", Key: "k"})
	}
	res := &sim.Result{Trace: recs, VirtualSeconds: float64(3*MaxBars) * 0.01, World: sim.World{Chaos: time.Second}}
	tl := buildTimeline(res)
	if tl.bars > MaxBars || !tl.merged {
		t.Errorf("%d bars (merged %v)", tl.bars, tl.merged)
	}
	if n := strings.Count(tl.svg(), `class="bar `); n != tl.bars {
		t.Errorf("drew %d bars, counted %d", n, tl.bars)
	}
}

// TestTimelineAimedActions: a pause aimed at "the owner of shard X" is
// drawn in the lane of the worker it resolved to (the trace's fault record
// names it), and scripted SDK retries are drawn as a band.
func TestTimelineAimedActions(t *testing.T) {
	o := sim.Options{Seed: 2, Workers: 3, Shards: 3, Chaos: 40 * time.Second, Scenario: "test", Faults: "none", KeepTrace: true, Assignment: "scan",
		Actions: []sim.Action{
			{At: 15 * time.Second, Kind: sim.ActPause, Shard: "shardId-000000000000", Dur: 5 * time.Second},
			{At: 20 * time.Second, Kind: sim.ActSDKRetry, Value: 0.5, Dur: 10 * time.Second},
		}}
	res, err := sim.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	target := int32(-1)
	for i := range res.Trace {
		if r := &res.Trace[i]; r.Kind == trace.KindFault && strings.Contains(r.Reason, "pause owner-of") {
			target = r.Worker
		}
	}
	if target < 0 {
		t.Fatal("the aimed pause did not resolve to a worker")
	}
	if target == 0 {
		t.Fatal("the aimed pause resolved to w0, the lane an unresolved action would use: pick another shard")
	}
	_, h := render(t, o, res)
	lane := h[strings.Index(h, fmt.Sprintf(`<g class="slot" data-slot="%d">`, target)):]
	lane = lane[:strings.Index(lane, "</g>")]
	if !strings.Contains(lane, `class="band pause"`) {
		t.Errorf("the pause aimed at the owner of shardId-000000000000 (w%d) is not in w%d's lane", target, target)
	}
	if !strings.Contains(h, `class="band sdkretry"`) {
		t.Error("the timeline has no band for the SDK retries")
	}
}
