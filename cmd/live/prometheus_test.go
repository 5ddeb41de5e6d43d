package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// promServer is a Prometheus server that scripts/prometheus.sh started for
// the live chaos test: it scrapes every second the targets the test
// writes, and evaluates the repository's rules every second.
type promServer struct {
	url   string
	state string
}

// startPrometheus starts a server of its own (a missing prometheus fails
// the test: the chaos test is asked for explicitly, and make test-chaos
// installs it) and stops it when t ends.
func startPrometheus(t *testing.T) *promServer {
	t.Helper()
	root := repoRoot(t)
	state := t.TempDir()
	sh := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(root, "scripts", "prometheus.sh"), args...)
		cmd.Env = append(os.Environ(), "PROMETHEUS_STATE_DIR="+state)
		b, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(b)), err
	}
	if out, err := sh("start"); err != nil {
		t.Fatalf("scripts/prometheus.sh start (make prometheus installs Debian's package): %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(state, "prometheus.log")); err == nil {
				t.Logf("prometheus log:\n%s", tail(string(b), 30))
			}
		}
		_, _ = sh("stop")
	})
	u, err := sh("url")
	if err != nil {
		t.Fatalf("scripts/prometheus.sh url: %v: %s", err, u)
	}
	return &promServer{url: u, state: state}
}

// setTargets makes the server scrape addrs under job (file_sd).
func (p *promServer) setTargets(t *testing.T, job string, addrs []string) {
	t.Helper()
	b, err := json.Marshal([]map[string]any{{"targets": addrs, "labels": map[string]string{"job": job}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(p.state, "targets", job+".json")
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil { // atomically: the server watches the directory
		t.Fatal(err)
	}
}

// promSample is one element of an instant vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query now.
func (p *promServer) query(expr string) ([]promSample, error) {
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, r.Error)
	}
	return r.Data.Result, nil
}

// evaluating checks that the rule group was evaluated within the last
// bound (the server evaluates every second).
func (p *promServer) evaluating(group string, bound time.Duration) error {
	resp, err := http.Get(p.url + "/api/v1/rules")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Groups []struct {
				Name           string    `json:"name"`
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err
	}
	for _, g := range r.Data.Groups {
		if g.Name == group {
			if ago := time.Since(g.LastEvaluation); ago > bound {
				return fmt.Errorf("group %s last evaluated %v ago", group, ago)
			}
			return nil
		}
	}
	return fmt.Errorf("no rule group %s loaded", group)
}

// promAlert is one alert of /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alerts returns the alerts pending or firing now for job.
func (p *promServer) alerts(job string) ([]promAlert, error) {
	resp, err := http.Get(p.url + "/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	var out []promAlert
	for _, a := range r.Data.Alerts {
		if a.Labels["job"] == job {
			out = append(out, a)
		}
	}
	return out, nil
}

// raw returns the samples of a range selector (the instant query expr),
// with their times, for a failure message.
func (w *promWatch) raw(expr string) string {
	resp, err := http.Get(w.prom.url + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, x := range r.Data.Result {
		fmt.Fprintf(&b, "%s:", x.Metric["owner"])
		for _, v := range x.Values {
			ts, _ := v[0].(float64)
			fmt.Fprintf(&b, " %s=%v", time.UnixMilli(int64(ts*1000)).Format("15:04:05.000"), v[1])
		}
		b.WriteString("; ")
	}
	return b.String()
}

func describeSamples(s []promSample) string {
	var b strings.Builder
	for _, x := range s {
		fmt.Fprintf(&b, "%v=%v ", x.Metric, x.Value[1])
	}
	return b.String()
}

// seconds is d rounded up to whole seconds, for range selectors.
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int((d+time.Second-1)/time.Second)) }

// promWatch is the Prometheus side of one chaos run: its job, and the
// checks of the alerts.
type promWatch struct {
	prom *promServer
	job  string
}

// scraping waits until the server scrapes all n workers and reads the
// fleet from the assigner.
func (w *promWatch) scraping(t *testing.T, n int) {
	t.Helper()
	waitFor(t, "prometheus scraping every worker and the assigner's fleet series", 30*time.Second, func() (bool, string) {
		up, err := w.prom.query(fmt.Sprintf(`count(up{job=%q} == 1)`, w.job))
		if err != nil {
			return false, err.Error()
		}
		fleet, err := w.prom.query(fmt.Sprintf(`shardlease_fleet_shards_without_owner{job=%q}`, w.job))
		if err != nil {
			return false, err.Error()
		}
		return len(up) == 1 && up[0].Value[1] == fmt.Sprint(n) && len(fleet) == 1,
			fmt.Sprintf("up: %s; fleet: %s", describeSamples(up), describeSamples(fleet))
	})
}

// quiet checks the quiet phase of the last d: no alert of the job fired
// at any evaluation (ALERTS holds a series for every pending or firing
// alert), the rules were evaluated meanwhile, and the assigner's fleet
// series were scraped. It returns what was pending, and the most shards
// the fleet series showed without an owner (a loaded machine can let a
// lease expire in a quiet phase too: that is the alert's purpose, and
// pending is not firing).
func (w *promWatch) quiet(t *testing.T, d time.Duration) (pending string, withoutOwner string) {
	t.Helper()
	window := seconds(d)
	firing, err := w.prom.query(fmt.Sprintf(`count_over_time(ALERTS{job=%q,alertstate="firing"}[%s])`, w.job, window))
	if err != nil {
		t.Fatal(err)
	}
	if len(firing) > 0 {
		t.Fatalf("alerts fired in the quiet phase (the last %v): %s", d, describeSamples(firing))
	}
	if err := w.prom.evaluating("shardlease-fleet", 5*time.Second); err != nil {
		t.Fatalf("the rules were not evaluated in the quiet phase: %v", err)
	}
	// By job: a loaded machine can move the assigner row within the phase,
	// and the fleet series then come from two workers (label owner).
	seen, err := w.prom.query(fmt.Sprintf(`max by (job) (max_over_time(shardlease_fleet_shards_without_owner{job=%q}[%s]))`, w.job, window))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 {
		t.Fatalf("in the quiet phase the assigner's fleet series were not scraped: %s; the samples: %s", describeSamples(seen),
			w.raw(fmt.Sprintf(`shardlease_fleet_shards_without_owner{job=%q}[%s]`, w.job, window)))
	}
	pend, err := w.prom.query(fmt.Sprintf(`count_over_time(ALERTS{job=%q,alertstate="pending"}[%s])`, w.job, window))
	if err != nil {
		t.Fatal(err)
	}
	return describeSamples(pend), fmt.Sprint(seen[0].Value[1])
}

// gapAlerted waits until ShardleaseOwnershipGap has been pending or firing
// for job at some evaluation since since, and returns its states.
func (w *promWatch) gapAlerted(t *testing.T, since time.Time) string {
	t.Helper()
	var states string
	waitFor(t, "the ownership-gap alert pending or firing after the kill", 30*time.Second, func() (bool, string) {
		s, err := w.prom.query(fmt.Sprintf(`count_over_time(ALERTS{alertname="ShardleaseOwnershipGap",job=%q}[%s])`, w.job, seconds(time.Since(since))))
		if err != nil {
			return false, err.Error()
		}
		var st []string
		for _, x := range s {
			st = append(st, x.Metric["alertstate"])
		}
		states = strings.Join(st, ", ")
		return len(s) > 0, "no ALERTS series since the kill; the fleet's samples since: " + w.raw(fmt.Sprintf(`shardlease_fleet_shards_without_owner{job=%q}[%s]`, w.job, seconds(time.Since(since))))
	})
	return states
}

// gapResolved waits until ShardleaseOwnershipGap is neither pending nor
// firing for job.
func (w *promWatch) gapResolved(t *testing.T) {
	t.Helper()
	waitFor(t, "the ownership-gap alert resolved after the failover", 30*time.Second, func() (bool, string) {
		as, err := w.prom.alerts(w.job)
		if err != nil {
			return false, err.Error()
		}
		for _, a := range as {
			if a.Labels["alertname"] == "ShardleaseOwnershipGap" {
				return false, "still " + a.State
			}
		}
		return true, ""
	})
}
