package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/deploy/grafana"
)

// dashboardExprs returns every query expression of a dashboard's JSON:
// the panels' targets (rows' nested panels too) and the variables'
// queries.
func dashboardExprs(t *testing.T, b []byte) []string {
	t.Helper()
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(raw []json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p struct {
				Panels  []json.RawMessage `json:"panels"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			}
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatal(err)
			}
			for _, tg := range p.Targets {
				out = append(out, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			out = append(out, q)
		}
	}
	return out
}

// TestDashboard: the checked-in dashboard is what package grafana builds
// (go run ./deploy/grafana/gen), and every query names metrics the
// metrics package exports, among them the fleet signals, throughput, lag
// and checkpoints.
func TestDashboard(t *testing.T) {
	want, err := grafana.JSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("grafana", filepath.Base(grafana.File)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what package grafana builds: run go run ./deploy/grafana/gen", grafana.File)
	}
	names := exportedNames(t)
	exprs := dashboardExprs(t, got)
	all := strings.Join(exprs, "\n")
	for _, e := range exprs {
		if strings.TrimSpace(e) == "" {
			t.Error("an empty query")
		}
		if bad := unknownMetrics(e, names); len(bad) > 0 {
			t.Errorf("query %q names metrics the metrics package does not export: %v", e, bad)
		}
		if !strings.Contains(e, "shardlease_") {
			t.Errorf("query %q reads no shardlease metric", e)
		}
	}
	for _, m := range []string{"shardlease_fleet_shards_without_owner", "shardlease_fleet_ownership_gap_seconds", "shardlease_fleet_leases_awaiting_assignment",
		"shardlease_fleet_handoffs_in_flight", "shardlease_assigner_info", "shardlease_lease_acquire_duration_seconds_bucket", "shardlease_renew_failures_total",
		"shardlease_records_processed_total", "shardlease_millis_behind_latest", "shardlease_checkpoints_total"} {
		if !strings.Contains(all, m) {
			t.Errorf("no query reads %s", m)
		}
	}
	if len(exprs) < 20 {
		t.Errorf("only %d queries", len(exprs))
	}
}

func TestDashboardExprsFindsEveryQuery(t *testing.T) {
	b := []byte(`{"panels":[{"type":"row","panels":[{"targets":[{"expr":"a"}]}]},{"targets":[{"expr":"b"},{"expr":"c"}]}],
		"templating":{"list":[{"type":"query","query":"label_values(d, job)"},{"type":"datasource","query":"prometheus"}]}}`)
	if got := strings.Join(dashboardExprs(t, b), ","); got != "a,b,c,label_values(d, job)" {
		t.Fatalf("dashboardExprs = %s", got)
	}
}

// TestDashboardQueriesParse checks every query's PromQL with promtool:
// each becomes a recording rule (the dashboard's variables replaced by
// values) of a rules file that promtool check rules parses.
func TestDashboardQueriesParse(t *testing.T) {
	tool := promtool(t)
	b, err := os.ReadFile(filepath.Join("grafana", filepath.Base(grafana.File)))
	if err != nil {
		t.Fatal(err)
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range dashboardExprs(t, b) {
		if strings.HasPrefix(e, "label_values(") {
			continue // a Grafana function, not PromQL
		}
		e = strings.NewReplacer("$job", "app", "$__rate_interval", "1m").Replace(e)
		q, _ := json.Marshal(e)
		rules.WriteString("      - record: dashboard:query" + strconv.Itoa(i) + "\n        expr: " + string(q) + "\n")
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("a dashboard query does not parse: %v\n%s", err, out)
	}
}
