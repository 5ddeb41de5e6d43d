package sim

import (
	"path/filepath"
	"testing"
)

// TestExploreFindingsPass replays the worlds the guided search found to
// break a latency bound without a planted bug (docs/explore.md) and that
// were resolved since: each stays inside the assumptions and breaks no
// invariant. t1-seed11: a restart resumes a row still marked by its
// predecessor's steal and waits the lease duration (T1 allows for it);
// t2-seed23: the receiver of a handoff began a graceful shutdown before
// it could take the lease (T2 holds the move to its restart);
// t1-seed7-late-renewal: a holder's renewal applied and its reply came
// after its own-view expiry, and the holder gave the lease up (the
// engine now keeps it while a renewal is in flight: T1 2.23 D before).
func TestExploreFindingsPass(t *testing.T) {
	for _, name := range []string{"t1-seed11.json", "t2-seed23.json", "t1-seed7-late-renewal.json"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "explore", name)
			w, err := ReadWorld(path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(w.RunOptions())
			if err != nil {
				t.Fatal(err)
			}
			if !res.Inside {
				t.Errorf("%s ran outside the assumptions: %v", name, res.Outside)
			}
			for _, v := range res.Violations {
				t.Errorf("%s: %v\nreplay: %s", name, v, WorldReplayCommand(path, ""))
			}
		})
	}
}
