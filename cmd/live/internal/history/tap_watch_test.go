package history

import (
	"context"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

type pushStore struct{ *engine.MemStore }

func (pushStore) WatchPending(context.Context, string) (engine.PendingWatch, error) { return nil, nil }

// TestTapKeepsPendingWatcher: a tapped store that pushes still does.
func TestTapKeepsPendingWatcher(t *testing.T) {
	tap := NewTap(nil, nil)
	if _, ok := tap.Store(pushStore{engine.NewMemStore()}).(engine.PendingWatcher); !ok {
		t.Error("the tap of a PendingWatcher is not one")
	}
	if _, ok := tap.Store(engine.NewMemStore()).(engine.PendingWatcher); ok {
		t.Error("the tap of a MemStore claims to push")
	}
}
