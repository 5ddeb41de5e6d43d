package driversim

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

var flagServe = flag.Bool("driversim.serve", false, "TestServe: answer requests on stdin as a worker process (see Serve; cmd/simrun -driver starts it)")

// runInBubble runs o in a synctest bubble of its own under t; unlike
// runSeed it returns Run's error instead of failing t.
func runInBubble(t *testing.T, o Options) (*Result, error) {
	var res *Result
	var err error
	synctest.Test(t, func(*testing.T) { res, err = Run(o) })
	return res, err
}

// TestServe is the worker process of a command that runs driver worlds
// (cmd/simrun -driver): with -driversim.serve it answers requests on
// its standard input until that ends (Serve). It is skipped otherwise.
func TestServe(t *testing.T) {
	if !*flagServe {
		t.Skip("the worker process of simrun -driver: run with -driversim.serve")
	}
	if err := Serve(os.Stdin, os.Stdout, func(o Options) (*Result, error) { return runInBubble(t, o) }); err != nil {
		t.Fatal(err)
	}
}

// TestServeAnswers: Serve says its version, answers each request with its
// report in order, reports a bad request or a rejected world as an error
// of that request and goes on, and re-runs a failing seed as asked.
func TestServeAnswers(t *testing.T) {
	runs := 0
	run := func(o Options) (*Result, error) {
		runs++
		if o.Faults == "bad" {
			return nil, errors.New("rejected")
		}
		res := &Result{World: World{Seed: o.Seed, Workers: 2}, TraceHash: uint64(runs % 2)}
		if o.Seed == 7 && runs%2 == 1 { // fails in every other run, the first (the third run) included
			res.Violations = []check.Violation{{Invariant: check.S1, Key: "k"}}
		}
		return res, nil
	}
	in := strings.Join([]string{
		`{"options":{"Seed":1}}`,
		`not json`,
		`{"options":{"Seed":2,"Faults":"bad"}}`,
		``,
		`{"options":{"Seed":7},"reruns":4}`,
	}, "\n")
	var out bytes.Buffer
	if err := Serve(strings.NewReader(in), &out, run); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || lines[0] != reportPrefix+ProtocolVersion {
		t.Fatalf("output:\n%s", out.String())
	}
	var reps []Report
	for _, l := range lines[1:] {
		var r Report
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, reportPrefix)), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		reps = append(reps, r)
	}
	if !reps[0].OK() || reps[0].Seed != 1 || reps[0].Workers != 2 || reps[0].Reruns != nil {
		t.Errorf("seed 1: %+v", reps[0])
	}
	if !strings.Contains(reps[1].Error, "bad request") || !strings.Contains(reps[2].Error, "rejected") || reps[2].Seed != 2 {
		t.Errorf("errors: %q, %q (seed %d)", reps[1].Error, reps[2].Error, reps[2].Seed)
	}
	r := reps[3]
	if r.OK() || r.Reruns == nil || r.Reruns.Runs != 4 || r.Reruns.Failed != 2 || r.Reruns.Hashes != 2 || r.Reproduced() != "2 of 4 re-runs" {
		t.Errorf("seed 7: ok %v, reruns %+v (%q)", r.OK(), r.Reruns, r.Reproduced())
	}
}

// TestWorker runs real worlds through a worker process (this test binary
// started with -driversim.serve, as simrun starts the one it builds): the
// report of a seed is the one its run in this process gives (same world,
// same verdict), a trace is written where asked, and Close ends the
// worker.
func TestWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process")
	}
	w, err := StartWorker(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer w.Kill()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	for _, seed := range []uint64{2, 5} {
		req := Request{Options: Options{Seed: seed}}
		if seed == 5 {
			req.TracePath = path
		}
		rep, err := w.Run(req)
		if err != nil {
			t.Fatal(err)
		}
		local := runSeed(t, Options{Seed: seed, Hash: true})
		if rep.Error != "" || rep.World != local.World.String() || rep.OK() != (len(local.Violations) == 0) || rep.Records == 0 {
			t.Errorf("seed %d: worker %+v\nhere: world %s, %d violations", seed, rep, local.World, len(local.Violations))
		}
		if !strings.Contains(rep.Summary, "driver world: seed=") {
			t.Errorf("seed %d: summary %q", seed, rep.Summary)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := trace.ReadAll(f)
	if err != nil || len(recs) == 0 {
		t.Fatalf("trace: %d records, %v", len(recs), err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := w.Run(Request{Options: Options{Seed: 1}}); err == nil {
		t.Fatal("a closed worker ran a request")
	}
}

// TestStartWorkerRefusesAStranger: a binary that does not speak the
// protocol is refused, naming what it printed.
func TestStartWorkerRefusesAStranger(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script := filepath.Join(t.TempDir(), "stranger")
	if err := os.WriteFile(script, []byte("#!"+sh+"\necho 'driversim: other/9'\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := StartWorker(script); err == nil || !strings.Contains(err.Error(), "other/9") {
		t.Fatalf("err = %v", err)
	}
	dead := filepath.Join(t.TempDir(), "dead")
	if err := os.WriteFile(dead, []byte("#!"+sh+"\necho broken >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := StartWorker(dead); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("err = %v", err)
	}
}
