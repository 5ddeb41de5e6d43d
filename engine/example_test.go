package engine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// oneShardStream is the smallest engine.Stream: one open shard with two
// records.
type oneShardStream struct{}

func (oneShardStream) DescribeStream(ctx context.Context, stream string) (engine.StreamInfo, error) {
	return engine.StreamInfo{Name: stream, ARN: "arn:aws:kinesis:eu-west-1:123456789012:stream/" + stream, Created: time.Unix(1_700_000_000, 0)}, nil
}

func (oneShardStream) ListShards(ctx context.Context, stream string) ([]engine.Shard, error) {
	return []engine.Shard{{ID: "shardId-000000000000"}}, nil
}

func (oneShardStream) GetShardIterator(ctx context.Context, stream, shard string, pos engine.Position) (string, error) {
	return "it-0", nil
}

func (oneShardStream) GetRecords(ctx context.Context, it string, limit int) (engine.RecordsPage, error) {
	if it != "it-0" {
		return engine.RecordsPage{NextIterator: it}, nil
	}
	return engine.RecordsPage{NextIterator: "it-2", Records: []engine.Record{
		{Sequence: "49590000000000000000000000000000000000000000000000000001"},
		{Sequence: "49590000000000000000000000000000000000000000000000000002"},
	}}, nil
}

// ExampleWorker drives the decision core by hand, the way the Consumer
// driver and the simulator do: step it, carry out the calls it asks for,
// feed their results back, and answer the processor's notices.
func ExampleWorker() {
	w, err := engine.NewWorker(engine.Config{
		Owner:   "worker-1",
		Streams: []engine.StreamConfig{{Name: "orders", InitialPosition: engine.TrimHorizon}},
	})
	if err != nil {
		panic(err)
	}
	store := engine.NewMemStore()
	var stream oneShardStream
	now := engine.Now{Wall: time.Unix(1_700_000_000, 0)}
	inbox := []engine.Input{{Kind: engine.InputTick}}
	for steps := 0; len(inbox) > 0 && steps < 100; steps++ {
		in := inbox[0]
		inbox = inbox[1:]
		rd := w.Step(now, in)
		for _, c := range rd.Calls {
			if c.Op.IsWrite() {
				fmt.Println("write:", c.Op, c.Lease.Key, "owner", c.Lease.Owner, "counter", c.Lease.Counter)
			}
			inbox = append(inbox, engine.Input{Kind: engine.InputResult, Result: engine.Execute(context.Background(), store, stream, c)})
		}
		for _, n := range rd.Notices {
			switch n.Kind {
			case engine.NoticeRecords:
				fmt.Println("process:", len(n.Records), "records of", n.Shard)
				last := n.Records[len(n.Records)-1]
				inbox = append(inbox,
					engine.Input{Kind: engine.InputDone, Key: n.Key, Batch: n.Batch},
					engine.Input{Kind: engine.InputCheckpoint, Key: n.Key, Checkpoint: engine.SequenceCheckpoint(last.Sequence), Token: 1})
			case engine.NoticeCheckpointDone:
				fmt.Println("checkpointed:", n.Checkpoint, "error:", n.Err)
			case engine.NoticeInitialize:
				fmt.Println("initialize:", n.Shard, "from", n.Start)
				inbox = append(inbox, engine.Input{Kind: engine.InputDone, Key: n.Key, Batch: n.Batch})
			}
		}
		if len(inbox) == 0 && now.Mono < time.Second {
			now.Mono = rd.WakeAt // time passes: wake the worker when it asked
			inbox = append(inbox, engine.Input{Kind: engine.InputTick})
		}
	}
	// The first write is the table's stream marker: the worker found none,
	// checked the (empty) table, and named the stream it serves.
	//
	// Output:
	// write: CreateLease __shardlease_stream owner  counter 1
	// write: CreateLease shardId-000000000000 owner  counter 0
	// write: UpdateLease shardId-000000000000 owner worker-1 counter 1
	// initialize: orders/shardId-000000000000 from TRIM_HORIZON
	// process: 2 records of orders/shardId-000000000000
	// write: UpdateLease shardId-000000000000 owner worker-1 counter 2
	// checkpointed: 49590000000000000000000000000000000000000000000000000002 error: <nil>
}
