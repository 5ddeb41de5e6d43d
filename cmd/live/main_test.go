package main

import (
	"bytes"
	"context"
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
	for _, rule := range []string{"LeaseDuration (2s) must be at least 3 x RenewInterval (1s)",
		`InitialPosition "EARLIEST" is not TRIM_HORIZON, LATEST or AT_TIMESTAMP`} {
		if !strings.Contains(out, rule) {
			t.Errorf("output lacks %q:\n%s", rule, out)
		}
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
		{[]string{"-consumer", "fan-out"}, `ConsumerName "" (required with Consumer FanOut)`},
		{[]string{"-consumer-name", "app"}, "Consumer is polling"},
	} {
		args := append([]string{"run", "-stream", "orders", "-table", "orders-leases", "-metrics-addr", ""}, tc.args...)
		code, out := runMain(t, args...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, exitUsage, tc.want, out)
		}
	}
	t.Setenv("LIVE_CONSUMER", "fan-out")
	if code, out := runMain(t, "run", "-stream", "orders", "-table", "orders-leases", "-metrics-addr", ""); code != exitUsage || !strings.Contains(out, "ConsumerName") {
		t.Errorf("LIVE_CONSUMER=fan-out without a name: exit %d:\n%s", code, out)
	}
}

func TestCreateConsumerNeedsStream(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	if code, out := runMain(t, "create", "-table", "t", "-consumer-name", "app"); code != exitUsage || !strings.Contains(out, "-consumer-name needs -stream") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
