//go:build shardlease_mutations

package engine

import "os"

// testPlantEnv (engine_test's too) names the planted bug that a child run
// of the test binary plants in every configuration a test builds through
// plantFromEnv (newUnit, the configuration rules): how
// TestTestsCatchPlantedBugs shows that a named test, the checker of a
// claim no run can show (docs/claims.md), fails with the bug.
const testPlantEnv = "SHARDLEASE_TEST_PLANT"

// plantFromEnv plants the bug testPlantEnv names in cfg, if any.
func plantFromEnv(cfg *Config) {
	if b := os.Getenv(testPlantEnv); b != "" {
		cfg.planted = b
	}
}
