//go:build !shardlease_mutations

package etcdstore

// bug reports whether the planted bug name is active in s: never, in a
// build without the shardlease_mutations tag.
func (s *Store) bug(string) bool { return false }
