//go:build shardlease_mutations

package engine

import (
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/planted"
)

// TestPlantedBugsWithTheTag: with the shardlease_mutations tag every
// planted bug can be set through the hook and is active in the worker;
// unknown names are refused.
func TestPlantedBugsWithTheTag(t *testing.T) {
	if !planted.Enabled() || len(planted.Names()) != len(plantedBugs) {
		t.Fatalf("planted bugs not registered: %v", planted.Names())
	}
	for _, name := range planted.Names() {
		cfg := Config{Owner: "a", Streams: []StreamConfig{{Name: "s"}}}
		if err := planted.Set(&cfg, name); err != nil {
			t.Fatal(err)
		}
		w, err := NewWorker(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !w.bug(name) {
			t.Errorf("planted bug %s not active", name)
		}
		if strings.HasPrefix(name, "driver-") {
			c, err := NewConsumer(ConsumerOptions{Config: cfg, Stream: &lockedStream{s: newTStream(1)}, Processor: newRecorder().factory})
			if err != nil {
				t.Fatal(err)
			}
			if !c.bug(name) || c.bug("driver-other") {
				t.Errorf("planted driver bug %s not active in the consumer alone", name)
			}
		}
	}
	if err := planted.Set(&Config{}, "no-such-bug"); err == nil {
		t.Error("an unknown planted bug was accepted")
	}
}
