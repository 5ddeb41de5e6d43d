//go:build !shardlease_mutations

package engine

import (
	"errors"
	"testing"

	"github.com/shardlease/shardlease/internal/planted"
)

// TestNoPlantedBugsWithoutTheTag: a production build (no
// shardlease_mutations tag) cannot plant a bug, through the hook or by
// setting the configuration's field.
func TestNoPlantedBugsWithoutTheTag(t *testing.T) {
	if planted.Enabled() || len(planted.Bugs()) != 0 {
		t.Fatalf("planted bugs registered in a build without the tag: %v", planted.Names())
	}
	cfg := Config{Owner: "a", Streams: []StreamConfig{{Name: "s"}}}
	if err := planted.Set(&cfg, "no-safety-margin"); !errors.Is(err, planted.ErrDisabled) {
		t.Fatalf("planted.Set = %v, want ErrDisabled", err)
	}
	cfg.planted = "no-safety-margin" // as if set by other means
	w, err := NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if w.bug("no-safety-margin") {
		t.Fatal("a planted bug is active in a build without the tag")
	}
	cfg.planted = "driver-handoff-unchecked"
	c, err := NewConsumer(ConsumerOptions{Config: cfg, Stream: &lockedStream{s: newTStream(1)}, Processor: newRecorder().factory})
	if err != nil {
		t.Fatal(err)
	}
	if c.bug("driver-handoff-unchecked") {
		t.Fatal("a planted driver bug is active in a build without the tag")
	}
}
