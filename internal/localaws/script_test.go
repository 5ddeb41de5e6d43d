package localaws

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// These tests run scripts/localaws.sh itself, with a state directory of
// their own, and look for the servers it started by their environment
// (every process the script starts inherits LOCALAWS_STATE_DIR=DIR).

// repoRoot returns the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// needServers skips (fails under SHARDLEASE_REQUIRE_LOCALAWS=1) when node or
// the installed servers are missing; the script would run npm ci, which a
// unit test must not do behind the user's back.
func needServers(t *testing.T, root string) {
	t.Helper()
	_, errNode := exec.LookPath("node")
	_, errDyn := os.Stat(filepath.Join(root, "node_modules", "dynalite"))
	_, errKin := os.Stat(filepath.Join(root, "node_modules", "kinesalite"))
	if errNode != nil || errDyn != nil || errKin != nil {
		msg := "node or node_modules/{dynalite,kinesalite} missing (run `npm ci` or `scripts/localaws.sh start` once)"
		if Required() {
			t.Fatalf("%s=1: %s", EnvRequire, msg)
		}
		t.Skip(msg)
	}
}

// script runs scripts/localaws.sh with args and the given state directory.
func script(t *testing.T, root, state string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "scripts", "localaws.sh"), args...)
	cmd.Env = append(append(os.Environ(), EnvStateDir+"="+state), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// serversOf returns the PIDs of live node servers (dynalite-server.js or
// kinesalite-server.js) whose environment has LOCALAWS_STATE_DIR=state.
func serversOf(t *testing.T, state string) []int {
	t.Helper()
	want := EnvStateDir + "=" + state
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if c := cmdline(pid); !strings.Contains(c, "dynalite-server.js") && !strings.Contains(c, "kinesalite-server.js") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(d, "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie: dead, not yet reaped
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv == want {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// killLeft kills what a failing test leaves running, so that it does not
// outlive the test.
func killLeft(t *testing.T, state string) {
	for _, pid := range serversOf(t, state) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

func pidFile(t *testing.T, state, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, name+".pid"))
	if err != nil {
		t.Fatalf("%s.pid: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s.pid: %v", name, err)
	}
	return pid
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// TestScriptStartTwiceStopLeavesNothing: a second start reuses the running
// servers, the PID files name the node processes themselves (not the shell
// that forked them), and stop leaves no server of the state directory,
// including a stray that no PID file names.
func TestScriptStartTwiceStopLeavesNothing(t *testing.T) {
	root := repoRoot(t)
	needServers(t, root)
	state := t.TempDir()
	t.Cleanup(func() { _, _ = script(t, root, state, nil, "stop"); killLeft(t, state) })

	if out, err := script(t, root, state, nil, "start"); err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	if n := len(serversOf(t, state)); n != 2 {
		t.Fatalf("after start: %d servers of the state directory, want 2", n)
	}
	for _, name := range []string{"dynalite", "kinesalite"} {
		pid := pidFile(t, state, name)
		if c := cmdline(pid); !strings.Contains(c, "node") || !strings.Contains(c, name+"-server.js") {
			t.Errorf("%s.pid = %d, whose command line is %q: not the node server", name, pid, c)
		}
	}
	out, err := script(t, root, state, nil, "start")
	if err != nil {
		t.Fatalf("second start: %v\n%s", err, out)
	}
	if !strings.Contains(out, "already running") {
		t.Errorf("second start did not reuse the servers:\n%s", out)
	}
	if n := len(serversOf(t, state)); n != 2 {
		t.Fatalf("after a second start: %d servers, want 2", n)
	}

	// A stray: a server of this state directory that no PID file names
	// (what a retry used to leave behind).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_ = ln.Close()
	stray := exec.Command("node", filepath.Join(root, "scripts", "dynalite-server.js"), port, "--localaws-state="+state)
	stray.Env = append(os.Environ(), EnvStateDir+"="+state)
	stdout, err := stray.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	// it prints "dynalite listening at ..." once up; EOF if it died
	if line, err := bufio.NewReader(stdout).ReadString('\n'); !strings.Contains(line, "listening") {
		t.Fatalf("the stray server did not come up: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout); _ = stray.Wait() }() // reap it whoever kills it
	if out, err := script(t, root, state, nil, "stop"); err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	if left := serversOf(t, state); len(left) != 0 {
		t.Fatalf("after stop, servers of the state directory remain: %v", left)
	}
}

// TestScriptFailedStartLeavesNothing: a start whose health checks all fail
// (a health timeout of zero makes every try fail, as an overloaded machine
// did) retries, gives up, and leaves no server behind.
func TestScriptFailedStartLeavesNothing(t *testing.T) {
	root := repoRoot(t)
	needServers(t, root)
	state := t.TempDir()
	t.Cleanup(func() { _, _ = script(t, root, state, nil, "stop"); killLeft(t, state) })

	out, err := script(t, root, state, []string{"LOCALAWS_HEALTH_TIMEOUT_S=0"}, "start")
	if err == nil {
		t.Fatalf("start with a zero health timeout succeeded:\n%s", out)
	}
	if !strings.Contains(out, "could not start dynalite") {
		t.Errorf("start output does not say it gave up:\n%s", out)
	}
	if left := serversOf(t, state); len(left) != 0 {
		for _, pid := range left {
			t.Logf("stray %d: %s", pid, cmdline(pid))
		}
		t.Fatalf("a failed start left %d servers running", len(left))
	}
}
