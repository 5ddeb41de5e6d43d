package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shardlease/shardlease/internal/doccmd"
)

// buildSimrun builds this simrun into a temporary folder.
func buildSimrun(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "simrun")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// simrunProc runs bin with args and env, and returns its exit status and
// output.
func simrunProc(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// runPartitions runs the n partitions of a soak at once, as n processes,
// the way an Indexed Job's pods do (the index from JOB_COMPLETION_INDEX,
// the count from SOAK_PARTITIONS), into dir.
func runPartitions(t *testing.T, bin, dir string, n int, args ...string) []string {
	t.Helper()
	outs := make([]string, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() {
			codes[i], outs[i], _ = simrunProc(t, bin, []string{envIndex + "=" + strconv.Itoa(i), envPartitions + "=" + strconv.Itoa(n)},
				with(args, "-soak", "-soak-dir", dir, "-parallel", "1")...)
		})
	}
	wg.Wait()
	for i, code := range codes {
		if code != exitPass && code != exitViolation {
			t.Fatalf("partition %d/%d: exit %d: %s", i, n, code, outs[i])
		}
	}
	return outs
}

// TestPartitionedSoak: three processes run the three partitions of 30
// seeds, each exactly its share, and -soak-merge adds them up to the 30;
// a partition stopped short is named with its missing seeds and resumes
// them alone; a partition twice, one of another soak, or a folder without
// a state are refused; findings of every partition are listed with their
// replay commands.
func TestPartitionedSoak(t *testing.T) {
	bin := buildSimrun(t)
	root := t.TempDir()
	soak := filepath.Join(root, "soak")
	outs := runPartitions(t, bin, soak, 3, with(quick, "-seeds", "1-30")...)
	for i, out := range outs {
		if !strings.Contains(out, "10 to run") || !strings.Contains(out, "PASS: soak") || !strings.Contains(out, "partition "+strconv.Itoa(i)+"/3") {
			t.Fatalf("partition %d: %s", i, out)
		}
	}
	// each partition ran its share: seeds i+1, i+4, ...
	for i := 0; i < 3; i++ {
		st := readState(t, filepath.Join(soak, "part-"+strconv.Itoa(i)+"-of-3", "state.json"))
		var seeds []uint64
		st.seeds(func(s uint64) { seeds = append(seeds, s) })
		if len(seeds) != 10 || st.Seeds != 10 || st.Partition != i || st.Partitions != 3 {
			t.Fatalf("partition %d ran %v (state %+v)", i, seeds, st)
		}
		for _, s := range seeds {
			if (s-1)%3 != uint64(i) {
				t.Fatalf("partition %d ran seed %d", i, s)
			}
		}
	}
	code, out, errs := simrunProc(t, bin, nil, "-soak-merge", soak)
	if code != exitPass || !strings.Contains(out, "PASS: merged soak") || !strings.Contains(out, "30 of 30 run, 30 passed, 0 failed") ||
		!strings.Contains(out, "seeds/s") || !strings.Contains(out, "seeds per CPU second") {
		t.Fatalf("merge: exit %d: %s %s", code, out, errs)
	}
	// the same, naming each partition's folder
	parts, _ := filepath.Glob(filepath.Join(soak, "part-*"))
	if code, out, _ = simrunProc(t, bin, nil, append([]string{"-soak-merge"}, parts...)...); code != exitPass || !strings.Contains(out, "30 of 30 run") {
		t.Fatalf("merge of the partitions' folders: exit %d: %s", code, out)
	}

	// a partition stopped short: its last three seeds are missing
	p2 := filepath.Join(soak, "part-2-of-3", "state.json")
	st := readState(t, p2)
	st.DoneBelow -= 3 * 3
	st.Seeds -= 3
	st.Passed -= 3
	if err := st.save(p2); err != nil {
		t.Fatal(err)
	}
	code, out, errs = simrunProc(t, bin, nil, "-soak-merge", soak)
	if code != exitUsage || !strings.Contains(out, "INCOMPLETE") || !strings.Contains(errs, "3 seeds of 1-30 were not run: 24 (partition 2/3), 27 (partition 2/3), 30 (partition 2/3)") {
		t.Fatalf("merge with a partition stopped short: exit %d: %s %s", code, out, errs)
	}
	// the same command resumes it: only its missing seeds run
	code, out, _ = simrunProc(t, bin, []string{envIndex + "=2"}, with(quick, "-soak", "-seeds", "1-30", "-partitions", "3", "-soak-dir", soak, "-parallel", "1")...)
	if code != exitPass || !strings.Contains(out, "3 to run (7 already run") {
		t.Fatalf("resumed partition: exit %d: %s", code, out)
	}
	if code, out, errs = simrunProc(t, bin, nil, "-soak-merge", soak); code != exitPass || !strings.Contains(out, "30 of 30 run") {
		t.Fatalf("merge after the resume: exit %d: %s %s", code, out, errs)
	}

	// a partition twice: its seeds would count twice
	dup := filepath.Join(root, "dup")
	if err := os.MkdirAll(dup, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(soak, "part-1-of-3", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dup, "state.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = simrunProc(t, bin, nil, "-soak-merge", soak, dup)
	if code != exitUsage || !strings.Contains(errs, "partition 1/3 is there 2 times") || !strings.Contains(errs, "10 seeds of 1-30 were run more than once: 2 (partition 1/3), 5 (partition 1/3)") {
		t.Fatalf("merge with a partition twice: exit %d: %s", code, errs)
	}
	// a partition missing
	code, _, errs = simrunProc(t, bin, nil, "-soak-merge", parts[0], parts[1])
	if code != exitUsage || !strings.Contains(errs, "partition 2/3 is missing") || !strings.Contains(errs, "10 seeds of 1-30 were not run: 3 (partition 2/3)") {
		t.Fatalf("merge without a partition: exit %d: %s", code, errs)
	}
	// a partition of another soak (other flags)
	other := filepath.Join(root, "other")
	code, _, _ = simrunProc(t, bin, nil, with(quick, "-soak", "-seeds", "1-30", "-partition", "0/3", "-shards", "3", "-soak-dir", other, "-parallel", "1")...)
	if code != exitPass {
		t.Fatalf("the other soak: exit %d", code)
	}
	code, _, errs = simrunProc(t, bin, nil, "-soak-merge", filepath.Join(other, "part-0-of-3"), parts[1], parts[2])
	if code != exitUsage || !strings.Contains(errs, "are of different soaks") || !strings.Contains(errs, "shards=3") {
		t.Fatalf("merge across soaks: exit %d: %s", code, errs)
	}
	empty := t.TempDir()
	if code, _, errs = simrunProc(t, bin, nil, "-soak-merge", empty); code != exitUsage || !strings.Contains(errs, "holds no soak state") {
		t.Fatalf("merge of a folder without a state: exit %d: %s", code, errs)
	}

	// findings: a planted bug soaked in two partitions
	bugs := filepath.Join(root, "bugs")
	runPartitions(t, bin, bugs, 2, with(plantedArgs, "-seeds", "1-4")...)
	code, out, errs = simrunProc(t, bin, nil, "-soak-merge", bugs)
	if code != exitViolation || !strings.Contains(out, "FAIL: merged soak") || !strings.Contains(out, "finding: seed 1 broke S2") ||
		!strings.Contains(out, "replay: go run ./cmd/simrun -seed 1") || !strings.Contains(out, filepath.Join(bugs, "part-0-of-2", "findings")) {
		t.Fatalf("merge with findings: exit %d: %s %s", code, out, errs)
	}
}

// TestPartitionFlags: where a soak's partition comes from, and the
// combinations refused.
func TestPartitionFlags(t *testing.T) {
	for _, tc := range []struct {
		part     string
		count    int
		countSet bool
		env      map[string]string
		want     partition
		err      string
	}{
		{want: partition{0, 1}},
		{part: "2/5", want: partition{2, 5}},
		{part: "0/1", want: partition{0, 1}},
		{count: 4, countSet: true, env: map[string]string{envIndex: "3"}, want: partition{3, 4}},
		{env: map[string]string{envIndex: "1", envPartitions: "2"}, want: partition{1, 2}},
		{count: 1, countSet: true, want: partition{0, 1}},
		{part: "2/5", env: map[string]string{envIndex: "2", envPartitions: "5"}, want: partition{2, 5}},
		{part: "5/5", err: "0 <= i < n"},
		{part: "-1/5", err: "0 <= i < n"},
		{part: "x", err: "want i/n"},
		{part: "1/3", count: 4, countSet: true, err: "disagree"},
		{part: "1/3", env: map[string]string{envIndex: "2"}, err: "disagrees with JOB_COMPLETION_INDEX=2"},
		{count: 4, countSet: true, err: "needs this soak's index"},
		{count: 0, countSet: true, err: "at least 1"},
		{env: map[string]string{envIndex: "1"}, err: "not the partition count"},
		{env: map[string]string{envIndex: "4", envPartitions: "4"}, err: "from 0 to 3"},
		{env: map[string]string{envIndex: "1", envPartitions: "x"}, err: "SOAK_PARTITIONS=\"x\""},
		{part: "0/200", err: "some would have none"},
	} {
		lookupEnv = func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		got, err := parsePartition(tc.part, tc.count, tc.countSet, 100)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v: error %v, want one with %q", tc, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%+v: %v %v, want %v", tc, got, err, tc.want)
		}
	}
	lookupEnv = os.LookupEnv
	// the partition flags are the soak's; the merge takes folders only
	for _, args := range [][]string{{"-partition", "0/2"}, {"-partitions", "2"}, {"-soak-dir", "x"}, {"-soak-merge"}, {"-soak-merge", "-seeds", "1-3", "x"}} {
		if code, _, errs := runArgs(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, errs)
		}
	}
	if p := (partition{3, 12}); p.dir() != "part-03-of-12" || p.size(1, 30) != 3 || !p.owns(1, 28) || p.owns(1, 29) {
		t.Errorf("partition 3/12: %s, %d seeds of 1-30", p.dir(), p.size(1, 30))
	}
}

// TestDocSoakByHand runs docs/soak.md's block of a partitioned soak by
// hand as it is written (bash, in a folder that links to the checkout):
// three partitions as three processes, then the merge of all of them.
func TestDocSoakByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds simrun and runs a soak of three partitions")
	}
	root, err := doccmd.Root()
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doccmd.Blocks(root)
	if err != nil {
		t.Fatal(err)
	}
	script := ""
	for _, b := range blocks {
		if b.File == "docs/soak.md" && strings.HasPrefix(b.Text, "go build -o bin/simrun") {
			script = b.Text
		}
	}
	if script == "" {
		t.Fatal(`docs/soak.md has no shell block that starts with "go build -o bin/simrun"`)
	}
	work := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != ".git" && n != "bin" && !strings.HasPrefix(n, "soak-demo") {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(work, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS: merged soak of scenario swarm, seeds 1-12 in 3 partitions") || !strings.Contains(string(out), "12 of 12 run") {
		t.Fatalf("the block: %v\n%s", err, tail(string(out)))
	}
	for i := 0; i < 3; i++ {
		b, err := os.ReadFile(filepath.Join(work, "soak-demo-"+strconv.Itoa(i)+".log"))
		if err != nil || !strings.Contains(string(b), "partition "+strconv.Itoa(i)+"/3") || !strings.Contains(string(b), "4 of 4 run") {
			t.Fatalf("partition %d's output: %v\n%s", i, err, b)
		}
	}
}
