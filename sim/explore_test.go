package sim

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
)

var flagExplore = flag.Int("sim.explore", 0, "TestExplore: seeds to run, printing one line per violation")

var flagList = flag.String("sim.list", "", "TestExplore: comma-separated seeds")

func TestExplore(t *testing.T) {
	var seeds []uint64
	for seed := *flagFirst; seed < *flagFirst+uint64(*flagExplore); seed++ {
		seeds = append(seeds, seed)
	}
	for _, f := range strings.Split(*flagList, ",") {
		if n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64); err == nil {
			seeds = append(seeds, n)
		}
	}
	if len(seeds) == 0 {
		t.Skip("set -sim.explore=N or -sim.list")
	}
	for _, seed := range seeds {
		res, err := Run(Options{Seed: seed})
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		for _, v := range res.Violations {
			d := v.Detail
			if len(d) > 160 {
				d = d[:160]
			}
			t.Logf("seed %d %s %s %s: %s", seed, res.Tier(), v.Invariant, v.Key, strings.ReplaceAll(d, "\n", " "))
		}
	}
}

var flagShow = flag.Uint64("sim.show", 0, "TestShow: print the summary of this seed")

func TestShow(t *testing.T) {
	if *flagShow == 0 {
		t.Skip("set -sim.show=SEED")
	}
	o := Options{Seed: *flagShow, Mutation: *flagMut}
	if *flagJSONL != "" {
		f, err := os.Create(*flagJSONL)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		o.Trace = f
	}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Summary())
}

var flagJSONL = flag.String("sim.jsonl", "", "TestShow: write the trace here")

var flagMut = flag.String("sim.mutation", "", "mutation for TestShow")
