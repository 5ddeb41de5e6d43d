package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readState(t *testing.T, path string) soakState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st soakState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSoakResumes: a soak saves its state; run again with the same flags
// it runs only the seeds not yet run, extended it runs the new ones, and a
// state of another soak is refused.
func TestSoakResumes(t *testing.T) {
	dir := t.TempDir()
	state, findings := filepath.Join(dir, "state.json"), filepath.Join(dir, "findings")
	args := with(quick, "-soak", "-state", state, "-findings", findings)
	code, out, errs := runArgs(t, with(args, "-seeds", "1-4")...)
	if code != exitPass || !strings.Contains(out, "4 to run") || !strings.Contains(out, "PASS: soak") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	st := readState(t, state)
	if st.Seeds != 4 || st.Passed != 4 || st.DoneBelow != 5 || len(st.Done) != 0 || st.Tiers["inside"] != 4 || st.Sessions != 1 {
		t.Fatalf("state %+v", st)
	}
	code, out, _ = runArgs(t, with(args, "-seeds", "1-4")...)
	if code != exitPass || !strings.Contains(out, "0 to run (4 already run") {
		t.Fatalf("a resumed soak: exit %d: %s", code, out)
	}
	code, out, _ = runArgs(t, with(args, "-seeds", "1-6")...)
	if st = readState(t, state); code != exitPass || !strings.Contains(out, "2 to run (4 already run") || st.Seeds != 6 || st.DoneBelow != 7 || st.Sessions != 3 {
		t.Fatalf("an extended soak: exit %d: %s; state %+v", code, out, st)
	}
	code, _, errs = runArgs(t, with(args, "-seeds", "1-6", "-shards", "3")...)
	if code != exitUsage || !strings.Contains(errs, "another soak") {
		t.Fatalf("another soak's state: exit %d: %s", code, errs)
	}
}

// TestSoakSavesFindings: a failing seed is saved as a case with its
// replay command, violations and excerpts, and the soak exits 1.
func TestSoakSavesFindings(t *testing.T) {
	dir := t.TempDir()
	state, findings := filepath.Join(dir, "state.json"), filepath.Join(dir, "findings")
	code, out, errs := runArgs(t, with(plantedArgs, "-soak", "-seeds", "1-2", "-state", state, "-findings", findings)...)
	if code != exitViolation || !strings.Contains(out, "FINDING seed 1") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	st := readState(t, state)
	if st.Failed == 0 || len(st.Findings) != st.Failed || st.ByInvariant["S2"] == 0 {
		t.Fatalf("state %+v", st)
	}
	b, err := os.ReadFile(st.Findings[0].File)
	if err != nil {
		t.Fatal(err)
	}
	c := string(b)
	for _, want := range []string{"replay: go run ./cmd/simrun -seed", "-mutation unfenced-checkpoint", "VIOLATION S2", "    > ", "json: {"} {
		if !strings.Contains(c, want) {
			t.Errorf("the case lacks %q:\n%s", want, c)
		}
	}
}

// TestSoakUsage: the soak's flags go together.
func TestSoakUsage(t *testing.T) {
	for _, args := range [][]string{{"-state", "x"}, {"-soak", "-json"}, {"-soak", "-trace", "x"}} {
		if code, _, _ := runArgs(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestSoakInterrupted: an interrupted soak saves its state and exits 130;
// started again, it runs the rest.
func TestSoakInterrupted(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	args := with(quick, "-soak", "-seeds", "1-50", "-parallel", "2", "-state", state, "-findings", filepath.Join(dir, "f"))
	stop := make(chan struct{})
	close(stop) // interrupted at once
	var out, errs strings.Builder
	if code := runWith(args, &out, &errs, interrupts{stop: stop}); code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s %s", code, exitInterrupted, out.String(), errs.String())
	}
	st := readState(t, state)
	if st.Seeds >= 50 || !strings.Contains(out.String(), "INTERRUPTED") {
		t.Fatalf("state %+v after an interrupt: %s", st, out.String())
	}
	code, o, _ := runArgs(t, args...)
	if st = readState(t, state); code != exitPass || st.Seeds != 50 || st.DoneBelow != 51 {
		t.Fatalf("resumed: exit %d, state %+v: %s", code, st, o)
	}
}
