package metrics

import (
	"context"

	"github.com/shardlease/shardlease/engine"
)

// Processors returns f wrapped so that every batch its processors handle
// without error is counted, with the shard's MillisBehindLatest.
func (m *Metrics) Processors(f engine.ProcessorFactory) engine.ProcessorFactory {
	return func(shard engine.ShardRef) engine.Processor {
		return &processor{Processor: f(shard), m: m, shard: shard}
	}
}

type processor struct {
	engine.Processor
	m     *Metrics
	shard engine.ShardRef
}

func (p *processor) ProcessRecords(ctx context.Context, in engine.RecordsInput) error {
	err := p.Processor.ProcessRecords(ctx, in)
	if err != nil {
		return err
	}
	m := p.m
	m.records.Add(float64(len(in.Records)))
	m.batches.Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ref := range m.keys {
		if ref == p.shard {
			m.millisBehind.WithLabelValues(p.shard.Stream, p.shard.Shard).Set(float64(in.MillisBehind))
			m.inARow.WithLabelValues(p.shard.Stream, p.shard.Shard).Set(0)
			break
		}
	}
	return nil
}
