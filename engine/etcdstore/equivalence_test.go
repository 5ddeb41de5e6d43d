package etcdstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/engine/storetest"
	"github.com/shardlease/shardlease/internal/etcdtest"
)

// refTable is the reference the equivalence test compares the store with:
// the engine.LeaseStore contract, conditions on owner and counter.
type refTable map[string]engine.Lease

func (r refTable) matches(key string, e engine.Expect) bool {
	l, ok := r[key]
	return ok && l.Owner == e.Owner && l.Counter == e.Counter
}

// TestCompareEquivalence shows that the store's conditional writes, which
// compare mod revisions (see the package documentation), apply exactly when
// a compare of owner and counter would. Random creates, updates and deletes
// go through two stores on one prefix, so that each store's memory of the
// rows is often stale; a third writer rewrites rows behind their backs,
// sometimes with the same owner and counter (only a writer other than
// shardlease would), and rows are deleted and created again with the same
// owner and counter. Every outcome, every row and every directory of the
// pending index must be the reference's.
func TestCompareEquivalence(t *testing.T) {
	cli := etcdtest.Shared(t).Client(t)
	prefix := etcdtest.Prefix(t)
	var stores [2]*etcdstore.Store
	for i := range stores {
		s, err := etcdstore.New(cli, prefix)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	ctx := etcdtest.Context(t)
	rng := rand.New(rand.NewPCG(20, 26))
	keys := []string{"a", "b", "c"}
	owners := []string{"", "w1", "w2"}
	ref := refTable{}
	row := func(key string) engine.Lease {
		l := engine.Lease{Key: key, Owner: owners[rng.IntN(3)], Counter: int64(rng.IntN(4)),
			Checkpoint: engine.SequenceCheckpoint(fmt.Sprint(1 + rng.IntN(1000)))}
		if rng.IntN(2) == 0 {
			l.Pending = owners[1+rng.IntN(2)]
		}
		return l
	}
	// expect returns a condition: the row's own half the time (it should
	// apply), else a near miss or a random one.
	expect := func(key string) engine.Expect {
		cur, ok := ref[key]
		switch x := rng.IntN(4); {
		case ok && x < 2:
			return engine.ExpectOf(cur)
		case ok && x == 2:
			e := engine.ExpectOf(cur)
			if rng.IntN(2) == 0 {
				e.Counter += int64(1 - 2*rng.IntN(2))
			} else {
				e.Owner = owners[(slices.Index(owners, e.Owner)+1)%3]
			}
			return e
		}
		return engine.Expect{Owner: owners[rng.IntN(3)], Counter: int64(rng.IntN(4))}
	}
	var applied, failed, rewrites int
	for step := 0; step < 600; step++ {
		s := stores[rng.IntN(2)]
		key := keys[rng.IntN(len(keys))]
		var what string
		var err error
		var want bool
		switch op := rng.IntN(10); {
		case op < 2:
			l := row(key)
			what = fmt.Sprintf("create %v", l)
			_, exists := ref[key]
			want = !exists
			err = s.CreateLease(ctx, l)
			if want {
				ref[key] = l
			}
		case op < 7:
			e, l := expect(key), row(key)
			what = fmt.Sprintf("update %v expect %+v", l, e)
			want = ref.matches(key, e)
			err = s.UpdateLease(ctx, e, l)
			if want {
				ref[key] = l
			}
		case op < 9:
			e := expect(key)
			what = fmt.Sprintf("delete %s expect %+v", key, e)
			want = ref.matches(key, e)
			err = s.DeleteLease(ctx, key, e)
			if want {
				delete(ref, key)
			}
		default:
			// a writer behind the stores' backs: the same owner and counter
			// (or a new row), another checkpoint
			cur, ok := ref[key]
			if !ok {
				continue
			}
			cur.Checkpoint = engine.SequenceCheckpoint(fmt.Sprint(2000 + step))
			putRaw(t, cli, prefix, cur)
			ref[key] = cur
			rewrites++
			continue
		}
		switch {
		case want && err != nil:
			t.Fatalf("step %d: %s: %v, want it applied", step, what, err)
		case !want && !errors.Is(err, engine.ErrConditionFailed):
			t.Fatalf("step %d: %s = %v, want engine.ErrConditionFailed", step, what, err)
		case want:
			applied++
		default:
			failed++
		}
		for _, k := range keys {
			got, gerr := stores[rng.IntN(2)].GetLease(ctx, k)
			w, ok := ref[k]
			switch {
			case !ok && !errors.Is(gerr, engine.ErrNotFound):
				t.Fatalf("step %d (%s): row %s = %v %v, want none", step, what, k, got, gerr)
			case ok && (gerr != nil || !storetest.Normalize(got).Equal(storetest.Normalize(w))):
				t.Fatalf("step %d (%s): row %s =\n %s %v\nwant\n %s", step, what, k, storetest.Describe(got), gerr, storetest.Describe(w))
			}
		}
		for _, who := range owners[1:] {
			var want []string
			for _, k := range keys {
				if l, ok := ref[k]; ok && l.Pending == who {
					want = append(want, k)
				}
			}
			got, err := s.ListPending(ctx, who)
			if err != nil {
				t.Fatal(err)
			}
			var gk []string
			for _, l := range got {
				gk = append(gk, l.Key)
			}
			if !slices.Equal(gk, want) {
				t.Fatalf("step %d (%s): ListPending(%s) = %v, want %v", step, what, who, gk, want)
			}
		}
	}
	t.Logf("%d writes applied, %d refused, %d rewrites behind the stores' backs", applied, failed, rewrites)
	if applied < 100 || failed < 100 || rewrites < 20 {
		t.Fatalf("the random operations did not exercise both outcomes enough: %d applied, %d refused, %d rewrites", applied, failed, rewrites)
	}
}
