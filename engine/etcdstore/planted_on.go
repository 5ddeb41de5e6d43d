//go:build shardlease_mutations

package etcdstore

// plantedBugs are the bugs a test can plant in a Store (see
// export_planted_test.go): they exist only in builds with the
// shardlease_mutations tag, and only tests of this package can set one.
var plantedBugs = map[string]string{
	"owner-only-compare":      "a conditional write compares the row's owner only, not its counter: a stale version of the same owner is overwritten",
	"watch-resume-at-current": "a pending watch cancelled without a compaction (its member lost the leader) is started again at the current revision, not after the last one it reported: writes in between are never reported",
}

// bug reports whether the planted bug name is active in s.
func (s *Store) bug(name string) bool { return s.planted == name }
