//go:build !shardlease_mutations

package engine

// bug reports whether the planted bug name is active in this worker: never,
// in a build without the shardlease_mutations tag (see internal/planted).
func (w *Worker) bug(string) bool { return false }

// bug reports whether the planted bug name is active in this
// configuration: never, in a build without the shardlease_mutations tag.
func (c *Config) bug(string) bool { return false }

// bug reports whether the planted driver bug name is active in this
// consumer: never, in a build without the shardlease_mutations tag.
func (c *Consumer) bug(string) bool { return false }
