package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// EnvRequirePrometheus, set to 1 (make test does), turns a missing
// promtool or prometheus from a skip into a failure.
const EnvRequirePrometheus = "SHARDLEASE_REQUIRE_PROMETHEUS"

var (
	rulesFile = filepath.Join("prometheus", "shardlease-rules.yaml")
	ruleTests = []string{"shardlease-rules.test.yaml", "shardlease-renewals.test.yaml"}
)

// promtool returns the path of promtool, or skips t (fails it under
// SHARDLEASE_REQUIRE_PROMETHEUS=1).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not found (Debian's prometheus package; `make prometheus` installs it): " + err.Error()
		if os.Getenv(EnvRequirePrometheus) == "1" {
			t.Fatalf("%s=1: %s", EnvRequirePrometheus, msg)
		}
		t.Skip(msg)
	}
	return p
}

// runRuleTests runs promtool's checks and unit tests of the rules file in
// dir (which holds the rules and the test files).
func runRuleTests(t *testing.T, tool, dir string) (string, error) {
	t.Helper()
	var out strings.Builder
	for _, args := range [][]string{{"check", "rules", "shardlease-rules.yaml"}, append([]string{"test", "rules"}, ruleTests...)} {
		cmd := exec.Command(tool, args...)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		out.Write(b)
		if err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

// TestRules runs promtool's unit tests of the rules.
func TestRules(t *testing.T) {
	tool := promtool(t)
	if out, err := runRuleTests(t, tool, "prometheus"); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
}

// TestRuleTestsCatchWeakenedRules: each rule weakened (a longer for, a
// higher threshold, one evaluation fewer) fails the unit tests.
func TestRuleTestsCatchWeakenedRules(t *testing.T) {
	tool := promtool(t)
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string][2]string{
		"ownership gap fires later":  {"        expr: max by (job) (shardlease_fleet_shards_without_owner) > 0\n        for: 30s", "        expr: max by (job) (shardlease_fleet_shards_without_owner) > 0\n        for: 2m"},
		"ownership gap fires sooner": {"        expr: max by (job) (shardlease_fleet_shards_without_owner) > 0\n        for: 30s", "        expr: max by (job) (shardlease_fleet_shards_without_owner) > 0\n        for: 15s"},
		"renew failures over 50%":    {"[1m])) > 0.05", "[1m])) > 0.5"},
		"renew failures twice":       {"[1m])) > 0.05\n        for: 1m", "[1m])) > 0.05\n        for: 30s"},
		"acquire p99 over 5 s":       {"[5m]))) > 1\n", "[5m]))) > 5\n"},
		"no assigner for 10 minutes": {"        for: 2m\n", "        for: 10m\n"},
		"poison after 100 failures":  {"(shardlease_batch_failures_in_a_row) >= 10", "(shardlease_batch_failures_in_a_row) >= 100"},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(string(rules), edit[0]) {
				t.Fatalf("the rules no longer contain %q", edit[0])
			}
			dir := t.TempDir()
			weak := strings.Replace(string(rules), edit[0], edit[1], 1)
			if err := os.WriteFile(filepath.Join(dir, "shardlease-rules.yaml"), []byte(weak), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, f := range ruleTests {
				b, err := os.ReadFile(filepath.Join("prometheus", f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if out, err := runRuleTests(t, tool, dir); err == nil {
				t.Fatalf("the weakened rules passed the unit tests:\n%s", out)
			}
		})
	}
}

// ruleFile is the part of a Prometheus rules file the tests read.
type ruleFile struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval"`
		Rules    []struct {
			Record      string            `json:"record"`
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// readRules decodes the rules file strictly.
func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalStrict(b, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

// TestRulesNameExportedMetrics: every shardlease_ metric the rules'
// expressions read is one the metrics package exports, and the alerts the
// issue names are there.
func TestRulesNameExportedMetrics(t *testing.T) {
	names := exportedNames(t)
	alerts := map[string]bool{}
	n := 0
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			n++
			if bad := unknownMetrics(r.Expr, names); len(bad) > 0 {
				t.Errorf("%s %s%s reads metrics the metrics package does not export: %v", rulesFile, r.Record, r.Alert, bad)
			}
			if r.Alert != "" {
				alerts[r.Alert] = true
			}
		}
	}
	for _, a := range []string{"ShardleaseOwnershipGap", "ShardleaseLeaseAcquireSlow", "ShardleaseRenewFailures"} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}
	if n < 10 {
		t.Errorf("only %d rules read", n)
	}
}
