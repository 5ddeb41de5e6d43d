package driversim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/planted"
)

// Running the driver from a command.
//
// Run needs a testing/synctest bubble, and synctest.Test needs the
// *testing.T of a test binary (Go 1.26 has no synctest.Run outside the
// standard library). A command that runs driver worlds (cmd/simrun
// -driver) therefore builds this package's test binary (Build: go test
// -c), starts it as a worker process (StartWorker runs its TestServe,
// which calls Serve) and sends it requests: one JSON line per run on the
// worker's standard input, one JSON Report back on its standard output.
// A worker runs one seed at a time, each in a bubble of its own; a
// command runs as many workers as it wants seeds at a time.

// Request is one run asked of a worker.
type Request struct {
	Options Options `json:"options"`
	// Reruns: if the run breaks an invariant, run the seed this many
	// times more and count how often it breaks one again (Report.Reruns).
	Reruns int `json:"reruns,omitempty"`
	// TracePath, if set, is where the worker writes the run's history as
	// JSON Lines (the format of sim/trace, which simrun -trace writes).
	TracePath string `json:"trace_path,omitempty"`
}

// ProtocolVersion names the request and report formats: a worker says it
// first, and StartWorker refuses a worker of another version.
const ProtocolVersion = "driversim-serve/1"

// reportPrefix starts every line of the protocol on a worker's standard
// output: the test binary may print lines of its own there.
const reportPrefix = "driversim: "

// RunFunc runs one world: Run inside a bubble of its own.
type RunFunc func(Options) (*Result, error)

// Serve answers requests read from in, one JSON Request a line, with one
// Report a line on out, until in ends; it first writes the protocol
// version. run runs a world (TestServe passes Run inside synctest.Test).
func Serve(in io.Reader, out io.Writer, run RunFunc) error {
	bw := bufio.NewWriter(out)
	if _, err := fmt.Fprintf(bw, "%s%s\n", reportPrefix, ProtocolVersion); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	enc := json.NewEncoder(bw)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var req Request
		var rep *Report
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			rep = &Report{Error: fmt.Sprintf("driversim: bad request %q: %v", sc.Text(), err)}
		} else {
			rep = Answer(req, run)
		}
		if _, err := bw.WriteString(reportPrefix); err != nil {
			return err
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Answer runs one request with run and returns its Report.
func Answer(req Request, run RunFunc) *Report {
	o := req.Options
	o.Hash = true
	o.KeepRecords = req.TracePath != ""
	start := time.Now()
	res, err := run(o)
	if err != nil {
		return &Report{Seed: o.Seed, Options: req.Options, Error: err.Error()}
	}
	rep := NewReport(req.Options, res, time.Since(start))
	if req.TracePath != "" {
		if err := writeTrace(req.TracePath, res); err != nil {
			rep.RunErrors = append(rep.RunErrors, "the trace could not be written: "+err.Error())
		}
	}
	if len(res.Violations) > 0 && req.Reruns > 0 {
		o.KeepRecords = false
		rr := &Reruns{Hashes: 1}
		hashes := map[uint64]bool{res.TraceHash: true}
		for i := 0; i < req.Reruns; i++ {
			again, err := run(o)
			if err != nil {
				break
			}
			rr.Runs++
			if len(again.Violations) > 0 {
				rr.Failed++
			}
			if !hashes[again.TraceHash] {
				hashes[again.TraceHash] = true
				rr.Hashes++
			}
		}
		rep.Reruns = rr
	}
	return rep
}

// Worker is a worker process: the test binary of this package running
// TestServe. Its methods are not safe for concurrent use.
type Worker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tail
	dead   error
}

// StartWorker starts the test binary bin (Build) as a worker.
func StartWorker(bin string) (*Worker, error) {
	cmd := exec.Command(bin, "-test.run=^TestServe$", "-test.timeout=0", "-driversim.serve")
	cmd.Env = os.Environ()
	if os.Getenv("GOGC") == "" {
		// as simrun: a run's garbage is short-lived
		cmd.Env = append(cmd.Env, "GOGC=400")
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &Worker{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16), stderr: &tail{max: 8 << 10}}
	cmd.Stderr = w.stderr
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("driversim: starting the worker %s: %w", bin, err)
	}
	line, err := w.line()
	if err != nil {
		w.Kill()
		return nil, err
	}
	if line != ProtocolVersion {
		w.Kill()
		return nil, fmt.Errorf("driversim: the worker %s speaks %q, not %q: rebuild it (Build)", bin, line, ProtocolVersion)
	}
	return w, nil
}

// line returns the next protocol line of the worker, without its prefix.
func (w *Worker) line() (string, error) {
	for {
		s, err := w.out.ReadString('\n')
		if rest, ok := strings.CutPrefix(s, reportPrefix); ok && err == nil {
			return strings.TrimSuffix(rest, "\n"), nil
		}
		if err != nil {
			w.dead = w.exitError(err)
			return "", w.dead
		}
		// a line of the test binary's own (a log line): not ours
	}
}

// exitError describes why the worker stopped answering.
func (w *Worker) exitError(err error) error {
	werr := w.cmd.Wait()
	msg := strings.TrimSpace(w.stderr.String())
	if msg == "" {
		msg = "(nothing on its standard error)"
	}
	return fmt.Errorf("driversim: the worker process ended (%v; %v); the end of its standard error:\n%s", err, werr, msg)
}

// Run sends req to the worker and waits for its report. After an error
// the worker is dead: start another.
func (w *Worker) Run(req Request) (*Report, error) {
	if w.dead != nil {
		return nil, w.dead
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		w.dead = w.exitError(err)
		return nil, w.dead
	}
	line, err := w.line()
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		return nil, fmt.Errorf("driversim: a report the worker sent does not parse: %w", err)
	}
	return &rep, nil
}

// Close ends the worker (its input ends, it finishes the request in
// hand) and waits for it.
func (w *Worker) Close() error {
	w.in.Close()
	if w.dead != nil {
		return nil
	}
	err := w.cmd.Wait()
	w.dead = errors.New("driversim: the worker was closed")
	return err
}

// Kill ends the worker at once.
func (w *Worker) Kill() {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
	w.in.Close()
	if w.dead == nil {
		_ = w.cmd.Wait()
		w.dead = errors.New("driversim: the worker was killed")
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// BinaryName is the file name Build gives the test binary: driversim.test,
// or driversim-mutations.test with the planted bugs.
func BinaryName(mutations bool) string {
	if mutations {
		return "driversim-mutations.test"
	}
	return "driversim.test"
}

// PackageDir is this package's directory relative to the module root.
const PackageDir = "sim/driversim"

// Build builds the test binary of this package from the module checked
// out at root (go test -c, with the build tag of the planted bugs if
// mutations) into dir, and returns its path. It needs the go command and
// the source tree: a command that runs driver worlds runs from a checkout.
func Build(ctx context.Context, root, dir string, mutations bool) (string, error) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("driversim: building the driver simulation's test binary needs the go command: %w", err)
	}
	if _, err := os.Stat(filepath.Join(root, PackageDir)); err != nil {
		return "", fmt.Errorf("driversim: %s is not a checkout of the module (no %s): run from one", root, PackageDir)
	}
	name := BinaryName(mutations)
	args := []string{"test", "-c"}
	if mutations {
		args = append(args, "-tags", planted.Tag)
	}
	bin := filepath.Join(dir, name)
	args = append(args, "-o", bin, "./"+PackageDir)
	cmd := exec.CommandContext(ctx, gocmd, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("driversim: go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}
