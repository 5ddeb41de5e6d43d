package livecheck

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunLineInWords: the run line says how the worker processes ended in
// words, with singulars.
func TestRunLineInWords(t *testing.T) {
	var b bytes.Buffer
	r := &Report{Processes: 1, Workers: 1, Stops: map[string]int{"error": 1}}
	r.Print(&b)
	if line := strings.SplitN(b.String(), "\n", 2)[0]; line != "run: 0.00s, 1 process (1 worker process: 1 stopped on an error)" {
		t.Errorf("run line %q", line)
	}
	b.Reset()
	r = &Report{Processes: 5, Workers: 3, Stops: map[string]int{"exit": 2, "vanished": 1}}
	r.Print(&b)
	if line := strings.SplitN(b.String(), "\n", 2)[0]; line != "run: 0.00s, 5 processes (3 worker processes: 1 ended without a word (killed?), 2 stopped cleanly)" {
		t.Errorf("run line %q", line)
	}
}
