package scenarios

import (
	"flag"
	"os"
	"testing"
)

// TestMain gives rapid's shrinking two minutes instead of 30 s unless
// -rapid.shrinktime is given: TestPlantedBug asserts how far a failure
// shrinks, and on a loaded 2-core machine 30 s can cut shrinking short.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.shrinktime" })
	if !set {
		if err := flag.Set("rapid.shrinktime", "2m"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
