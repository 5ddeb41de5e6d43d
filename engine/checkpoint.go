package engine

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel checkpoint values, spelled as KCL stores them in the checkpoint
// attribute of a lease row.
const (
	TrimHorizon = "TRIM_HORIZON"
	Latest      = "LATEST"
	AtTimestamp = "AT_TIMESTAMP"
	ShardEnd    = "SHARD_END"
)

// Checkpoint is the position a lease has reached: a Kinesis sequence number
// (with a sub-sequence number for aggregated records), or one of the
// sentinels TrimHorizon, Latest, AtTimestamp or ShardEnd.
//
// Checkpoints are ordered: the three start sentinels come before every
// sequence number, ShardEnd after every one, and sequence numbers compare
// numerically (they are decimal integers of up to 129 digits — a Kinesis
// sequence number has 56 — never compared as strings).
type Checkpoint struct {
	Sequence    string // a decimal sequence number or a sentinel
	SubSequence int64
}

// SequenceCheckpoint returns the checkpoint at sequence number seq.
func SequenceCheckpoint(seq string) Checkpoint { return Checkpoint{Sequence: seq} }

// SentinelCheckpoint returns the checkpoint holding sentinel s.
func SentinelCheckpoint(s string) Checkpoint { return Checkpoint{Sequence: s} }

// IsSentinel reports whether c is one of the four sentinels.
func (c Checkpoint) IsSentinel() bool {
	switch c.Sequence {
	case TrimHorizon, Latest, AtTimestamp, ShardEnd:
		return true
	}
	return false
}

// IsShardEnd reports whether c is ShardEnd.
func (c Checkpoint) IsShardEnd() bool { return c.Sequence == ShardEnd }

// IsStart reports whether c is one of the start sentinels (nothing of the
// shard has been checkpointed yet).
func (c Checkpoint) IsStart() bool {
	switch c.Sequence {
	case TrimHorizon, Latest, AtTimestamp, "":
		return true
	}
	return false
}

// String returns the checkpoint as KCL shows it.
func (c Checkpoint) String() string {
	if c.SubSequence != 0 {
		return c.Sequence + "." + strconv.FormatInt(c.SubSequence, 10)
	}
	if c.Sequence == "" {
		return "<none>"
	}
	return c.Sequence
}

// Validate reports whether c is a sentinel or a well-formed sequence number.
func (c Checkpoint) Validate() error {
	if c.IsSentinel() {
		if c.SubSequence != 0 {
			return fmt.Errorf("checkpoint %s: a sentinel has no sub-sequence number", c.Sequence)
		}
		return nil
	}
	if err := ValidateSequence(c.Sequence); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if c.SubSequence < 0 {
		return fmt.Errorf("checkpoint %s: negative sub-sequence number %d", c.Sequence, c.SubSequence)
	}
	return nil
}

// rank orders the kinds of checkpoint: start sentinels, sequence numbers,
// then ShardEnd.
func (c Checkpoint) rank() int {
	switch {
	case c.IsStart():
		return 0
	case c.IsShardEnd():
		return 2
	}
	return 1
}

// Compare returns -1, 0 or +1 as c is before, equal to, or after d. The
// three start sentinels compare equal to each other.
func (c Checkpoint) Compare(d Checkpoint) int {
	rc, rd := c.rank(), d.rank()
	if rc != rd {
		if rc < rd {
			return -1
		}
		return 1
	}
	if rc != 1 {
		return 0
	}
	if s := CompareSequences(c.Sequence, d.Sequence); s != 0 {
		return s
	}
	return cmp.Compare(c.SubSequence, d.SubSequence)
}

// MaxSequenceDigits is the length of the longest sequence number Kinesis
// accepts (its API's pattern is 0|([1-9]\d{0,128})).
const MaxSequenceDigits = 129

// order is how the worker orders two checkpoints (Checkpoint.Compare):
// every comparison of positions its decisions make goes through it.
func (w *Worker) order(a, b Checkpoint) int {
	if w.bug("compare-sequences-as-strings") && a.rank() == 1 && b.rank() == 1 {
		// the planted bug: sequence numbers ordered as strings, which
		// agrees with their numeric order only while they have the same
		// number of digits
		if s := strings.Compare(a.Sequence, b.Sequence); s != 0 {
			return s
		}
		return cmp.Compare(a.SubSequence, b.SubSequence)
	}
	return a.Compare(b)
}

// ValidateSequence reports whether s is a decimal sequence number of at
// most MaxSequenceDigits digits.
func ValidateSequence(s string) error {
	if s == "" {
		return fmt.Errorf("empty sequence number")
	}
	if len(s) > MaxSequenceDigits {
		return fmt.Errorf("sequence number of %d digits is too long", len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			if len(s) > 40 {
				return fmt.Errorf("sequence number %q... (%d bytes) is not a decimal integer", s[:40], len(s))
			}
			return fmt.Errorf("sequence number %q is not a decimal integer", s)
		}
	}
	return nil
}

// CompareSequences compares two decimal sequence numbers numerically and
// returns -1, 0 or +1. Leading zeros are ignored. Both must be valid
// (ValidateSequence); the result for other strings is unspecified.
func CompareSequences(a, b string) int {
	a = strings.TrimLeft(a, "0")
	b = strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}
