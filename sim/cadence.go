package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CheckpointCadence is how often the simulated processor checkpoints, as
// real applications do: after every Records records it has processed on
// a shard (0: not by count), and every Interval whatever it has processed
// since (0 with Records set: every DefaultCheckpointInterval).
type CheckpointCadence struct {
	Records  int
	Interval time.Duration
}

// DefaultCheckpointInterval is the interval of a cadence given by records
// alone: a shard that goes quiet still checkpoints what it processed.
const DefaultCheckpointInterval = time.Minute

// IsZero reports whether c sets no cadence (the world's drawn one holds).
func (c CheckpointCadence) IsZero() bool { return c == CheckpointCadence{} }

func (c CheckpointCadence) interval() time.Duration {
	if c.Interval > 0 {
		return c.Interval
	}
	return DefaultCheckpointInterval
}

// String is the cadence as ParseCheckpointCadence reads it ("" if zero).
func (c CheckpointCadence) String() string {
	var parts []string
	if c.Records > 0 {
		parts = append(parts, strconv.Itoa(c.Records))
	}
	if c.Interval > 0 {
		parts = append(parts, c.Interval.String())
	}
	return strings.Join(parts, ",")
}

// ParseCheckpointCadence reads a cadence: a count of records ("1000"), an
// interval ("60s"), or both ("1000,60s"); "" is none.
func ParseCheckpointCadence(s string) (CheckpointCadence, error) {
	var c CheckpointCadence
	if s == "" {
		return c, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if n, err := strconv.Atoi(part); err == nil {
			if n <= 0 || c.Records > 0 {
				return c, fmt.Errorf("checkpoint cadence %q: a count of records must be positive and given once", s)
			}
			c.Records = n
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil {
			return c, fmt.Errorf("checkpoint cadence %q: %q is neither a count of records nor a duration (e.g. 1000, 60s, 1000,60s)", s, part)
		}
		if d < 100*time.Millisecond || c.Interval > 0 {
			return c, fmt.Errorf("checkpoint cadence %q: an interval must be at least 100ms and given once", s)
		}
		c.Interval = d
	}
	return c, nil
}
