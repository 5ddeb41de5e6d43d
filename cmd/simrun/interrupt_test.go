package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/shardlease/shardlease/reports"
)

// tripWriter is a stdout that closes trip once it has seen want.
type tripWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	trip func()
	done bool
}

func (w *tripWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		w.trip()
	}
	return n, err
}

func (w *tripWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func readSummary(t *testing.T, dir string) reports.Sweep {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, reports.SummaryFile))
	if err != nil {
		t.Fatalf("no partial summary: %v", err)
	}
	var sw reports.Sweep
	if err := json.Unmarshal(b, &sw); err != nil {
		t.Fatal(err)
	}
	return sw
}

var finishedRe = regexp.MustCompile(`(\d+) of (\d+) seeds finished \((\d+) abandoned, (\d+) not started\)`)

// TestInterruptedSweepWritesThePartialSummary: an interrupt after the
// second seed finishes stops the sweep: the seeds in flight finish, no
// other starts, the partial summary is printed and written (summary.json,
// report.html) for the finished seeds, and the exit status is 130.
func TestInterruptedSweepWritesThePartialSummary(t *testing.T) {
	out := t.TempDir()
	stop := make(chan struct{})
	w := &tripWriter{want: "seed 2: ok", trip: func() { close(stop) }}
	var errb bytes.Buffer
	code := runWith(with(quick, "-seeds", "1-40", "-parallel", "1", "-v", "-out", out), w, &errb, interrupts{stop: stop})
	stdout := w.String()
	if code != exitInterrupted {
		t.Fatalf("exit %d, want 130\n%s\n%s", code, stdout, errb.String())
	}
	m := finishedRe.FindStringSubmatch(stdout)
	if m == nil || !strings.Contains(stdout, "INTERRUPTED: ") || m[2] != "40" || m[3] != "0" {
		t.Fatalf("no INTERRUPTED line with the counts:\n%s", stdout)
	}
	if !strings.Contains(errb.String(), "interrupted: finishing the seeds in flight") {
		t.Errorf("stderr does not say what happens: %s", errb.String())
	}
	sw := readSummary(t, out)
	if sw.Interrupted == "" || len(sw.Seeds) < 2 || len(sw.Seeds) > 3 || m[1] != itoa(len(sw.Seeds)) || sw.Totals.Seeds != len(sw.Seeds) {
		t.Fatalf("summary: interrupted %q, %d seeds (printed %s): want the 2 or 3 finished seeds", sw.Interrupted, len(sw.Seeds), m[1])
	}
	for i, s := range sw.Seeds {
		if s.Seed != uint64(i+1) || s.Error != "" {
			t.Errorf("seed %d in the summary: %+v, want seed %d run", i, s.Seed, i+1)
		}
	}
	html, err := os.ReadFile(filepath.Join(out, reports.HTMLFile))
	if err != nil || !bytes.Contains(html, []byte("INTERRUPTED: interrupted: ")) {
		t.Errorf("report.html does not say the sweep was interrupted (err %v)", err)
	}
	if !strings.Contains(stdout, "(partial, without a timeline;") {
		t.Errorf("no report line for the partial report:\n%s", stdout)
	}
}

// TestSecondInterruptAbandonsTheSeedsInFlight: with both interrupts
// given, the sweep does not wait for the seeds in flight.
func TestSecondInterruptAbandonsTheSeedsInFlight(t *testing.T) {
	stop, abandon := make(chan struct{}), make(chan struct{})
	w := &tripWriter{want: "seed 1: ok", trip: func() { close(stop); close(abandon) }}
	var errb bytes.Buffer
	code := runWith(with(quick, "-seeds", "1-40", "-parallel", "2", "-v", "-report=false"), w, &errb, interrupts{stop: stop, abandon: abandon})
	if code != exitInterrupted {
		t.Fatalf("exit %d, want 130", code)
	}
	m := finishedRe.FindStringSubmatch(w.String())
	if m == nil || m[1] == "40" {
		t.Fatalf("no partial INTERRUPTED line:\n%s", w.String())
	}
	if !strings.Contains(errb.String(), "abandoning the seeds in flight") {
		t.Errorf("stderr: %s", errb.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSIGINTToTheBinary: a real SIGINT to a built simrun, whose stderr is
// a terminal: the progress bar is erased (the last thing written to the
// terminal clears the line), the partial summary is printed and the exit
// status is 130. It asserts output, not timing.
func TestSIGINTToTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ptmx, pts := openPTY(t)
	bin := filepath.Join(t.TempDir(), "simrun")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	out := t.TempDir()
	cmd := exec.Command(bin, with(quick, "-seeds", "1-200", "-parallel", "1", "-v", "-out", out)...)
	cmd.Env = append(os.Environ(), "TERM=xterm")
	cmd.Stderr = pts
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var term bytes.Buffer
	termDone := make(chan struct{})
	go func() { _, _ = io.Copy(&term, ptmx); close(termDone) }()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close() // the child holds it now
	sc := bufio.NewScanner(stdout)
	var lines []string
	signalled := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if !signalled && strings.HasPrefix(sc.Text(), "seed 2: ") {
			signalled = true
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130\n%s", err, strings.Join(lines, "\n"))
	}
	<-termDone // EOF (EIO) once the child has closed the terminal
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "INTERRUPTED: ") || finishedRe.FindStringSubmatch(all) == nil {
		t.Fatalf("no partial summary on stdout:\n%s", all)
	}
	if sw := readSummary(t, out); sw.Interrupted == "" || len(sw.Seeds) < 2 {
		t.Errorf("summary.json: interrupted %q with %d seeds", sw.Interrupted, len(sw.Seeds))
	}
	tty := term.String()
	if !strings.Contains(tty, "interrupted: finishing the seeds in flight") {
		t.Errorf("the terminal did not get the interrupt message: %q", tty)
	}
	// the bar is drawn as "\r\x1b[K[###...] n/N seeds ..."; after the last
	// draw the line must have been cleared again
	draw := strings.LastIndex(tty, "\r\x1b[K[")
	if draw < 0 {
		t.Fatalf("no progress bar was drawn on the terminal: %q", tty)
	}
	rest := tty[draw+1:]
	cleared := false
	for i := strings.Index(rest, "\r\x1b[K"); i >= 0; i = strings.Index(rest, "\r\x1b[K") {
		if !strings.HasPrefix(rest[i+4:], "[") {
			cleared = true
			break
		}
		rest = rest[i+4:]
	}
	if !cleared {
		t.Errorf("the progress bar is left on the terminal: it ends with %q", tty[max(0, len(tty)-120):])
	}
}
