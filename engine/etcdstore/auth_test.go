package etcdstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/internal/etcdtest"
)

// TestAuth runs a one-member cluster with etcd's authentication on: a
// wrong password is refused at Dial and a user without a grant on the
// prefix at CheckTable, both as engine.ErrAccessDenied and without the
// password in the error; a user granted the prefix works.
func TestAuth(t *testing.T) {
	t.Parallel() // a cluster of its own
	c, err := etcdtest.NewCluster(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := etcdtest.Context(t)
	const rootPW, appPW, otherPW = "root-secret-1", "app-secret-2", "other-secret-3"
	c.EnableAuth(t, rootPW, etcdtest.User{Name: "app", Password: appPW, Prefix: "/shardlease/app/"}, etcdtest.User{Name: "other", Password: otherPW})

	_, err = etcdstore.Dial(etcdstore.DialOptions{Endpoints: c.Endpoints(), Username: "app", Password: "wrong-password-9"})
	if !errors.Is(err, engine.ErrAccessDenied) || strings.Contains(err.Error(), "wrong-password-9") {
		t.Fatalf("Dial with a wrong password = %v, want engine.ErrAccessDenied without the password", err)
	}

	other, err := etcdstore.Dial(etcdstore.DialOptions{Endpoints: c.Endpoints(), Username: "other", Password: otherPW})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s, err := etcdstore.New(other, "/shardlease/app/")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckTable(ctx); !errors.Is(err, engine.ErrAccessDenied) || strings.Contains(err.Error(), otherPW) {
		t.Fatalf("CheckTable by a user without a grant = %v, want engine.ErrAccessDenied", err)
	}

	app, err := etcdstore.Dial(etcdstore.DialOptions{Endpoints: c.Endpoints(), Username: "app", Password: appPW})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	s, err = etcdstore.New(app, "/shardlease/app/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsurePrefix(ctx); err != nil {
		t.Fatalf("EnsurePrefix by the granted user: %v", err)
	}
	assign(t, s, "shardId-000000000000", "w1")
	if l, err := s.ListPending(ctx, "w1"); err != nil || len(l) != 1 {
		t.Fatalf("ListPending by the granted user = %v, %v", l, err)
	}
	w, err := s.WatchPending(ctx, "w1")
	if err != nil {
		t.Fatalf("WatchPending by the granted user: %v", err)
	}
	w.Close()
}

// TestTLS runs a one-member cluster that serves clients over TLS and
// requires client certificates: Dial with the CA and a client certificate
// works; without the certificate, or without the CA, the cluster cannot be
// used, and a missing file is named.
func TestTLS(t *testing.T) {
	t.Parallel() // a cluster of its own
	dir := t.TempDir()
	files, err := etcdtest.NewTLSFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := etcdtest.NewLayout(1)
	if err != nil {
		t.Fatal(err)
	}
	mc := l.Member(0, dir)
	mc.ClientURL = strings.Replace(mc.ClientURL, "http://", "https://", 1)
	mc.TLS = &files
	m, err := etcdtest.StartMember(mc, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	eps := []string{mc.ClientURL}
	ok, err := etcdstore.Dial(etcdstore.DialOptions{Endpoints: eps, CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey})
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	s, err := etcdstore.New(ok, "/shardlease/tls/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := etcdtest.Context(t)
	if err := s.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable over TLS with a client certificate: %v", err)
	}
	for name, o := range map[string]etcdstore.DialOptions{
		"no client certificate": {Endpoints: eps, CAFile: files.CA},
		"no CA":                 {Endpoints: eps, CertFile: files.ClientCert, KeyFile: files.ClientKey},
	} {
		cli, err := etcdstore.Dial(o)
		if err != nil {
			continue // refused at once: fine
		}
		s, _ := etcdstore.New(cli, "/shardlease/tls/")
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := s.CheckTable(c); err == nil {
			t.Errorf("%s: CheckTable passed", name)
		}
		cancel()
		cli.Close()
	}
	if _, err := etcdstore.Dial(etcdstore.DialOptions{Endpoints: eps, CAFile: filepath.Join(dir, "missing.pem")}); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("Dial with a missing CA file = %v, want the file named", err)
	}
}
