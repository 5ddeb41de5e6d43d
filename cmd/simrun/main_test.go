package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/reports"
	"github.com/shardlease/shardlease/scenarios"
	"github.com/shardlease/shardlease/sim/trace"
)

// quick are flags that make a run short: a small world without faults.
var quick = []string{"-faults", "none", "-workers", "2", "-shards", "2", "-chaos", "20s"}

// plantedArgs makes seed 1 break S2 within a minute of virtual time (in a
// fleet of workers that take leases themselves).
var plantedArgs = []string{"-mutation", "unfenced-checkpoint", "-faults", "partition,pause,crash,clog", "-workers", "4", "-shards", "4", "-chaos", "30s", "-quiet", "30s", "-assignment", "scan"}

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func with(base []string, more ...string) []string {
	return append(append([]string(nil), base...), more...)
}

func TestBadUsageExits2(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-nosuchflag"}, "not defined"},
		{[]string{"stray"}, "unexpected argument"},
		{[]string{"-seed", "1", "-seeds", "1-3"}, "exclusive"},
		{[]string{"-seed", "x"}, "not a seed"},
		{[]string{"-seed", "-3"}, "not a seed"},
		{[]string{"-seeds", "5-1"}, "empty"},
		{[]string{"-seeds", "a-b"}, "want A-B"},
		{[]string{"-scenario", "no-such-scenario"}, "unknown scenario"},
		{[]string{"-mutation", "no-such-bug"}, "unknown mutation"},
		{[]string{"-faults", "crash,bogus"}, "unknown fault class \"bogus\""},
		{[]string{"-parallel", "0"}, "at least 1"},
		{[]string{"-workers", "-1"}, "negative"},
		{[]string{"-duration", "-1s"}, "negative"},
		{[]string{"-duration", "10s", "-chaos", "20s"}, "disagree"},
		{[]string{"-seeds", "1-2", "-trace", "x.jsonl"}, "one run"},
		{[]string{"-duration", "soon"}, "invalid value"},
		{[]string{"-retention", "0s"}, "positive"},
		{[]string{"-retention", "-5m"}, "positive"},
		{[]string{"-seeds", "1-2", "-heapprofile", "h.prof"}, "one run"},
		{[]string{"-seed", "1", "-heapprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "h.prof")}, "-heapprofile"},
	}
	for _, c := range cases {
		code, out, errs := runArgs(t, c.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stdout %q)", c.args, code, exitUsage, out)
		}
		if !strings.Contains(errs, c.want) {
			t.Errorf("%v: stderr %q does not say %q", c.args, errs, c.want)
		}
		if out != "" {
			t.Errorf("%v: printed %q on stdout", c.args, out)
		}
	}
}

func TestHelpAndList(t *testing.T) {
	code, _, errs := runArgs(t, "-h")
	if code != exitPass || !strings.Contains(errs, "-seeds") {
		t.Errorf("-h: exit %d, usage %q", code, errs)
	}
	code, out, _ := runArgs(t, "-list")
	if code != exitPass {
		t.Fatalf("-list: exit %d", code)
	}
	for _, want := range []string{"swarm (default)", "rolling-deploy", "unfenced-checkpoint", "drift-beyond"} {
		if !strings.Contains(out, want) {
			t.Errorf("-list does not show %q:\n%s", want, out)
		}
	}
}

func decodeLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		objs = append(objs, m)
	}
	return objs
}

func TestJSONLines(t *testing.T) {
	code, out, errs := runArgs(t, with(quick, "-seeds", "3-6", "-parallel", "3", "-json", "-report=false")...)
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, errs)
	}
	objs := decodeLines(t, out)
	if len(objs) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(objs), out)
	}
	fields := []string{"schema", "lin", "scenario", "seed", "tier", "trace_hash", "events", "virtual_seconds", "wall_seconds", "violations",
		"failover_p50_ms", "failover_max_ms", "redeliveries_per_handoff", "table_ops_per_shard_hour", "table_rows_read_per_shard_hour", "replay"}
	for i, m := range objs {
		for _, f := range fields {
			if _, ok := m[f]; !ok {
				t.Errorf("line %d has no %q: %v", i, f, m)
			}
		}
		if m["seed"].(float64) != float64(3+i) {
			t.Errorf("line %d is seed %v: not in seed order", i, m["seed"])
		}
		if m["scenario"] != "swarm" || m["tier"] != "inside" || m["runner"] != reports.RunnerSim {
			t.Errorf("line %d: scenario %v tier %v runner %v", i, m["scenario"], m["tier"], m["runner"])
		}
		if v, ok := m["violations"].([]any); !ok || len(v) != 0 {
			t.Errorf("line %d: violations %v, want an empty list", i, m["violations"])
		}
		if h, _ := m["trace_hash"].(string); len(h) != 16 {
			t.Errorf("line %d: trace_hash %q", i, h)
		}
		if m["schema"] != float64(reports.SeedSchema) || m["lin"] != "ok" {
			t.Errorf("line %d: schema %v lin %v, want %d and ok", i, m["schema"], m["lin"], reports.SeedSchema)
		}
	}
	if strings.Contains(errs, "\r") {
		t.Errorf("progress bar drawn with -json: %q", errs)
	}
}

func TestPlantedBugExits1(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runArgs(t, with(plantedArgs, "-seeds", "1-2", "-json", "-out", dir)...)
	if code != exitViolation {
		t.Fatalf("exit %d, want %d: %s %s", code, exitViolation, out, errs)
	}
	var bad map[string]any
	for _, m := range decodeLines(t, out) {
		linViolated := false
		for _, v := range m["violations"].([]any) {
			linViolated = linViolated || v.(map[string]any)["invariant"] == "Lin"
		}
		if lin := m["lin"]; (lin == "illegal") != linViolated || (lin != "illegal" && lin != "ok" && lin != "unknown") {
			t.Errorf("seed %v: lin %v, a Lin violation: %v", m["seed"], lin, linViolated)
		}
		if vs := m["violations"].([]any); len(vs) > 0 {
			if bad != nil {
				continue
			}
			bad = m
			v := vs[0].(map[string]any)
			for _, f := range []string{"invariant", "shard", "detail"} {
				if s, _ := v[f].(string); s == "" {
					t.Errorf("violation without %s: %v", f, v)
				}
			}
			if m["ok"] != false {
				t.Errorf("ok = %v with violations", m["ok"])
			}
		}
	}
	if bad == nil {
		t.Fatal("no line with violations")
	}
	// the report leads with the violation and its replay command
	html, err := os.ReadFile(filepath.Join(dir, reports.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	h := string(html)
	iv, is := strings.Index(h, `id="violations"`), strings.Index(h, `id="sweep"`)
	if iv < 0 || is < 0 || iv > is {
		t.Errorf("the violation section (at %d) does not come before the sweep table (at %d)", iv, is)
	}
	replay := bad["replay"].(string)
	if !strings.Contains(h, replay) {
		t.Errorf("report does not show the replay command %q", replay)
	}
	var sw reports.Sweep
	js, err := os.ReadFile(filepath.Join(dir, reports.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &sw); err != nil {
		t.Fatal(err)
	}
	if sw.Totals.Failed == 0 || sw.TimelineSeed != uint64(bad["seed"].(float64)) {
		t.Errorf("summary: failed %d, timeline seed %d", sw.Totals.Failed, sw.TimelineSeed)
	}
	// without -json: a human summary that names the failure
	code, out, _ = runArgs(t, with(plantedArgs, "-seed", "1", "-report=false")...)
	if code != exitViolation || !strings.Contains(out, "VIOLATION") || !strings.Contains(out, "replay: go run ./cmd/simrun -seed 1") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func hashOf(t *testing.T, args ...string) map[float64]string {
	t.Helper()
	code, out, errs := runArgs(t, append(args, "-json", "-report=false")...)
	if code == exitUsage {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	hs := map[float64]string{}
	for _, m := range decodeLines(t, out) {
		hs[m["seed"].(float64)] = m["trace_hash"].(string)
	}
	return hs
}

// TestReplay: -seed N gives the trace hash that seed had in a sweep (run
// in parallel), and the replay command every line prints replays it.
func TestReplay(t *testing.T) {
	sweep := hashOf(t, with(quick, "-seeds", "1-4", "-parallel", "4")...)
	one := hashOf(t, with(quick, "-seed", "3")...)
	if one[3] == "" || one[3] != sweep[3] {
		t.Errorf("seed 3: %s alone, %s in the sweep", one[3], sweep[3])
	}
	seq := hashOf(t, with(quick, "-seeds", "1-4", "-parallel", "1")...)
	for s, h := range sweep {
		if seq[s] != h {
			t.Errorf("seed %v: %s in parallel, %s sequentially", s, h, seq[s])
		}
	}
	// the printed replay command, of a passing and of a failing run
	for _, args := range [][]string{with(quick, "-seed", "2"), with(plantedArgs, "-seed", "1"), {"-scenario", "restart-same-owner", "-seed", "4", "-chaos", "40s"}} {
		code, out, _ := runArgs(t, append(args, "-json", "-report=false")...)
		if code == exitUsage {
			t.Fatalf("%v: exit %d", args, code)
		}
		m := decodeLines(t, out)[0]
		replay := m["replay"].(string)
		const prefix = "go run ./cmd/simrun "
		if !strings.HasPrefix(replay, prefix) {
			t.Fatalf("replay %q", replay)
		}
		again := hashOf(t, strings.Fields(strings.TrimPrefix(replay, prefix))...)
		if again[m["seed"].(float64)] != m["trace_hash"] {
			t.Errorf("%q: trace hash %s, the run had %s", replay, again[m["seed"].(float64)], m["trace_hash"])
		}
	}
}

func TestReportAndTraceWritten(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "trace.jsonl")
	code, out, errs := runArgs(t, with(quick, "-seed", "5", "-out", dir, "-trace", tr)...)
	if code != exitPass {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	for _, want := range []string{"PASS", "figures: failovers", "virtual s per wall s", "report: "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not say %q:\n%s", want, out)
		}
	}
	var sw reports.Sweep
	js, err := os.ReadFile(filepath.Join(dir, reports.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &sw); err != nil {
		t.Fatal(err)
	}
	if len(sw.Seeds) != 1 || sw.Seeds[0].Seed != 5 || sw.TimelineSeed != 5 || sw.Totals.Passed != 1 {
		t.Errorf("summary.json: %+v", sw)
	}
	html, err := os.ReadFile(filepath.Join(dir, reports.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<svg id="timeline"`, `class="lane`, "Fault schedule", "PASS"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html has no %q", want)
		}
	}
	f, err := os.Open(tr)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := trace.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := trace.HashRecords(recs); len(recs) == 0 || formatHash(got) != sw.Seeds[0].TraceHash {
		t.Errorf("-trace: %d records, hash %s, run %s", len(recs), formatHash(got), sw.Seeds[0].TraceHash)
	}
}

func formatHash(h uint64) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = hex[h&15]
		h >>= 4
	}
	return string(b)
}

// TestSweepReport: a sweep writes one summary.json listing every seed and
// a report drawing the first seed's timeline; the human summary names
// the seeds, the figures, the speed and the report.
func TestSweepReport(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runArgs(t, with(quick, "-seeds", "7-9", "-out", dir)...)
	if code != exitPass {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if !strings.Contains(out, "PASS: scenario swarm, seeds 7-9: 3 run, 3 passed, 0 failed") {
		t.Errorf("summary:\n%s", out)
	}
	var sw reports.Sweep
	js, err := os.ReadFile(filepath.Join(dir, reports.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &sw); err != nil {
		t.Fatal(err)
	}
	if len(sw.Seeds) != 3 || sw.TimelineSeed != 7 || sw.TimelineHash != sw.Seeds[0].TraceHash || sw.Totals.VirtualPerWallSecond <= 0 {
		t.Errorf("summary.json: seeds %d, timeline %d %s (seed 7 %s), speed %v", len(sw.Seeds), sw.TimelineSeed, sw.TimelineHash, sw.Seeds[0].TraceHash, sw.Totals.VirtualPerWallSecond)
	}
	if sw.Options["faults"] != "none" || sw.Options["seeds"] != "7-9" {
		t.Errorf("options %v", sw.Options)
	}
}

func TestParseRange(t *testing.T) {
	for in, want := range map[string][2]uint64{"1-32": {1, 32}, "7": {7, 7}, " 3 - 4 ": {3, 4}, "0-0": {0, 0}} {
		a, b, err := parseRange(in)
		if err != nil || a != want[0] || b != want[1] {
			t.Errorf("%q: %d %d %v", in, a, b, err)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("/dev/null is a terminal")
	}
	_, pts := openPTY(t)
	t.Setenv("TERM", "xterm")
	if !isTerminal(pts) {
		t.Error("a pseudo-terminal is not a terminal")
	}
	t.Setenv("TERM", "dumb")
	if isTerminal(pts) {
		t.Error("TERM=dumb: still a terminal")
	}
}

// TestReplayOverridesScenario: a flag that sets back to "drawn" what the
// scenario fixes (here -faults swarm on a scenario without faults) is kept
// in the replay command, which then replays the same run.
func TestReplayOverridesScenario(t *testing.T) {
	var name string
	for _, sc := range scenarios.All() {
		if sc.Options.Faults == "none" && sc.Options.Workers > 0 && sc.Options.Workers <= 4 {
			name = sc.Name
			break
		}
	}
	if name == "" {
		t.Skip("no scenario without faults in the catalog")
	}
	code, out, errs := runArgs(t, "-scenario", name, "-faults", "swarm", "-seed", "2", "-json", "-report=false")
	if code == exitUsage {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m := decodeLines(t, out)[0]
	replay := m["replay"].(string)
	if !strings.Contains(replay, "-faults swarm") || !strings.Contains(replay, "-scenario "+name) {
		t.Fatalf("replay %q", replay)
	}
	again := hashOf(t, strings.Fields(strings.TrimPrefix(replay, "go run ./cmd/simrun "))...)
	if again[2] != m["trace_hash"] {
		t.Errorf("%q: trace hash %s, the run had %s", replay, again[2], m["trace_hash"])
	}
}

// TestSeedHeaderInWords: the -seed header shows an engine default as the
// value the engine uses, marked so (never "0s"), and the fault rates in
// force as percentages, not a Go struct.
func TestSeedHeaderInWords(t *testing.T) {
	code, out, errs := runArgs(t, "-seed", "20", "-combo", "off", "-report=false") // the world seed 20 draws without a combination
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, errs)
	}
	header := out[:strings.Index(out, "\ntier ")]
	for _, want := range []string{"seed 20: 5 workers, 11 shards", "  engine: lease 10s (default)", "shard sync every 10s (default)", "leases per worker no cap (default)",
		"  fault rates: request loss 0.44%", "stale lag 47.318s"} {
		if !strings.Contains(header, want) {
			t.Errorf("the header lacks %q:\n%s", want, header)
		}
	}
	for _, bad := range []string{" 0s", "{", "RequestLoss", "maxLeases 0"} {
		if strings.Contains(header, bad) {
			t.Errorf("the header holds %q:\n%s", bad, header)
		}
	}
}

// TestProgressLinesWhenNotATerminal: a sweep whose stderr is not a
// terminal prints progress lines there (every lineEvery; 0 here: one per
// seed but the last), never a bar's carriage return.
func TestProgressLinesWhenNotATerminal(t *testing.T) {
	old := lineEvery
	lineEvery = 0
	defer func() { lineEvery = old }()
	code, _, errs := runArgs(t, with(quick, "-seeds", "1-4", "-parallel", "1", "-report=false")...)
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := strings.Count(errs, "simrun: "); n != 3 || strings.Contains(errs, "\r") || !strings.Contains(errs, "simrun: 3/4 seeds, ") {
		t.Errorf("stderr %q: want 3 progress lines, the last 3/4, no bar", errs)
	}
}
