package etcdstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/engine"
)

// Client is the part of *clientv3.Client that Store uses. Tests may wrap a
// client in it to observe or alter calls.
type Client interface {
	clientv3.KV
	clientv3.Watcher
}

var _ Client = (*clientv3.Client)(nil)

// Store is an engine.LeaseStore, engine.PendingIndex, engine.PendingWatcher
// and engine.TableChecker on the keys of one prefix of an etcd cluster. It
// is safe for concurrent use.
//
// Besides its configuration it keeps, per row, the version it saw last (the
// row's mod revision, owner, counter and pending): what its conditional
// writes compare (see the package documentation). That memory is a hint:
// a write whose hint is stale or missing reads the row and tries again,
// so the outcome is the same with or without it.
type Store struct {
	c        Client
	prefix   string
	pageSize int64
	where    string // the endpoints, for error messages
	// planted is a planted bug of the store (planted_on.go): "" in every
	// build without the shardlease_mutations tag.
	//lint:ignore U1000 read only in builds with the shardlease_mutations tag
	planted string

	mu   sync.Mutex
	seen map[string]version
}

// version is one version of a row as the store saw it.
type version struct {
	rev     int64 // the row's mod revision
	ok      bool  // it decoded
	owner   string
	counter int64
	pending string
}

var (
	_ engine.LeaseStore     = (*Store)(nil)
	_ engine.PendingIndex   = (*Store)(nil)
	_ engine.PendingWatcher = (*Store)(nil)
	_ engine.TableChecker   = (*Store)(nil)
)

// Option configures a Store.
type Option func(*Store)

// WithPageSize sets how many rows one range read of a scan returns (default
// 500). Small pages exercise paging in tests.
func WithPageSize(n int64) Option { return func(s *Store) { s.pageSize = n } }

// WithEndpoints names the cluster's endpoints in the store's error
// messages (New takes them from a *clientv3.Client itself).
func WithEndpoints(endpoints []string) Option {
	return func(s *Store) { s.where = describeEndpoints(endpoints) }
}

// DefaultPageSize is the number of rows one range read of a scan returns.
const DefaultPageSize = 500

// New returns a Store on the keys under prefix, reached through c (usually
// a *clientv3.Client). The prefix is the lease table: one application's
// rows, which no other application's keys may share; a prefix that does not
// end with "/" gets one. New makes no call: CheckTable verifies the prefix.
func New(c Client, prefix string, opts ...Option) (*Store, error) {
	if c == nil {
		return nil, errors.New("etcdstore: no etcd client")
	}
	p, err := CleanPrefix(prefix)
	if err != nil {
		return nil, err
	}
	s := &Store{c: c, prefix: p, pageSize: DefaultPageSize, seen: map[string]version{}}
	if cli, ok := c.(*clientv3.Client); ok {
		s.where = describeEndpoints(cli.Endpoints())
	}
	for _, o := range opts {
		o(s)
	}
	if s.pageSize <= 0 {
		return nil, fmt.Errorf("etcdstore: page size %d: want at least 1", s.pageSize)
	}
	if s.where == "" {
		s.where = "the cluster of a wrapped client"
	}
	return s, nil
}

// CleanPrefix returns prefix as a Store uses it: ending with "/". An empty
// prefix, one that does not start with "/", and one with an empty segment
// ("//") are errors: the root of a cluster is shared by every application.
func CleanPrefix(prefix string) (string, error) {
	switch {
	case prefix == "" || prefix == "/":
		return "", errors.New("etcdstore: an empty key prefix: give the application a prefix of its own, such as /shardlease/<application>/")
	case !strings.HasPrefix(prefix, "/"):
		return "", fmt.Errorf("etcdstore: key prefix %q does not start with /", prefix)
	case strings.Contains(prefix, "//"):
		return "", fmt.Errorf("etcdstore: key prefix %q has an empty segment (//)", prefix)
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix, nil
}

// Prefix returns the store's key prefix (ending with "/").
func (s *Store) Prefix() string { return s.prefix }

// The store's keys under its prefix (see the package documentation).
const (
	rowsDir    = "rows/"
	pendingDir = "pending/"
	schemaKey  = "schema"
)

func (s *Store) rowKey(key string) string { return s.prefix + rowsDir + key }
func (s *Store) rowsPrefix() string       { return s.prefix + rowsDir }

// pendingPrefix is the directory of the index entries of rows waiting for
// who: who is path-escaped, so that no who's directory holds another's.
func (s *Store) pendingPrefix(who string) string {
	return s.prefix + pendingDir + url.PathEscape(who) + "/"
}

func (s *Store) pendingKey(who, key string) string { return s.pendingPrefix(who) + key }

// remember notes v as the latest version of key the store has seen, unless
// it has seen a later one.
func (s *Store) remember(key string, v version) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.seen[key]; !ok || v.rev >= old.rev {
		s.seen[key] = v
	}
}

// forget drops what the store knows of key (after a write of unknown
// outcome, or a row gone).
func (s *Store) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.seen, key)
}

// hint returns the latest version of key the store has seen.
func (s *Store) hint(key string) (version, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.seen[key]
	return v, ok
}

// versionOf returns the version of the row stored as value at rev.
func versionOf(key string, value []byte, rev int64) (version, engine.Lease, error) {
	l, err := DecodeLease(key, value)
	if err != nil {
		return version{rev: rev}, engine.Lease{}, err
	}
	return version{rev: rev, ok: true, owner: l.Owner, counter: l.Counter, pending: l.Pending}, l, nil
}

// describeEndpoints names endpoints for error messages, without any
// password in them.
func describeEndpoints(eps []string) string {
	out := make([]string, 0, len(eps))
	for _, ep := range eps {
		if u, err := url.Parse(ep); err == nil && u.User != nil {
			ep = u.Redacted()
		}
		out = append(out, ep)
	}
	return "etcd " + strings.Join(out, ",")
}
