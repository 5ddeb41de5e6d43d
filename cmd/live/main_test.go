package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func runMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := realMain(context.Background(), args, &out, &errOut)
	return code, out.String() + errOut.String()
}

func TestUsageAndUnknownCommand(t *testing.T) {
	if code, out := runMain(t, "help"); code != exitOK || !strings.Contains(out, "live check") {
		t.Fatalf("help: %d %s", code, out)
	}
	if code, out := runMain(t, "frobnicate"); code != exitUsage || !strings.Contains(out, `unknown command "frobnicate"`) {
		t.Fatalf("unknown: %d %s", code, out)
	}
}

func TestRunNamesMissingFlags(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	code, out := runMain(t, "run", "-metrics-addr", "")
	if code != exitUsage || !strings.Contains(out, "missing -stream (or LIVE_STREAM) and -table (or LIVE_TABLE)") {
		t.Fatalf("%d %s", code, out)
	}
}

// An invalid configuration is rejected before any call, with the rule it
// breaks.
func TestRunRejectsAnInvalidConfigurationWithTheRule(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("LIVE_STREAM", "orders")
	t.Setenv("LIVE_TABLE", "orders-leases")
	t.Setenv("LIVE_LEASE_DURATION", "2s") // from the environment
	code, out := runMain(t, "run", "-renew-interval", "1s", "-metrics-addr", "", "-initial-position", "EARLIEST")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d: %s", code, exitUsage, out)
	}
	for _, rule := range []string{"-lease-duration (2s) must be at least 3 x -renew-interval (1s)",
		`-initial-position "EARLIEST" is not TRIM_HORIZON, LATEST or AT_TIMESTAMP`} {
		if !strings.Contains(out, rule) {
			t.Errorf("output lacks %q:\n%s", rule, out)
		}
	}
}

// Session renewal with scan-mode assignment is refused at start, the rule
// named by the flags (the mode from the environment, the assignment from
// the command line); an unknown mode is named too; -h shows the flag.
func TestRunRejectsSessionRenewalWithoutTheAssigner(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("LIVE_RENEWAL", "session")
	code, out := runMain(t, "run", "-stream", "s", "-table", "t", "-metrics-addr", "", "-assignment", "scan")
	if want := `-renewal "session" needs -assignment "assigner"`; code != exitUsage || !strings.Contains(out, want) {
		t.Errorf("-renewal session -assignment scan: exit %d, want %d with %q:\n%s", code, exitUsage, want, out)
	}
	code, out = runMain(t, "run", "-stream", "s", "-table", "t", "-metrics-addr", "", "-renewal", "sessions")
	if want := `-renewal "sessions" is not "auto", "lease" or "session"`; code != exitUsage || !strings.Contains(out, want) {
		t.Errorf("-renewal sessions: exit %d, want %d with %q:\n%s", code, exitUsage, want, out)
	}
	code, out = runMain(t, "run", "-h")
	if want := "-renewal MODE  [LIVE_RENEWAL]"; code != exitOK || !strings.Contains(out, want) || !strings.Contains(out, "(default auto)") {
		t.Errorf("live run -h: exit %d, want %q and its default:\n%s", code, want, out)
	}
}

func TestBadEnvironmentValueIsNamed(t *testing.T) {
	t.Setenv("LIVE_LEASE_DURATION", "soon")
	code, out := runMain(t, "run")
	if code != exitUsage || !strings.Contains(out, `LIVE_LEASE_DURATION="soon"`) {
		t.Fatalf("%d %s", code, out)
	}
}

func TestCheckNeedsDirectories(t *testing.T) {
	if code, out := runMain(t, "check"); code != exitUsage || !strings.Contains(out, "usage: live check") {
		t.Fatalf("%d %s", code, out)
	}
	if code, out := runMain(t, "check", t.TempDir()); code != exitUsage || !strings.Contains(out, "no *.jsonl files") {
		t.Fatalf("%d %s", code, out)
	}
}

func TestDefaultOwnerIsHostPlusSuffix(t *testing.T) {
	a, b := defaultOwner(), defaultOwner()
	if a == b || !strings.Contains(a, "-") {
		t.Fatalf("owners %q %q", a, b)
	}
}

func TestHashNextAndAdjacentPair(t *testing.T) {
	if hashNext("129") != "130" || hashNext("99") != "100" {
		t.Fatal(hashNext("129"), hashNext("99"))
	}
}

// The fan-out flags are checked before any call: an unknown mode, and
// fan-out without a consumer name, are rejected with the rule.
func TestRunRejectsBadFanOutFlags(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-consumer", "push"}, `consumer mode "push" is neither polling nor fan-out`},
		{[]string{"-consumer", "fan-out"}, `-consumer-name "" (required with -consumer fan-out)`},
		{[]string{"-consumer-name", "app"}, "-consumer is polling"},
	} {
		args := append([]string{"run", "-stream", "orders", "-table", "orders-leases", "-metrics-addr", ""}, tc.args...)
		code, out := runMain(t, args...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, exitUsage, tc.want, out)
		}
	}
	t.Setenv("LIVE_CONSUMER", "fan-out")
	if code, out := runMain(t, "run", "-stream", "orders", "-table", "orders-leases", "-metrics-addr", ""); code != exitUsage || !strings.Contains(out, "-consumer-name") {
		t.Errorf("LIVE_CONSUMER=fan-out without a name: exit %d:\n%s", code, out)
	}
}

func TestCreateConsumerNeedsStream(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	if code, out := runMain(t, "create", "-table", "t", "-consumer-name", "app"); code != exitUsage || !strings.Contains(out, "-consumer-name needs -stream") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestRunUsageAndFlagErrors: a typo gets one line naming the flag, not the
// usage; a duration without a unit says what to write; a negative duration
// is one error; -h names every flag's variable; -log-format json makes the
// errors JSON lines.
func TestRunUsageAndFlagErrors(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	code, out := runMain(t, "run", "-stream", "s", "-table", "t", "-leese-duration", "10s")
	if code != exitUsage || strings.Count(out, "\n") != 1 || !strings.Contains(out, "-leese-duration") || !strings.Contains(out, "live run -h") {
		t.Errorf("a misspelt flag: exit %d, want one line naming it and live run -h:\n%s", code, out)
	}
	code, out = runMain(t, "run", "-stream", "s", "-table", "t", "-lease-duration", "10")
	if code != exitUsage || !strings.Contains(out, `-lease-duration "10": not a duration; write it with a unit, such as 10s`) {
		t.Errorf("a duration without a unit: exit %d:\n%s", code, out)
	}
	t.Setenv("LIVE_RENEW_INTERVAL", "3")
	code, out = runMain(t, "run", "-stream", "s", "-table", "t")
	if code != exitUsage || !strings.Contains(out, `LIVE_RENEW_INTERVAL="3" (as -renew-interval)`) || !strings.Contains(out, "write it with a unit") {
		t.Errorf("a duration without a unit from the environment: exit %d:\n%s", code, out)
	}
	t.Setenv("LIVE_RENEW_INTERVAL", "")
	os.Unsetenv("LIVE_RENEW_INTERVAL")
	code, out = runMain(t, "run", "-stream", "s", "-table", "t", "-lease-duration", "-1s", "-metrics-addr", "")
	if code != exitUsage || strings.Count(out, "\n") != 1 || !strings.Contains(out, "durations must not be negative: -lease-duration -1s") {
		t.Errorf("a negative duration: exit %d, want one error:\n%s", code, out)
	}
	code, out = runMain(t, "run", "-h")
	if code != exitOK || !strings.Contains(out, "-lease-duration DURATION  [LIVE_LEASE_DURATION]") || !strings.Contains(out, "-table TABLE  [LIVE_TABLE]") ||
		strings.Contains(out, "`") {
		t.Errorf("live run -h: exit %d:\n%s", code, out)
	}
	code, out = runMain(t, "run", "-log-format", "json", "-stream", "s")
	if code != exitUsage || strictJSON(strings.TrimSpace(out)) != nil || !strings.Contains(out, `"level":"ERROR"`) || !strings.Contains(out, "missing -table") {
		t.Errorf("-log-format json: exit %d, want one JSON error line:\n%s", code, out)
	}
}

// TestCreateSaysWhenTheStreamDiffers: live create -shards N on a stream
// that exists with another count fails, saying so; the same count, or no
// -shards, succeeds.
func TestCreateSaysWhenTheStreamDiffers(t *testing.T) {
	_, stream := liveServers(t, "create") // a 1-shard stream
	if code, out := runMain(t, "create", "-stream", stream, "-shards", "4"); code != exitFailed ||
		!strings.Contains(out, "already existed with 1 open shards, not the 4 asked for") {
		t.Errorf("-shards 4 on a 1-shard stream: exit %d:\n%s", code, out)
	}
	for _, args := range [][]string{{"-shards", "1"}, nil} {
		if code, out := runMain(t, append([]string{"create", "-stream", stream}, args...)...); code != exitOK {
			t.Errorf("%v on the 1-shard stream: exit %d:\n%s", args, code, out)
		}
	}
}
