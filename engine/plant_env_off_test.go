//go:build !shardlease_mutations

package engine

// plantFromEnv plants nothing in a build without the shardlease_mutations
// tag (see plant_env_on_test.go).
func plantFromEnv(*Config) {}
