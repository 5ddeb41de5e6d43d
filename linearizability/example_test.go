package linearizability_test

import (
	"fmt"
	"os"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/linearizability"
)

// Two workers take the same lease from the same counter at about the same
// time. Both takes are conditional on counter 1, so at most one can
// succeed: a table that acknowledges both is not linearizable.
func Example() {
	created := linearizability.Row{Key: "shard-0", Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	take := func(client int, call, ret int64, owner string, outcome linearizability.Outcome) linearizability.Op {
		row := created
		row.Owner, row.Counter = owner, 2
		return linearizability.Op{Client: client, Call: call, Return: ret,
			Input:  linearizability.Input{Op: engine.OpUpdateLease, Expect: engine.Expect{Owner: "", Counter: 1}, Row: row},
			Output: linearizability.Output{Outcome: outcome}}
	}
	history := []linearizability.Op{
		{Client: 0, Call: 0, Return: 10,
			Input:  linearizability.Input{Op: engine.OpCreateLease, Row: created},
			Output: linearizability.Output{Outcome: linearizability.OutcomeOK}},
		take(1, 20, 40, "w1", linearizability.OutcomeOK),
		take(2, 25, 45, "w2", linearizability.OutcomeOK),
	}
	res, err := linearizability.Check(history, 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Ok, res.Illegal)
	if !res.Ok {
		// The page shows the longest linearizable prefixes and where
		// they end.
		f, err := os.CreateTemp("", "lin-*.html")
		if err == nil {
			_ = linearizability.Visualize(f, history, res.Illegal[0])
			f.Close()
			os.Remove(f.Name())
		}
	}

	// w2's take failed its condition: fine.
	history[2].Output.Outcome = linearizability.OutcomeConditionFailed
	res, _ = linearizability.Check(history, 10*time.Second)
	fmt.Println(res.Ok)

	// w2 never learnt how its take ended: either way is possible.
	history[2].Output.Outcome, history[2].Return = linearizability.OutcomeUnknown, linearizability.Never
	res, _ = linearizability.Check(history, 10*time.Second)
	fmt.Println(res.Ok, res.UnknownWrites)
	// Output:
	// false [shard-0]
	// true
	// true 1
}
