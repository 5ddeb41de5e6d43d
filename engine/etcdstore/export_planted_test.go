//go:build shardlease_mutations

package etcdstore

// SetPlanted plants bug name (see plantedBugs) in s: tests only.
func SetPlanted(s *Store, name string) {
	if _, ok := plantedBugs[name]; !ok {
		panic("etcdstore: no planted bug " + name)
	}
	s.planted = name
}
