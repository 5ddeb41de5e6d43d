//go:build shardlease_mutations

package engine

import "os"

// testPlantEnv (the same as engine_test's) names the planted bug a child run of the test binary plants
// in every configuration a test builds through plantFromEnv (newUnit, the
// configuration rules): how TestTestsCatchPlantedBugs shows that a named
// test, the checker of a claim no run can show (docs/claims.md), fails
// with the bug.
const testPlantEnv = "SHARDLEASE_TEST_PLANT"

// plantFromEnv plants the bug testPlantEnv names in cfg, if any.
func plantFromEnv(cfg *Config) {
	if b := os.Getenv(testPlantEnv); b != "" {
		cfg.planted = b
	}
}
