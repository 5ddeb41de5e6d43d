package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/localaws"
)

// strictJSON parses one JSON value and fails on a key repeated within an
// object (which encoding/json accepts, keeping the last).
func strictJSON(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	type frame struct {
		object    bool
		keys      map[string]bool
		expectKey bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k, ok := tok.(string)
			if !ok {
				return fmt.Errorf("object key %v is not a string", tok)
			}
			if stack[n-1].keys[k] {
				return fmt.Errorf("duplicate key %q", k)
			}
			stack[n-1].keys[k] = true
			stack[n-1].expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
	if len(stack) != 0 {
		return errors.New("unterminated value")
	}
	return nil
}

func TestStrictJSONRejectsDuplicateKeys(t *testing.T) {
	for line, ok := range map[string]bool{
		`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`: true,
		`{"owner":"a","msg":"x","owner":"a"}`:       false,
		`{"g":{"k":1,"k":2}}`:                       false,
		`{"l":[{"k":1,"k":2}]}`:                     false,
	} {
		if err := strictJSON(line); (err == nil) != ok {
			t.Errorf("strictJSON(%s) = %v, want ok=%v", line, err, ok)
		}
	}
}

// TestJSONLogsOneOwnerReadableDurations runs `live run -log-format json`
// against the local servers until its /readyz answers 200, stops it, and
// reads every line with a parser that rejects duplicate keys: owner
// appears once on every line (the engine's included), and durations are
// Go duration strings, not nanoseconds.
func TestJSONLogsOneOwnerReadableDurations(t *testing.T) {
	table, stream := liveServers(t, "logs")
	var probed bool
	lines, code := liveRun(t, []string{"-table", table, "-stream", stream, "-owner", "logs-owner"}, func(up map[string]any) {
		probed = probeOnce(t, up["livez"].(string), up["readyz"].(string))
	})
	if code != exitOK {
		t.Errorf("live run exited %d", code)
	}
	if !probed {
		t.Error("the worker's /readyz never answered 200 ok")
	}
	engineLines, durations := 0, 0
	for _, line := range lines {
		if err := strictJSON(line); err != nil {
			t.Errorf("%v in %s", err, line)
			continue
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(line), &m)
		if m["owner"] != "logs-owner" {
			t.Errorf("line without owner logs-owner: %s", line)
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, "shutting down") || strings.HasPrefix(msg, "worker stopped; ") {
			engineLines++
		}
		if v, ok := m["released"]; ok {
			if _, list := v.([]any); !list {
				t.Errorf("released = %v, want a list ([] when empty): %s", v, line)
			}
		}
		if v, ok := m["lease_duration"]; ok {
			durations++
			if v != "3s" {
				t.Errorf("lease_duration = %v (%T), want the duration string 3s: %s", v, v, line)
			}
		}
	}
	if engineLines < 2 || durations == 0 {
		t.Errorf("%d engine shutdown lines and %d lines with lease_duration, want at least 2 and 1:\n%s", engineLines, durations, strings.Join(lines, "\n"))
	}
}

// probeOnce checks /livez once the worker is up and waits (a bounded number of
// polls) for /readyz to answer 200 "ok: ...".
func probeOnce(t *testing.T, livez, readyz string) bool {
	if livez == "" || readyz == "" {
		t.Errorf("the metrics line names no probes (livez %q, readyz %q)", livez, readyz)
		return false
	}
	readyz, livez = readyz+"?verbose", livez+"?verbose"
	for i := 0; i < 200; i++ {
		resp, err := http.Get(readyz)
		if err != nil {
			t.Errorf("GET %s: %v", readyz, err)
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if !strings.HasPrefix(string(b), "ok: ") {
				t.Errorf("/readyz: 200 %q", b)
			}
			resp, err := http.Get(livez)
			if err != nil {
				t.Errorf("GET %s: %v", livez, err)
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(b), "ok: the engine loop last stepped") {
				t.Errorf("/livez of a ready worker: %d %q", resp.StatusCode, b)
			}
			return true
		}
		if !strings.HasPrefix(string(b), "not ready: ") {
			t.Errorf("/readyz: %d %q", resp.StatusCode, b)
		}
		<-time.After(50 * time.Millisecond)
	}
	return false
}

// liveServers points the environment at the local servers (skipping the
// test without them) and creates a lease table and a one-shard stream.
func liveServers(t *testing.T, prefix string) (table, stream string) {
	t.Helper()
	ddb, kin := localaws.DynamoDB(t), localaws.Kinesis(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb.Endpoint)
	t.Setenv("AWS_ENDPOINT_URL_KINESIS", kin.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", "us-east-1")
	table, stream = localaws.UniqueName(t, prefix+"-leases"), localaws.UniqueName(t, prefix)
	if code, out := runMain(t, "create", "-table", table, "-stream", stream, "-shards", "1"); code != exitOK {
		t.Fatalf("create: %d %s", code, out)
	}
	return table, stream
}

// liveRun runs `live run -log-format json` with args (and a lease of 3s,
// metrics on a free port) until its metrics endpoint is up, calls up with
// that log line (as JSON) on another goroutine, then shuts the worker down
// gracefully once up returns. It returns the log lines and the exit code.
func liveRun(t *testing.T, args []string, up func(line map[string]any)) ([]string, int) {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		var out bytes.Buffer
		done <- realMain(ctx, append([]string{"run", "-log-format", "json", "-metrics-addr", "127.0.0.1:0",
			"-lease-duration", "3s", "-renew-interval", "1s"}, args...), &out, pw)
		_ = pw.Close()
	}()
	var lines []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "metrics endpoint up") {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("%v: %s", err, sc.Text())
			}
			go func() {
				// then a graceful shutdown: the engine logs as it drains
				defer cancel()
				up(m)
			}()
		}
	}
	select {
	case code := <-done:
		return lines, code
	case <-time.After(time.Minute):
		t.Fatal("live run did not stop")
		return nil, 0
	}
}
