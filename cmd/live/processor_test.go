package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

type cpLog struct {
	got []string
	err error
}

func (c *cpLog) Checkpoint(_ context.Context, cp engine.Checkpoint) error {
	c.got = append(c.got, cp.String())
	return c.err
}

type manualClock struct{ t time.Time }

func (m *manualClock) now() time.Time { return m.t }

func records(from, n int) []engine.Record {
	out := make([]engine.Record, n)
	for i := range out {
		out[i] = engine.Record{Sequence: fmt.Sprint(from + i)}
	}
	return out
}

func newTestCounter(o counterOptions, clk *manualClock) engine.Processor {
	o.Now = clk.now
	o.Sleep = func(context.Context, time.Duration) {}
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return newCounterFactory(o)(engine.ShardRef{Stream: "s", Shard: "sh"})
}

func TestCounterCheckpointsEveryNRecordsOrInterval(t *testing.T) {
	clk := &manualClock{t: time.Unix(1000, 0)}
	p := newTestCounter(counterOptions{Every: 5, Interval: 10 * time.Second}, clk)
	cp := &cpLog{}
	ctx := context.Background()
	_ = p.Initialize(ctx, engine.InitInput{Key: "sh", Start: engine.SentinelCheckpoint(engine.TrimHorizon)})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.ProcessRecords(ctx, engine.RecordsInput{Records: records(1, 3), Checkpointer: cp})) // 3: no
	must(p.ProcessRecords(ctx, engine.RecordsInput{Records: records(4, 3), Checkpointer: cp})) // 6: at 6
	must(p.ProcessRecords(ctx, engine.RecordsInput{Records: records(7, 1), Checkpointer: cp})) // 1: no
	clk.t = clk.t.Add(11 * time.Second)
	must(p.ProcessRecords(ctx, engine.RecordsInput{Records: records(8, 1), Checkpointer: cp})) // interval: at 8
	must(p.ProcessRecords(ctx, engine.RecordsInput{Records: records(9, 1), Checkpointer: cp})) // no
	must(p.ShutdownRequested(ctx, engine.ShutdownInput{Checkpointer: cp}))                     // at 9
	if fmt.Sprint(cp.got) != "[6 8 9]" {
		t.Fatalf("checkpoints %v, want [6 8 9]", cp.got)
	}
}

func TestCounterCheckpointsTheFirstBatchAfterALatestStart(t *testing.T) {
	clk := &manualClock{t: time.Unix(1000, 0)}
	p := newTestCounter(counterOptions{Every: 100, Interval: time.Hour}, clk)
	cp := &cpLog{}
	ctx := context.Background()
	_ = p.Initialize(ctx, engine.InitInput{Key: "sh", Start: engine.SentinelCheckpoint(engine.Latest)})
	_ = p.ProcessRecords(ctx, engine.RecordsInput{Records: records(1, 2), Checkpointer: cp})
	_ = p.ProcessRecords(ctx, engine.RecordsInput{Records: records(3, 2), Checkpointer: cp})
	if fmt.Sprint(cp.got) != "[2]" {
		t.Fatalf("checkpoints %v, want [2]", cp.got)
	}
}

func TestCounterFailsEveryNthBatchOnceAndStopsCheckpointingWhenLost(t *testing.T) {
	clk := &manualClock{t: time.Unix(1000, 0)}
	p := newTestCounter(counterOptions{Every: 1, Interval: time.Hour, FailEvery: 2}, clk)
	cp := &cpLog{}
	ctx := context.Background()
	_ = p.Initialize(ctx, engine.InitInput{Key: "sh", Start: engine.SentinelCheckpoint(engine.TrimHorizon)})
	if err := p.ProcessRecords(ctx, engine.RecordsInput{Records: records(1, 1), Checkpointer: cp}); err != nil {
		t.Fatal(err)
	}
	if err := p.ProcessRecords(ctx, engine.RecordsInput{Records: records(2, 1), Checkpointer: cp}); err == nil {
		t.Fatal("the second batch should fail once")
	}
	// the same batch again: it goes through (batch 3 is not a multiple of 2)
	cp.err = fmt.Errorf("gone: %w", engine.ErrLeaseLost)
	if err := p.ProcessRecords(ctx, engine.RecordsInput{Records: records(2, 1), Checkpointer: cp}); err != nil {
		t.Fatal(err)
	}
	cp.err = nil
	_ = p.ShutdownRequested(ctx, engine.ShutdownInput{Checkpointer: cp})
	if fmt.Sprint(cp.got) != "[1 2]" {
		t.Fatalf("checkpoints %v, want [1 2] (none after the lease was lost)", cp.got)
	}
}
