package etcdtest

import (
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestShared puts a key through one member and reads it through each.
func TestShared(t *testing.T) {
	start := time.Now()
	c := Shared(t)
	t.Logf("cluster up in %v", time.Since(start))
	cli := c.Client(t)
	p := Prefix(t)
	if _, err := cli.Put(Context(t), p+"k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, ep := range c.Endpoints() {
		one, err := NewClient([]string{ep})
		if err != nil {
			t.Fatal(err)
		}
		r, err := one.Get(Context(t), p+"k")
		one.Close()
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
			t.Fatalf("Get through %s: %v %v", ep, r, err)
		}
	}
}
