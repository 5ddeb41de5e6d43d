package etcdstore_test

import (
	"os"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/internal/etcdtest"
)

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m)) }

// newStore returns a store on a fresh prefix of the shared cluster.
func newStore(t *testing.T, opts ...etcdstore.Option) *etcdstore.Store {
	t.Helper()
	cli := etcdtest.Shared(t).Client(t)
	s, err := etcdstore.New(cli, etcdtest.Prefix(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// putRaw writes l's row as it is, bypassing the store (its pending index
// entry is left as it was).
func putRaw(t *testing.T, cli *clientv3.Client, prefix string, l engine.Lease) {
	t.Helper()
	if _, err := cli.Put(etcdtest.Context(t), prefix+"rows/"+l.Key, string(etcdstore.EncodeLease(l))); err != nil {
		t.Fatalf("raw put: %v", err)
	}
}
