package etcdstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/internal/etcdtest"
)

// TestCheckTable: an empty prefix and one with the store's own keys pass;
// a key of another application under the prefix, a foreign schema and a
// newer layout are refused with engine.ErrTableSchema and named plainly.
func TestCheckTable(t *testing.T) {
	cli := etcdtest.Shared(t).Client(t)
	ctx := etcdtest.Context(t)
	s := newStore(t)
	if err := s.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable of an empty prefix: %v", err)
	}
	wrote, err := s.EnsurePrefix(ctx)
	if err != nil || !wrote {
		t.Fatalf("EnsurePrefix of an empty prefix = %v, %v; want it to write the schema key", wrote, err)
	}
	if wrote, err := s.EnsurePrefix(ctx); err != nil || wrote {
		t.Fatalf("EnsurePrefix again = %v, %v; want nothing written", wrote, err)
	}
	assign(t, s, "shardId-000000000000", "w1")
	if err := s.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable of a prefix with rows and index entries: %v", err)
	}
	for _, c := range []struct{ key, value, want string }{
		{"config/app.yaml", "x", `config/app.yaml"): another application's`},
		{"rows", "x", "holds keys that are not shardlease's"},
		{"pendingx", "x", "holds keys that are not shardlease's"},
		{"zzz", "x", "holds keys that are not shardlease's"},
		{"schema", `{"format":"other"}`, "is not a shardlease schema"},
		{"schema", `{"format":"shardlease-etcd","encoding":2}`, "laid out by a newer shardlease (encoding 2"},
	} {
		s := newStore(t)
		if _, err := cli.Put(ctx, s.Prefix()+c.key, c.value); err != nil {
			t.Fatal(err)
		}
		err := s.CheckTable(ctx)
		if !errors.Is(err, engine.ErrTableSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckTable with %q = %v, want engine.ErrTableSchema saying %q", c.key, err, c.want)
		}
		if _, err := s.EnsurePrefix(ctx); !errors.Is(err, engine.ErrTableSchema) {
			t.Errorf("EnsurePrefix with %q = %v, want engine.ErrTableSchema", c.key, err)
		}
	}
	// A neighbouring prefix is no concern of this one.
	s = newStore(t)
	if _, err := cli.Put(ctx, strings.TrimSuffix(s.Prefix(), "/")+"-other/key", "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable with a key beside the prefix: %v", err)
	}
}

// TestUnreachable: a cluster that does not answer is named with its
// endpoints.
func TestUnreachable(t *testing.T) {
	t.Parallel() // a cluster of its own
	ports, err := etcdtest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	cli, err := etcdstore.Dial(etcdstore.DialOptions{Endpoints: []string{ep}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s, err := etcdstore.New(cli, "/unreachable/")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = s.CheckTable(ctx)
	if err == nil || !strings.Contains(err.Error(), "etcd "+ep+" did not answer") {
		t.Fatalf("CheckTable of a cluster that is not there = %v, want it named", err)
	}
}

// TestNewRefusesBadPrefixes: the root and malformed prefixes are refused.
func TestNewRefusesBadPrefixes(t *testing.T) {
	cli := etcdtest.Shared(t).Client(t)
	for _, p := range []string{"", "/", "app/", "/a//b/"} {
		if _, err := etcdstore.New(cli, p); err == nil {
			t.Errorf("New(%q) accepted the prefix", p)
		}
	}
	s, err := etcdstore.New(cli, "/shardlease/app")
	if err != nil || s.Prefix() != "/shardlease/app/" {
		t.Fatalf("New(/shardlease/app) = %v, %v; want prefix /shardlease/app/", s, err)
	}
}
