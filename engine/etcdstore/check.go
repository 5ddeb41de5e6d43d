package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/engine"
)

// SchemaFormat names the store's layout in its schema key.
const SchemaFormat = "shardlease-etcd"

// schema is the value of the prefix's schema key.
type schema struct {
	Format   string `json:"format"`
	Encoding int    `json:"encoding"`
}

// CheckTable checks, in one linearizable read, that the prefix is this
// store's: that it holds no keys besides the store's own (rows/, pending/
// and schema), and that its schema key, if any, names this layout at an
// encoding this shardlease reads. It reports, in plain words, an unreachable
// cluster (naming its endpoints), keys of another application under the
// prefix or a newer layout (both wrapping engine.ErrTableSchema), and
// refused credentials (engine.ErrAccessDenied). An empty prefix passes:
// there is nothing to create (EnsurePrefix writes the schema key).
// engine.TableChecker: Consumer.Run calls it at start.
func (s *Store) CheckTable(ctx context.Context) error {
	_, err := s.check(ctx)
	return err
}

// check is CheckTable; it reports whether the schema key exists.
func (s *Store) check(ctx context.Context) (bool, error) {
	p := s.prefix
	end := clientv3.GetPrefixRangeEnd(p)
	rows, pend := p+rowsDir, p+pendingDir
	sk := p + schemaKey
	// The ranges under the prefix that are not the store's, in key order:
	// [p, pending/), (pending/..., rows/), (rows/..., schema), (schema, end).
	foreign := [][2]string{{p, pend}, {clientv3.GetPrefixRangeEnd(pend), rows}, {clientv3.GetPrefixRangeEnd(rows), sk}, {sk + "\x00", end}}
	ops := []clientv3.Op{clientv3.OpGet(sk)}
	for _, r := range foreign {
		ops = append(ops, clientv3.OpGet(r[0], clientv3.WithRange(r[1]), clientv3.WithKeysOnly(), clientv3.WithLimit(1)))
	}
	resp, err := s.c.Txn(clientv3.WithRequireLeader(ctx)).Then(ops...).Commit()
	if err != nil {
		return false, s.mapError(fmt.Sprintf("check key prefix %q", p), err)
	}
	for _, r := range resp.Responses[1:] {
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
			return false, fmt.Errorf("etcdstore: key prefix %q in %s holds keys that are not shardlease's (for example %q): another application's, or another layout's; give this application a prefix of its own: %w",
				p, s.where, kvs[0].Key, engine.ErrTableSchema)
		}
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return false, nil
	}
	var sc schema
	if err := json.Unmarshal(kvs[0].Value, &sc); err != nil || sc.Format != SchemaFormat {
		return false, fmt.Errorf("etcdstore: key prefix %q in %s: its schema key %q is not a shardlease schema (%q): %w", p, s.where, sk, truncate(kvs[0].Value), engine.ErrTableSchema)
	}
	if sc.Encoding > Encoding {
		return false, fmt.Errorf("etcdstore: key prefix %q in %s was laid out by a newer shardlease (encoding %d; this one reads up to %d): %w",
			p, s.where, sc.Encoding, Encoding, engine.ErrTableSchema)
	}
	return true, nil
}

// EnsurePrefix checks the prefix as CheckTable does and, if it has no
// schema key yet, writes one (if no other writer did first). It reports
// whether it wrote it. `live create` calls it.
func (s *Store) EnsurePrefix(ctx context.Context) (bool, error) {
	has, err := s.check(ctx)
	if err != nil || has {
		return false, err
	}
	sk := s.prefix + schemaKey
	b, _ := json.Marshal(schema{Format: SchemaFormat, Encoding: Encoding})
	resp, err := s.c.Txn(clientv3.WithRequireLeader(ctx)).If(clientv3.Compare(clientv3.CreateRevision(sk), "=", 0)).Then(clientv3.OpPut(sk, string(b))).Commit()
	if err != nil {
		return false, s.mapError(fmt.Sprintf("write the schema key of prefix %q", s.prefix), err)
	}
	return resp.Succeeded, nil
}

func truncate(b []byte) string {
	s := string(b)
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
