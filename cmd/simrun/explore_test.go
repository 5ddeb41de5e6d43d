package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/sim"
)

// TestWorldFlagReplays: a world file of a seed's drawn schedule runs
// with the seed's trace hash under simrun -world.
func TestWorldFlagReplays(t *testing.T) {
	o := sim.Options{Seed: 4, Faults: "swarm", NoExcerpts: true}
	res, err := sim.Run(o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "w.json")
	if err := sim.WriteWorld(path, sim.SpecOf(o, res)); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runArgs(t, "-world", path)
	if code != exitPass || !strings.Contains(out, fmt.Sprintf("trace hash: %016x", res.TraceHash)) {
		t.Fatalf("exit %d, want the trace hash %016x:\n%s%s", code, res.TraceHash, out, errs)
	}
	if !strings.Contains(out, "replay: go run ./cmd/simrun -world ") {
		t.Errorf("no replay command:\n%s", out)
	}
}

// TestExploreUsage: the explorer's flags go together, and bad values are
// refused with exit status 2.
func TestExploreUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-budget", "5"},
		{"-explore-dir", "x"},
		{"-world", "x.json", "-seed", "3"},
		{"-world", "x.json", "-explore"},
		{"-explore", "-budget", "0"},
		{"-explore", "-explore-mode", "random"},
		{"-explore", "-seeds", "1-4"},
		{"-world", filepath.Join(t.TempDir(), "missing.json")},
	} {
		if code, out, errs := runArgs(t, args...); code != exitUsage || errs == "" {
			t.Errorf("%v: exit %d (%s%s), want 2 and a message", args, code, out, errs)
		}
	}
}

func readExploreState(t *testing.T, dir string) sim.ExploreState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st sim.ExploreState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	st.CPUSeconds = 0
	return st
}

// TestExploreResumes: a search run to a budget of 2 and resumed to 4
// reaches the state of one run to 4 straight; a state of another search
// is refused.
func TestExploreResumes(t *testing.T) {
	base := with(quick, "-explore", "-explore-seed", "3")
	a, b := t.TempDir(), t.TempDir()
	if code, out, errs := runArgs(t, with(base, "-budget", "2", "-explore-dir", a)...); code != exitPass {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	code, out, errs := runArgs(t, with(base, "-budget", "4", "-explore-dir", a)...)
	if code != exitPass || !strings.Contains(out, "resuming") || !strings.Contains(out, "2 executions done") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if code, out, errs := runArgs(t, with(base, "-budget", "4", "-explore-dir", b)...); code != exitPass {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	sa, sb := readExploreState(t, a), readExploreState(t, b)
	ja, _ := json.Marshal(sa)
	jb, _ := json.Marshal(sb)
	if string(ja) != string(jb) || sa.Execs != 4 {
		t.Fatalf("resumed:\n%s\nstraight:\n%s", ja, jb)
	}
	code, _, errs = runArgs(t, with(quick, "-explore", "-explore-seed", "4", "-budget", "4", "-explore-dir", a)...)
	if code != exitUsage || !strings.Contains(errs, "another search") {
		t.Fatalf("a state of another search: exit %d, %s", code, errs)
	}
}

// TestExploreFindingReplays: a planted bug the search catches is saved as
// a world file whose printed replay command reproduces the violation.
func TestExploreFindingReplays(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runArgs(t, with(plantedArgs, "-explore", "-budget", "2", "-explore-dir", dir)...)
	if code != exitViolation {
		t.Fatalf("exit %d, want 1 (a finding): %s%s", code, out, errs)
	}
	m := regexp.MustCompile(`exec \d+ FINDING (\S+) .*\n.*\n  replay: go run \./cmd/simrun -world (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no finding with a replay command:\n%s", out)
	}
	file := m[2]
	if !filepath.IsAbs(file) {
		file = filepath.Join(repoRoot(), file)
	}
	code, out2, errs := runArgs(t, "-world", file)
	if code != exitViolation || !strings.Contains(out2, "VIOLATION "+strings.Split(m[1], ",")[0]) {
		t.Fatalf("the replay of %s: exit %d, want 1 and a %s violation:\n%s%s", file, code, m[1], out2, errs)
	}
}
