package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/doccmd"
	"github.com/shardlease/shardlease/internal/planted"
)

// TestDocCommands runs every simrun command of README.md and docs/*.md as
// it is written there (go run ./cmd/simrun ARGS is run(ARGS), in a
// temporary directory so that reports land there; the -tags
// shardlease_mutations form runs in-process when this test binary has the
// tag, else in a binary built with it) and checks its exit status: 1 for a
// planted bug (the checkers must catch it), 0 otherwise; a "> FILE"
// redirection gets stdout, which for -json must be one object per seed.
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented simrun command")
	}
	_, cmds, err := doccmd.Load()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := doccmd.Find(cmds, "go run ./cmd/simrun")
	if err != nil {
		t.Fatal(err)
	}
	tagged, err := doccmd.Find(cmds, "go run -tags shardlease_mutations ./cmd/simrun")
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// the tagged binary outlives the subtest that builds it: the later
	// tagged commands run it too
	var taggedBin string
	tagDir := t.TempDir()
	for _, c := range slices.Concat(plain, tagged) {
		words, redirect, err := doccmd.Fields(c.Text)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		i := slices.Index(words, "./cmd/simrun")
		args := words[i+1:]
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Chdir(t.TempDir())
			var stdout, stderr bytes.Buffer
			code := 0
			if strings.Contains(c.Text, "-tags "+planted.Tag) && !planted.Enabled() {
				if taggedBin == "" {
					taggedBin = buildTagged(t, wd, tagDir)
				}
				cmd := exec.Command(taggedBin, args...)
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					ee, ok := err.(*exec.ExitError)
					if !ok {
						t.Fatal(err)
					}
					code = ee.ExitCode()
				}
			} else {
				code = run(args, &stdout, &stderr)
			}
			want := exitPass
			if slices.Contains(args, "-mutation") {
				want = exitViolation
			}
			if code != want {
				t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c, code, want, tail(stdout.String()), tail(stderr.String()))
			}
			if redirect != "" {
				if err := os.WriteFile(redirect, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if slices.Contains(args, "-json") {
				checkJSONLines(t, c, stdout.Bytes(), args)
			}
			if slices.Contains(args, "-list") && !strings.Contains(stdout.String(), "swarm") {
				t.Fatalf("%s: the listing does not name the swarm:\n%s", c, stdout.String())
			}
		})
	}
}

func buildTagged(t *testing.T, wd, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "simrun")
	cmd := exec.Command("go", "build", "-tags", planted.Tag, "-o", bin, "github.com/shardlease/shardlease/cmd/simrun")
	cmd.Dir = wd
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %s: %v\n%s", planted.Tag, err, b)
	}
	return bin
}

// checkJSONLines checks -json's output: one object per seed of -seeds A-B.
func checkJSONLines(t *testing.T, c doccmd.Command, out []byte, args []string) {
	t.Helper()
	first, last := uint64(1), uint64(1)
	if i := slices.Index(args, "-seeds"); i >= 0 {
		var err error
		if first, last, err = parseRange(args[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %d is not JSON: %v", c, n+1, err)
		}
		if _, ok := m["seed"]; !ok {
			t.Fatalf("%s: line %d has no seed: %s", c, n+1, sc.Bytes())
		}
		n++
	}
	if want := int(last - first + 1); n != want {
		t.Fatalf("%s: %d JSON lines, want %d", c, n, want)
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}
