package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/shardlease/shardlease/internal/planted"
)

// plantedDriverCases are the planted bugs of the production driver that
// the driver property must catch, and the invariants that catch each.
var plantedDriverCases = []struct {
	bug        string // a name of internal/planted (simrun: engine:NAME)
	invariants string // any of these
}{
	// the runner hands a batch to the processor without its act-until
	// check: a hand-off pause long enough for the lease to move
	{"driver-handoff-unchecked", "S1"},
	// a checkpoint asked while the consumer stops is acknowledged though
	// it was never written: a shutdown that hits its deadline
	{"driver-ack-on-stop", "S3"},
}

// TestPlantedBugDriver runs the driver property (safety invariants, with
// a 20 s quiet phase) against consumers with a planted bug of the
// driver: rapid must find a failing case, the failure must be one of the
// bug's invariants, and the shrunk case must pass without the bug. It logs
// the shrunk case and leaves no fail file behind.
func TestPlantedBugDriver(t *testing.T) {
	planted.SkipUnlessEnabled(t)
	t.Parallel()
	for _, pc := range plantedDriverCases {
		t.Run(pc.bug, func(t *testing.T) {
			t.Parallel()
			name := "planted-driver-" + pc.bug
			dir := failDir(name)
			cleanup := func() {
				_ = os.RemoveAll(dir)
				_ = os.Remove(filepath.Dir(dir))
				_ = os.Remove(filepath.Dir(filepath.Dir(dir)))
			}
			cleanup()
			t.Cleanup(cleanup)

			var last driverFailure
			tb := &expectFailTB{t: t, name: name}
			rapid.Check(tb, driverProperty(t, driverPlanted, pc.bug, 0, &last))
			if !tb.Failed() || last.res == nil {
				t.Fatalf("the driver property did not catch the planted bug %s", pc.bug)
			}
			invs := map[string]int{}
			caught := false
			for _, v := range last.res.Violations {
				invs[v.Invariant]++
				caught = caught || strings.Contains(" "+pc.invariants+" ", " "+v.Invariant+" ")
			}
			first := last.res.Violations[0]
			t.Logf("planted bug %s caught: %v; first: %s %s: %s\nshrunk case: %s\n  %s", pc.bug, invs, first.Invariant, first.Key, first.Detail, last.d, last.d.Simrun())
			if !caught {
				t.Errorf("the shrunk case breaks %v, none of %s", invs, pc.invariants)
			}
			clean := last.d
			clean.Mutation = ""
			res, err := runDriverCase(t, clean)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Violations) > 0 {
				t.Errorf("without the planted bug the shrunk case still breaks %s: %s\n%s", res.Violations[0].Invariant, res.Violations[0].Detail, clean)
			}
		})
	}
}
