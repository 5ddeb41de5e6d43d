package engine

import (
	"context"
	"time"
)

// Stream reads shards of Kinesis streams. Implementations:
// fakes.Kinesis (simulation) and kinesisstream.Stream (Kinesis).
type Stream interface {
	// DescribeStream returns what identifies the stream (its ARN and
	// creation time: DescribeStreamSummary), or an error wrapping
	// ErrNotFound when it does not exist.
	DescribeStream(ctx context.Context, stream string) (StreamInfo, error)
	// ListShards returns every shard of the stream that the service still
	// lists (open ones and closed ones within retention), all pages.
	ListShards(ctx context.Context, stream string) ([]Shard, error)
	// GetShardIterator returns an iterator at pos in the shard.
	GetShardIterator(ctx context.Context, stream, shard string, pos Position) (string, error)
	// GetRecords returns up to limit records from iterator. At the end of
	// a closed shard the page's NextIterator is empty.
	GetRecords(ctx context.Context, iterator string, limit int) (RecordsPage, error)
}

// Shard describes one shard as ListShards returns it.
type Shard struct {
	ID              string
	Parent          string // ParentShardId, "" if none
	AdjacentParent  string // AdjacentParentShardId: the second parent of a merge
	StartingHashKey string
	EndingHashKey   string
	// StartingSequence and EndingSequence bound the shard's sequence
	// numbers; EndingSequence is empty while the shard is open.
	StartingSequence string
	EndingSequence   string
}

// Closed reports whether the shard has been split or merged away.
func (s Shard) Closed() bool { return s.EndingSequence != "" }

// ParentIDs returns the shard's parents: none, one (split) or two (merge).
func (s Shard) ParentIDs() []string {
	switch {
	case s.Parent != "" && s.AdjacentParent != "":
		return []string{s.Parent, s.AdjacentParent}
	case s.Parent != "":
		return []string{s.Parent}
	case s.AdjacentParent != "":
		return []string{s.AdjacentParent}
	}
	return nil
}

// IteratorType is a Kinesis shard iterator type.
type IteratorType string

// The Kinesis iterator types.
const (
	IterTrimHorizon         IteratorType = "TRIM_HORIZON"
	IterLatest              IteratorType = "LATEST"
	IterAtTimestamp         IteratorType = "AT_TIMESTAMP"
	IterAtSequenceNumber    IteratorType = "AT_SEQUENCE_NUMBER"
	IterAfterSequenceNumber IteratorType = "AFTER_SEQUENCE_NUMBER"
)

// Position is where a shard iterator starts.
type Position struct {
	Type      IteratorType
	Sequence  string    // AT_ and AFTER_SEQUENCE_NUMBER
	Timestamp time.Time // AT_TIMESTAMP
}

// Record is one Kinesis record, or one user record of a record aggregated
// by the Kinesis Producer Library (see package kpl): the engine hands
// processors user records, never aggregates.
type Record struct {
	// Sequence is the Kinesis record's sequence number; all the user
	// records of an aggregate share it.
	Sequence string
	// SubSequence is the user record's index in its aggregate; 0 for a
	// record that is not aggregated. (Sequence, SubSequence) orders the
	// records of a shard and is what a checkpoint names.
	SubSequence  int64
	PartitionKey string
	// ExplicitHashKey is the explicit hash key of a user record that has
	// one; "" otherwise (GetRecords does not return a Kinesis record's).
	ExplicitHashKey string
	Data            []byte
	Arrival         time.Time
	// Aggregated reports whether the record is a user record of an
	// aggregate.
	Aggregated bool
}

// RecordsPage is the result of one GetRecords call.
type RecordsPage struct {
	Records      []Record
	NextIterator string // empty at the end of a closed shard
	MillisBehind int64
	// ChildShards lists the children at the end of a closed shard when the
	// service returns them; empty otherwise (the engine then learns the
	// children from ListShards).
	ChildShards []Shard
}
