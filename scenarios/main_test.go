package scenarios

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// TestMain gives rapid's shrinking four minutes instead of 30 s unless
// -rapid.shrinktime is given: TestPlantedBug asserts how far a failure
// shrinks, and on a loaded 2-core machine (the whole suite at once) 30 s,
// or even two minutes, can cut shrinking short; a fast shrink ends
// earlier whatever the deadline.
//
// It also draws the property runs from a fixed seed (propertySeed) unless
// -rapid.seed is given: go test ./scenarios/... then runs the same cases
// every time, so that a rare world's finding fails a change that makes
// it, not a later run by chance. make sweep passes -rapid.seed=0, rapid's
// random seed, to explore.
func TestMain(m *testing.M) {
	flag.Parse()
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	defaults := map[string]string{"rapid.shrinktime": "4m", "rapid.seed": strconv.FormatUint(propertySeed, 10)}
	for name, v := range defaults {
		if !given[name] {
			if err := flag.Set(name, v); err != nil {
				panic(err)
			}
		}
	}
	os.Exit(m.Run())
}

// propertySeed is the rapid seed of the property runs of go test.
const propertySeed = 20261201
