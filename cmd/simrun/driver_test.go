package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/reports"
	"github.com/shardlease/shardlease/sim/driversim"
	"github.com/shardlease/shardlease/sim/trace"
)

var driverBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// TestMain removes the driver simulation's test binary that the tests
// built (driverBinary).
func TestMain(m *testing.M) {
	code := m.Run()
	if driverBuild.dir != "" {
		os.RemoveAll(driverBuild.dir)
	}
	os.Exit(code)
}

// driverBinary builds sim/driversim's test binary once for the tests
// (with the planted bugs if this test binary has them), as simrun does.
func driverBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds sim/driversim's test binary")
	}
	b := &driverBuild
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "simrun-test-driver-")
		if b.err == nil {
			b.bin, b.err = driversim.Build(context.Background(), repoRoot(), b.dir, planted.Enabled())
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

func TestDriverUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-driver", "-scenario", "rolling-deploy"}, "draw their own worlds"},
		{[]string{"-driver", "-faults", "crash,bogus"}, `unknown fault class "bogus" of driver worlds`},
		{[]string{"-driver", "-faults", "clog"}, `unknown fault class "clog" of driver worlds`},
		{[]string{"-driver", "-mutation", "unfenced-take"}, "the simulator's"},
		{[]string{"-driver-share", "10", "-mutation", "unfenced-take"}, "the simulator's"},
		{[]string{"-driver", "-retention", "1m"}, "does not apply"},
		{[]string{"-driver", "-boundary", "on"}, "does not apply"},
		{[]string{"-driver-share", "150"}, "percentage"},
		{[]string{"-driver-share", "-2"}, "percentage"},
		{[]string{"-driver", "-driver-share", "10"}, "no -driver-share"},
		{[]string{"-driver-binary", "x"}, "go with driver worlds"},
		{[]string{"-driver-share", "10", "-faults", "crash"}, "mixes driver worlds"},
		{[]string{"-driver", "-driver-binary", filepath.Join(t.TempDir(), "none")}, "-driver-binary"},
		{[]string{"-driver", "-driver-reruns", "-1"}, "negative"},
	}
	for _, c := range cases {
		code, out, errs := runArgs(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q (want %q), stdout %q", c.args, code, errs, c.want, out)
		}
	}
	// a swarm soak runs a share of driver worlds unless told otherwise;
	// a soak of anything else, or a sweep, none
	for _, c := range []struct {
		args  []string
		share int
	}{
		{[]string{"-soak"}, defaultSoakDriverShare},
		{[]string{"-soak", "-driver-share", "0"}, 0},
		{[]string{"-soak", "-faults", "none"}, 0},
		{[]string{"-soak", "-scenario", "rolling-deploy"}, 0},
		{[]string{"-soak", "-mutation", "unfenced-take"}, 0},
		{[]string{}, 0},
		{[]string{"-driver-share", "30"}, 30},
	} {
		cfg, err := parseArgs(c.args, &strings.Builder{})
		if err != nil || cfg.driverShare != c.share {
			t.Errorf("%v: share %v, err %v; want %d", c.args, cfg, err, c.share)
		}
	}
}

// TestDriverSlot: the share picks about its percentage of the seeds.
func TestDriverSlot(t *testing.T) {
	n := 0
	for s := uint64(1); s <= 10000; s++ {
		if driverSlot(s) < 20 {
			n++
		}
	}
	if n < 1900 || n > 2100 {
		t.Fatalf("a share of 20%% picks %d of 10000 seeds", n)
	}
}

// TestDriverSweep: -driver runs every seed as a driver world: -json says
// so (runner driver, tier inside), the replay carries -driver, and the
// totals count them.
func TestDriverSweep(t *testing.T) {
	bin := driverBinary(t)
	code, out, errs := runArgs(t, "-driver", "-seeds", "1-3", "-parallel", "2", "-json", "-report=false", "-driver-binary", bin)
	if code != exitPass {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	objs := decodeLines(t, out)
	if len(objs) != 3 {
		t.Fatalf("%d lines:\n%s", len(objs), out)
	}
	for i, m := range objs {
		if m["runner"] != reports.RunnerDriver || m["tier"] != "inside" || m["ok"] != true || m["records"].(float64) == 0 ||
			m["schema"] != float64(reports.SeedSchema) || m["lin"] != "ok" {
			t.Errorf("line %d: %v", i, m)
		}
		if r, _ := m["replay"].(string); !strings.HasPrefix(r, "go run ./cmd/simrun -driver -seed ") {
			t.Errorf("line %d: replay %q", i, r)
		}
	}
	code, out, errs = runArgs(t, "-driver", "-seeds", "1-2", "-report=false", "-driver-binary", bin)
	if code != exitPass || !strings.Contains(out, "2 driver worlds") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
}

// TestDriverShare: with -driver-share the seeds its hash picks run as
// driver worlds, the others in the simulator.
func TestDriverShare(t *testing.T) {
	bin := driverBinary(t)
	code, out, errs := runArgs(t, "-seeds", "1-12", "-driver-share", "40", "-workers", "2", "-shards", "2", "-chaos", "20s", "-json", "-report=false", "-driver-binary", bin)
	if code != exitPass {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	runners := map[string]int{}
	for _, m := range decodeLines(t, out) {
		seed := uint64(m["seed"].(float64))
		want := reports.RunnerSim
		if driverSlot(seed) < 40 {
			want = reports.RunnerDriver
		}
		if m["runner"] != want || m["workers"].(float64) != 2 {
			t.Errorf("seed %d: runner %v (want %s), workers %v", seed, m["runner"], want, m["workers"])
		}
		runners[want]++
	}
	if runners[reports.RunnerSim] == 0 || runners[reports.RunnerDriver] == 0 {
		t.Fatalf("runners %v: the test needs both", runners)
	}
}

// TestDriverSoak: a swarm soak runs its share of driver worlds, counts
// them in its state, and resumes.
func TestDriverSoak(t *testing.T) {
	bin := driverBinary(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	args := []string{"-soak", "-seeds", "1-10", "-workers", "2", "-shards", "2", "-chaos", "20s", "-parallel", "2", "-state", state, "-findings", filepath.Join(dir, "f"), "-driver-binary", bin}
	code, out, errs := runArgs(t, args...)
	if code != exitPass || !strings.Contains(out, "20% of the seeds driver worlds") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	want := 0
	for s := uint64(1); s <= 10; s++ {
		if driverSlot(s) < defaultSoakDriverShare {
			want++
		}
	}
	st := readState(t, state)
	if st.Seeds != 10 || st.DriverSeeds != want || st.Options["driver-share"] != "20" || st.Passed != 10 {
		t.Fatalf("state %+v; want %d driver worlds", st, want)
	}
	if want > 0 && !strings.Contains(out, "driver worlds among them") {
		t.Errorf("the totals do not count the driver worlds: %s", out)
	}
	if code, out, _ = runArgs(t, args...); code != exitPass || !strings.Contains(out, "0 to run (10 already run") {
		t.Fatalf("resumed: exit %d: %s", code, out)
	}
}

// TestDriverTrace: -trace of one driver seed is written by its worker.
func TestDriverTrace(t *testing.T) {
	bin := driverBinary(t)
	path := filepath.Join(t.TempDir(), "d", "trace.jsonl")
	code, out, errs := runArgs(t, "-driver", "-seed", "4", "-trace", path, "-report=false", "-driver-binary", bin)
	if code != exitPass || !strings.Contains(out, "seed 4 (a driver world)") || !strings.Contains(out, "PASS") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if recs, err := trace.ReadAll(f); err != nil || len(recs) < 100 {
		t.Fatalf("trace: %d records, %v", len(recs), err)
	}
}

// TestDriverBuildsItsBinary: without -driver-binary simrun builds the
// test binary itself (go test -c) and runs the seed.
func TestDriverBuildsItsBinary(t *testing.T) {
	driverBinary(t) // the build cache then makes simrun's build quick
	code, out, errs := runArgs(t, "-driver", "-seed", "2", "-report=false")
	if code != exitPass || !strings.Contains(out, "PASS") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
}

// TestDriverFinding: a planted bug of the driver is caught in driver
// worlds; the soak saves the finding with its replay (carrying -driver)
// and how often re-runs of the seed failed again.
func TestDriverFinding(t *testing.T) {
	planted.SkipUnlessEnabled(t)
	bin := driverBinary(t)
	dir := t.TempDir()
	state, findings := filepath.Join(dir, "state.json"), filepath.Join(dir, "findings")
	// driver-handoff-unchecked is caught by seed 2 in every one of many runs
	code, out, errs := runArgs(t, "-soak", "-driver", "-seeds", "2-2", "-mutation", "engine:driver-handoff-unchecked", "-driver-reruns", "2",
		"-state", state, "-findings", findings, "-driver-binary", bin)
	if code != exitViolation || !strings.Contains(out, "FINDING seed 2: a driver world broke S1 (failed again in ") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	st := readState(t, state)
	if len(st.Findings) != 1 || st.Findings[0].Runner != reports.RunnerDriver || !strings.HasSuffix(st.Findings[0].Reproduced, "of 2 re-runs") {
		t.Fatalf("state %+v", st)
	}
	b, err := os.ReadFile(st.Findings[0].File)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"replay: go run -tags shardlease_mutations ./cmd/simrun -driver -seed 2 -mutation engine:driver-handoff-unchecked",
		"or:     go test -tags shardlease_mutations ./sim/driversim", "reproduced: the seed failed again in ", "VIOLATION S1", "json: {"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the case lacks %q:\n%s", want, b)
		}
	}
}

// TestDriverBinaryBesideSimrun: a simrun that finds the driver's test
// binary beside its executable (as an image without the go command ships
// them) runs that one instead of building one: here a stranger, refused.
func TestDriverBinaryBesideSimrun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds simrun")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "simrun")
	args := []string{"build", "-o", exe}
	if planted.Enabled() {
		args = append(args, "-tags", planted.Tag)
	}
	cmd := exec.Command("go", append(args, ".")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	stranger := filepath.Join(dir, driversim.BinaryName(planted.Enabled()))
	if err := os.WriteFile(stranger, []byte("#!/bin/sh\necho 'driversim: other/0'\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(exe, "-driver", "-seed", "1", "-report=false")
	run.Dir = t.TempDir()
	b, err := run.CombinedOutput()
	if err == nil || !strings.Contains(string(b), `speaks "other/0"`) {
		t.Fatalf("err %v:\n%s", err, b)
	}
}
