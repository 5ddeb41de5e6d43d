//go:build shardlease_mutations

package engine_test

import (
	"flag"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/internal/planted"
)

var flagMutantsJSON = flag.String("engine.mutants.json", "", "TestTestsCatchPlantedBugs: write a row (internal/mutants, runner \"test\") per bug to this file (make mutants)")

// testPlantEnv names the planted bug a child run of the test binary plants
// in every configuration its tests build (plantFromEnv in package engine).
const testPlantEnv = "SHARDLEASE_TEST_PLANT"

// testCatches are the named tests that check a claim, each with a planted
// bug that breaks the claim.
var testCatches = []struct{ test, bug string }{
	{"TestConfigRules", "config-margin-unchecked"},
	{"TestMalformedRowsReportedOnceAndSkipped", "malformed-reported-every-scan"},
	{"TestOnlyProvenRowsAreEnded", "unproven-row-ended"},
	{"TestIdleWorkerShutdownLeavesTheMembers", "goodbye-unsaid"},
	{"TestLeavingAssignerLeavesTheMemberList", "leaving-assigner-listed"},
	{"TestLateRenewalKeepsTheLease", "expiry-drops-renewal-in-flight"},
	{"TestSessionRefusedBesideKCL", "session-start-unchecked"},
	{"TestSessionStillMemberGetsNoLease", "session-still-ignored"},
	{"TestReleasedSessionLeasesAssignedAtOnce", "released-waits-index"},
	{"TestSessionRefusedAssignmentTakenOnceChecked", "refused-waits-watch"},
	{"TestScanWorkerEndsADeadSession", "scan-taker-skips-session-end"},
	{"TestTakeInFlightLostWithItsSession", "lost-session-take-acted"},
	{"TestAssignerGhostBindsTheLeases", "assigner-ghost-ignored"},
	{"TestPerLeaseMemberBesideAnOldSessionRowGetsLeases", "session-still-ignores-renewals"},
	{"TestSessionOrphanTakenBack", "orphans-unread"},
	{"TestHandoffDeadlineReleasesThroughABackoff", "handoff-release-waits-backoff"},
	{"TestStartupScanRetriedSoon", "startup-scan-retry-slow"},
	{"TestResolveSentOnceTheTableAnswers", "resolve-waits-backoff"},
	{"TestDoomedAssignmentCountsForTheHolder", "doomed-assign-counted"},
	{"TestCapCountsHandoffsOnTheirWay", "cap-ignores-handoffs"},
	{"TestSessionCheckPassesOnceKCLRowsAreTakenOver", "session-check-waits-lease"},
	{"TestSupersededAssignerTakeDropsTheLeases", "superseded-assigner-take-keeps-leases"},
	{"TestAutoRenewsPerLeaseBesideKCL", "auto-keeps-session"},
	{"TestSessionOrphanTakenBackAfterAFailedTake", "orphan-take-once"},
	{"TestNewAssignerCountsItsPredecessorOut", "previous-session-revives"},
	{"TestLostAssignerTakeTimesTheWinner", "lost-assigner-take-reads-late"},
	{"TestKCLWorkerIsNoMember", "kcl-owners-members"},
	{"TestScanTakerFreesLeasesOfASupersededSession", "superseded-session-unfenced"},
	{"TestExpiredLeaseBackToItsOwnerWhenOthersAreFull", "expired-never-back-to-owner"},
	{"TestRestartedAssignerListsNoDeadOwner", "first-sight-shows-life"},
	{"TestHandoffFinalCheckpointGoesAtTheDeadline", "final-checkpoint-waits-backoff"},
	{"TestPushedRowBusyAtTheOwedReadIsReadAgain", "owed-poll-skips-busy-rows"},
	{"TestRestartedWorkerGetsWhatItsPredecessorReleased", "released-marks-successor-leaving"},
}

// TestTestsCatchPlantedBugs runs each test of testCatches in a child run
// of this binary, without and then with its planted bug: it must pass
// without and fail with.
func TestTestsCatchPlantedBugs(t *testing.T) {
	if os.Getenv(testPlantEnv) != "" {
		t.Skip("a child run")
	}
	var mu sync.Mutex
	var rows []mutants.Row
	t.Cleanup(func() {
		if *flagMutantsJSON == "" || t.Failed() {
			return
		}
		if err := mutants.Write(*flagMutantsJSON, rows); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range testCatches {
		t.Run(tc.test+"/"+tc.bug, func(t *testing.T) {
			t.Parallel()
			defer func() {
				name := "engine:" + tc.bug
				mu.Lock()
				rows = append(rows, mutants.Row{Name: name, Class: mutants.Classes[name], Caught: !t.Failed(), Invariant: tc.test, Runner: "test"})
				mu.Unlock()
			}()
			if _, ok := planted.Bugs()[tc.bug]; !ok {
				t.Fatalf("%s is not a planted bug", tc.bug)
			}
			for _, plant := range []string{"", tc.bug} {
				cmd := exec.Command(os.Args[0], "-test.run=^"+tc.test+"$", "-test.count=1")
				cmd.Env = append(os.Environ(), testPlantEnv+"="+plant)
				out, err := cmd.CombinedOutput()
				switch {
				case plant == "" && err != nil:
					t.Fatalf("%s fails without a planted bug: %v\n%s", tc.test, err, out)
				case plant != "" && err == nil:
					t.Fatalf("%s passes with the planted bug %s: it does not check the claim\n%s", tc.test, plant, out)
				}
			}
		})
	}
}
