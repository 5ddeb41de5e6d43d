package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchTargets(t *testing.T) {
	cs := []benchResult{
		{Name: "swarm-200", SeedsPerCPUSecond: 30},
		{Name: "10x100-1h", VirtualPerCPUSecond: 3000, PeakRSSMB: 30},
		{Name: "10x100-10m", PeakRSSMB: 27},
		{Name: "1000x10000-10m", PeakRSSMB: 9000, VirtualPerCPUSecond: 6},
	}
	got := map[string]benchTarget{}
	for _, tg := range targets(cs) {
		got[tg.Target] = tg
	}
	want := map[string]bool{
		"default swarm: seeds per CPU second >= 25":                           true,
		"10x100, one virtual hour: virtual seconds per CPU second >= 4000":    false,
		"10x100, one virtual hour: peak RSS <= 200 MB":                        true,
		"10x100: peak RSS of one hour / of 10 minutes within 1 ± 0.2":         true,
		"1000x10000, 10 virtual minutes: peak RSS <= 8192 MB":                 false,
		"1000x10000, 10 virtual minutes: virtual seconds per CPU second >= 5": true,
	}
	if len(got) != len(want) {
		t.Errorf("%d targets evaluated, want %d (those whose cases were all measured; no live heap, no live-heap ratio): %v", len(got), len(want), got)
	}
	for what, met := range want {
		tg, ok := got[what]
		if !ok {
			t.Errorf("target %q not evaluated", what)
			continue
		}
		if tg.Met != met {
			t.Errorf("%q: met %v (value %v), want %v", what, tg.Met, tg.Value, met)
		}
	}
	if r := got["10x100: peak RSS of one hour / of 10 minutes within 1 ± 0.2"]; r.Value != 1.111 {
		t.Errorf("ratio %v, want 30/27 = 1.111", r.Value)
	}
}

// TestBenchFailsLoudly runs -bench on a stand-in for simrun that reports
// a slow world: the target it misses is named on stderr, and the exit
// status says so.
func TestBenchFailsLoudly(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "simrun")
	// a millisecond of virtual time: under 4,000 virtual seconds per CPU
	// second however fast the process (0 if it took no measurable CPU)
	script := "#!/bin/sh\necho '{\"virtual_seconds\":0.001,\"events\":100,\"trace_hash\":\"x\"}'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bench.json")
	var stdout, stderr bytes.Buffer
	code := runBench(out, bin, []string{"10x100-1h"}, 1, &stdout, &stderr)
	if code != exitViolation {
		t.Fatalf("exit %d, want %d (a missed target)\n%s", code, exitViolation, stderr.String())
	}
	if !strings.Contains(stderr.String(), "TARGET MISSED (issue 18): 10x100, one virtual hour: virtual seconds per CPU second >= 4000") {
		t.Errorf("stderr does not name the missed target:\n%s", stderr.String())
	}
	var rep benchReport
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != 1 || len(rep.Targets) != 2 {
		t.Fatalf("report: %d cases, %d targets; want 1 and 2 (10x100's speed and peak RSS)", len(rep.Cases), len(rep.Targets))
	}
	if code := runBench(out, bin, []string{"no-such-case"}, 1, &stdout, &stderr); code != exitUsage {
		t.Errorf("an unknown case: exit %d, want %d", code, exitUsage)
	}
}
