//go:build shardlease_mutations

package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExploreFindsAnEngineBug: a bug planted inside the engine that the
// search catches prints a replay command with the build tag, and the
// world file it names reproduces the violation.
func TestExploreFindsAnEngineBug(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runArgs(t, "-explore", "-budget", "1", "-explore-dir", dir, "-mutation", "engine:expiry-by-wall-clock")
	if code != exitViolation {
		t.Fatalf("exit %d, want 1 (a finding): %s%s", code, out, errs)
	}
	m := regexp.MustCompile(`FINDING (\S+) .*\n.*\n  replay: go run -tags shardlease_mutations \./cmd/simrun -world (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no finding with a replay command that builds the planted bugs in:\n%s", out)
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
