package etcdstore_test

import (
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/engine/storetest"
	"github.com/shardlease/shardlease/internal/etcdtest"
)

// TestContract runs the engine.LeaseStore contract suite against the
// shared 3-member cluster, a fresh prefix per subtest, with 25-row pages so
// that the 150-row scan takes six range reads.
func TestContract(t *testing.T) {
	cli := etcdtest.Shared(t).Client(t)
	storetest.Run(t, func(t *testing.T) engine.LeaseStore {
		s, err := etcdstore.New(cli, etcdtest.Prefix(t), etcdstore.WithPageSize(25))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.WithMalformed(func(t *testing.T, s engine.LeaseStore, key string) {
		// A leaseCounter that is a string, not a number.
		value := `{"v":1,"leaseKey":"` + key + `","leaseCounter":"seven","checkpoint":"TRIM_HORIZON"}`
		if _, err := cli.Put(etcdtest.Context(t), s.(*etcdstore.Store).Prefix()+"rows/"+key, value); err != nil {
			t.Fatal(err)
		}
	}))
}
