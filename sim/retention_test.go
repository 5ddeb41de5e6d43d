package sim

import (
	"strings"
	"testing"
	"time"
)

// TestPinnedRetention: Options.Retention sets the stream's retention and
// nothing else of the world, and the replay command carries it.
func TestPinnedRetention(t *testing.T) {
	base := Options{Seed: 5, Workers: 2, Shards: 3, Chaos: 40 * time.Second, Faults: "none"}
	pinned := base
	pinned.Retention = 45 * time.Second
	a, err := Run(base)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(pinned)
	if err != nil {
		t.Fatal(err)
	}
	if a.World.Retention != 24*time.Hour || b.World.Retention != 45*time.Second {
		t.Fatalf("retention %v and %v, want a day and 45s", a.World.Retention, b.World.Retention)
	}
	wa, wb := a.World, b.World
	wb.Retention = wa.Retention
	if wa.String() != wb.String() {
		t.Errorf("pinning the retention changed the rest of the world:\n%s\n%s", wa, wb)
	}
	if c := ReplayCommand(pinned); !strings.Contains(c, " -retention 45s") {
		t.Errorf("replay command %q lacks the retention", c)
	}
	if !a.OK() || !b.OK() {
		t.Errorf("runs failed: %v / %v", a.Violations, b.Violations)
	}
}
