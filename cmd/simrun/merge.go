package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A merged soak: the state files of its partitions, read back by
// simrun -soak-merge DIR..., checked to cover their range once, and added
// up.

// partState is one partition's state file.
type partState struct {
	path string
	st   soakState
}

// findStates returns the state files in dirs: DIR/state.json, or
// DIR/*/state.json (a -soak-dir with a folder per partition). Each DIR
// must hold one.
func findStates(dirs []string) ([]partState, error) {
	var out []partState
	for _, d := range dirs {
		paths := []string{filepath.Join(d, "state.json")}
		if _, err := os.Stat(paths[0]); errors.Is(err, fs.ErrNotExist) {
			paths, _ = filepath.Glob(filepath.Join(d, "*", "state.json"))
			if len(paths) == 0 {
				return nil, fmt.Errorf("%s holds no soak state (state.json, or */state.json)", d)
			}
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			var st soakState
			if err := json.Unmarshal(b, &st); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, partState{path: p, st: st})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].st.Partition < out[j].st.Partition })
	return out, nil
}

// mergeProblems returns what keeps the states from being one soak: other
// settings or range, other partition counts, a partition twice or
// missing, seeds not run (or run twice, or not a partition's own).
func mergeProblems(parts []partState) []string {
	var probs []string
	a := &parts[0].st
	for _, p := range parts[1:] {
		b := &p.st
		if !mapsEqual(a.Options, b.Options) {
			probs = append(probs, fmt.Sprintf("%s and %s are of different soaks: %s / %s", parts[0].path, p.path, optionString(a.Options), optionString(b.Options)))
		}
		if a.First != b.First || a.Last != b.Last {
			probs = append(probs, fmt.Sprintf("%s (seeds %d-%d) and %s (seeds %d-%d) disagree on the range", parts[0].path, a.First, a.Last, p.path, b.First, b.Last))
		}
		if a.part().count != b.part().count {
			probs = append(probs, fmt.Sprintf("%s (partition %s) and %s (partition %s) disagree on the partition count", parts[0].path, a.part(), p.path, b.part()))
		}
	}
	if len(probs) > 0 {
		return probs
	}
	n := a.part().count
	by := make([][]string, n)
	for _, p := range parts {
		if i := p.st.Partition; i >= 0 && i < n {
			by[i] = append(by[i], p.path)
		} else {
			probs = append(probs, fmt.Sprintf("%s: partition %s is out of range", p.path, p.st.part()))
		}
	}
	for i, paths := range by {
		switch {
		case len(paths) == 0:
			probs = append(probs, fmt.Sprintf("partition %d/%d is missing: none of the folders holds its state", i, n))
		case len(paths) > 1:
			probs = append(probs, fmt.Sprintf("partition %d/%d is there %d times (%s): its seeds would count twice", i, n, len(paths), strings.Join(paths, ", ")))
		}
	}
	// every seed of the range run exactly once, and by its partition
	size := a.Last - a.First + 1
	if size > 1<<24 {
		return append(probs, fmt.Sprintf("seeds %d-%d: more than %d seeds", a.First, a.Last, 1<<24))
	}
	runs := make([]uint8, size)
	var foreign []string
	for _, p := range parts {
		pp := p.st.part()
		p.st.seeds(func(s uint64) {
			switch {
			case s < a.First || s > a.Last:
				foreign = append(foreign, fmt.Sprintf("%s ran seed %d, outside %d-%d", p.path, s, a.First, a.Last))
			case !pp.owns(a.First, s):
				foreign = append(foreign, fmt.Sprintf("%s (partition %s) ran seed %d, another partition's", p.path, pp, s))
				runs[s-a.First] = min(runs[s-a.First]+1, 2)
			default:
				runs[s-a.First] = min(runs[s-a.First]+1, 2)
			}
		})
	}
	if len(foreign) > 0 {
		probs = append(probs, foreign[:min(len(foreign), 5)]...)
	}
	var missing, twice []uint64
	for i, r := range runs {
		switch r {
		case 0:
			missing = append(missing, a.First+uint64(i))
		case 2:
			twice = append(twice, a.First+uint64(i))
		}
	}
	if len(missing) > 0 {
		probs = append(probs, fmt.Sprintf("%d seeds of %d-%d were not run: %s (resume their partitions: the same command goes on where it stopped)", len(missing), a.First, a.Last, seedList(missing, a)))
	}
	if len(twice) > 0 {
		probs = append(probs, fmt.Sprintf("%d seeds of %d-%d were run more than once: %s", len(twice), a.First, a.Last, seedList(twice, a)))
	}
	return probs
}

// seedList names up to 8 seeds and their partitions.
func seedList(seeds []uint64, st *soakState) string {
	n := st.part().count
	var parts []string
	for _, s := range seeds[:min(len(seeds), 8)] {
		if n > 1 {
			parts = append(parts, fmt.Sprintf("%d (partition %d/%d)", s, (s-st.First)%uint64(n), n))
		} else {
			parts = append(parts, fmt.Sprint(s))
		}
	}
	if len(seeds) > 8 {
		parts = append(parts, "...")
	}
	return strings.Join(parts, ", ")
}

// runMerge merges the soak in dirs and prints it: the totals, the speed
// and every finding. It returns 0 if the soak is whole and every seed
// passed, 1 if one failed, 2 if the folders are not one whole soak.
func runMerge(dirs []string, stdout, stderr io.Writer) int {
	parts, err := findStates(dirs)
	if err != nil {
		fmt.Fprintf(stderr, "simrun: -soak-merge: %v\n", err)
		return exitUsage
	}
	tot := soakState{Tiers: map[string]int{}, ByInvariant: map[string]int{}}
	longest := 0.0
	for _, p := range parts {
		st := &p.st
		tot.Seeds += st.Seeds
		tot.Passed += st.Passed
		tot.Failed += st.Failed
		tot.Errors += st.Errors
		tot.Tolerated += st.Tolerated
		tot.LinUnknown += st.LinUnknown
		tot.VirtualSeconds += st.VirtualSeconds
		tot.Events += st.Events
		tot.WallSeconds += st.WallSeconds
		tot.CPUSeconds += st.CPUSeconds
		tot.Sessions += st.Sessions
		longest = max(longest, st.WallSeconds)
		for k, v := range st.Tiers {
			tot.Tiers[k] += v
		}
		for k, v := range st.ByInvariant {
			tot.ByInvariant[k] += v
		}
		for _, f := range st.Findings {
			if _, err := os.Stat(f.File); err != nil {
				// the case as the partition wrote it, where its
				// folder is now (copied off the machine that ran it)
				if alt := filepath.Join(filepath.Dir(p.path), "findings", filepath.Base(f.File)); fileExists(alt) {
					f.File = alt
				}
			}
			tot.Findings = append(tot.Findings, f)
		}
	}
	sort.SliceStable(tot.Findings, func(i, j int) bool { return tot.Findings[i].Seed < tot.Findings[j].Seed })
	a := &parts[0].st
	probs := mergeProblems(parts)
	verdict := "PASS"
	switch {
	case len(probs) > 0:
		verdict = "INCOMPLETE"
	case tot.Failed > 0 || tot.Errors > 0:
		verdict = "FAIL"
	}
	total := a.Last - a.First + 1
	fmt.Fprintf(stdout, "%s: merged soak of scenario %s, seeds %d-%d in %d partitions (%s): %d of %d run, %d passed, %d failed",
		verdict, a.Options["scenario"], a.First, a.Last, a.part().count, optionString(a.Options), tot.Seeds, total, tot.Passed, tot.Failed)
	if tot.Errors > 0 {
		fmt.Fprintf(stdout, ", %d could not run", tot.Errors)
	}
	fmt.Fprintf(stdout, "; tiers: %d inside, %d outside; %d S1 tolerated outside the assumptions; Lin unknown on %d\n",
		tot.Tiers["inside"], tot.Tiers["outside"], tot.Tolerated, tot.LinUnknown)
	if len(tot.ByInvariant) > 0 {
		var vs []string
		for _, k := range sortedKeys(tot.ByInvariant) {
			vs = append(vs, fmt.Sprintf("%s %d", k, tot.ByInvariant[k]))
		}
		fmt.Fprintf(stdout, "violations: %s\n", strings.Join(vs, ", "))
	}
	if tot.Seeds > 0 && longest > 0 {
		fmt.Fprintf(stdout, "speed: %d seeds, %.0f virtual seconds, %d events; wall %.0f s for the longest partition (%.0f s summed over %d state files, %d sessions): %.1f seeds/s; %.1f CPU s: %.2f seeds per CPU second\n",
			tot.Seeds, tot.VirtualSeconds, tot.Events, longest, tot.WallSeconds, len(parts), tot.Sessions,
			float64(tot.Seeds)/longest, tot.CPUSeconds, float64(tot.Seeds)/max(tot.CPUSeconds, 1e-9))
	}
	for _, f := range tot.Findings {
		fmt.Fprintf(stdout, "finding: seed %d %s; %s; replay: %s\n", f.Seed, findingWhat(&f), f.File, f.Replay)
	}
	for _, p := range parts {
		fmt.Fprintf(stdout, "partition %s: %d seeds, %d failed: %s\n", p.st.part(), p.st.Seeds, p.st.Failed, p.path)
	}
	if len(probs) > 0 {
		for _, pr := range probs {
			fmt.Fprintf(stderr, "simrun: -soak-merge: %s\n", pr)
		}
		return exitUsage
	}
	if tot.Failed > 0 || tot.Errors > 0 {
		return exitViolation
	}
	return exitPass
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
