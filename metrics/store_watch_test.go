package metrics

import (
	"context"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

type pushStore struct{ *engine.MemStore }

func (pushStore) WatchPending(context.Context, string) (engine.PendingWatch, error) { return nil, nil }

// TestStoreKeepsPendingWatcher: the wrapper of a store that pushes what
// waits for a worker still does (Consumer then watches instead of
// polling), and that of one that does not, does not.
func TestStoreKeepsPendingWatcher(t *testing.T) {
	m, err := New(Options{Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Store(pushStore{engine.NewMemStore()}).(engine.PendingWatcher); !ok {
		t.Error("the wrapper of a PendingWatcher is not one")
	}
	if _, ok := m.Store(engine.NewMemStore()).(engine.PendingWatcher); ok {
		t.Error("the wrapper of a MemStore claims to push")
	}
}
