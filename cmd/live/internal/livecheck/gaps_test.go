package livecheck

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/check"
)

func TestLongestGaps(t *testing.T) {
	s := time.Second
	ts := []check.Tenure{
		{Key: "k", Proc: 1, Owner: "w1", Start: 0, End: s, Renewed: 2 * s},
		{Key: "k", Proc: 2, Owner: "w2", Start: 6 * s, End: 7 * s, Released: 8 * s, Graceful: true, Planned: true, HandedTo: "w3"},
		{Key: "k", Proc: 3, Owner: "w3", Start: 8*s + s/2, End: 9 * s},
		{Key: "j", Proc: 1, Owner: "w1", Start: 0, End: s},
		{Key: "j", Proc: 3, Owner: "w3", Start: 2 * s, End: 3 * s},
	}
	got := longestGaps(ts, nil, 1)
	want := []HandoffGap{
		{Key: "k", From: "#1", To: "#2", At: 6 * s, Gap: 4 * s},                    // from the renewal at 2s
		{Key: "k", From: "#2", To: "#3", At: 8*s + s/2, Gap: s / 2, Planned: true}, // from the release at 8s
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("gap %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
