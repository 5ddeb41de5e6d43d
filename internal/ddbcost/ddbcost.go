// Package ddbcost estimates what a lease table's calls cost on DynamoDB
// on-demand: an item's size by DynamoDB's rules for the row
// dynamostore.EncodeLease writes, the request units of each call, and
// their price.
//
// The rules are DynamoDB's (developer guide, "Item sizes and formats" and
// "Read/write capacity mode"): an item's size is the sum of its attribute
// names' and values' bytes (a number: one byte per two significant
// digits, plus one; a string set: its elements' bytes); a write costs one
// write request unit per KB of the larger of the item before and after
// it, at least one, whether its condition held or not; a strongly
// consistent read costs one read request unit per 4 KB read, an
// eventually consistent one half that, a scan or query rounding the sum
// of the items it read (a missing item or an empty result still costs
// the minimum). A throttled call costs nothing. Writes that add a row
// to, remove it from or move it within a global secondary index cost one
// more write unit per index entry written.
package ddbcost

import (
	"strconv"

	"github.com/shardlease/shardlease/engine"
)

// The on-demand prices of us-east-1 (since the November 2024 price cut),
// in US dollars per million request units.
const (
	DefaultWritePrice = 0.625
	DefaultReadPrice  = 0.125
)

// HoursPerMonth is the month a cost per shard-month is priced over (365
// days / 12).
const HoursPerMonth = 730

// The attribute names of a lease row (dynamostore's, which this package
// cannot import without the AWS SDK; dynamostore's tests check that the
// two agree).
const (
	attrKey           = "leaseKey"
	attrOwner         = "leaseOwner"
	attrCounter       = "leaseCounter"
	attrCheckpoint    = "checkpoint"
	attrSubSequence   = "checkpointSubSequenceNumber"
	attrOwnerSwitches = "ownerSwitchesSinceCheckpoint"
	attrParents       = "parentShardId"
	attrChildren      = "childShardIds"
	attrStartingHash  = "startingHashKey"
	attrEndingHash    = "endingHashKey"
	attrHandoffFrom   = "handoffFrom"
	attrWriter        = "leaseWriter"
	attrStreamID      = "streamId"
	attrPending       = "pending"
	attrHandoffTo     = "handoffTo"
	attrThroughput    = "throughputKBps"
	attrSession       = "leaseSession"
)

// ItemSize returns the size in bytes, by DynamoDB's rules, of the row that
// stores l: its attribute names and values, the optional attributes only
// when set (as dynamostore.EncodeLease leaves them out). Duplicates in a
// string set count once, as DynamoDB keeps them.
func ItemSize(l *engine.Lease) int {
	n := str(attrKey, l.Key) + num(attrCounter, l.Counter) + str(attrCheckpoint, l.Checkpoint.Sequence) +
		num(attrSubSequence, l.Checkpoint.SubSequence) + num(attrOwnerSwitches, l.OwnerSwitches)
	n += opt(attrOwner, l.Owner) + opt(attrStartingHash, l.StartingHashKey) + opt(attrEndingHash, l.EndingHashKey) +
		set(attrParents, l.Parents) + set(attrChildren, l.Children) + opt(attrHandoffFrom, l.HandoffFrom) +
		opt(attrWriter, l.Writer) + opt(attrStreamID, l.StreamID) + opt(attrPending, l.Pending) + opt(attrHandoffTo, l.HandoffTo) +
		opt(attrSession, l.Session)
	if l.ThroughputKBps != 0 {
		n += len(attrThroughput) + floatBytes(l.ThroughputKBps)
	}
	return n
}

// IndexEntrySize returns the size of a row's entry in the pending index
// (keys only: the table's key and the index's), 0 when the row has none.
func IndexEntrySize(l *engine.Lease) int {
	if l.Pending == "" {
		return 0
	}
	return str(attrKey, l.Key) + str(attrPending, l.Pending)
}

func str(name, v string) int { return len(name) + len(v) }

func opt(name, v string) int {
	if v == "" {
		return 0
	}
	return str(name, v)
}

// set is a string set's size: each distinct element's bytes. An empty set
// is left out.
func set(name string, vs []string) int {
	if len(vs) == 0 {
		return 0
	}
	n := len(name)
	for i, v := range vs {
		dup := false
		for _, w := range vs[:i] {
			if w == v {
				dup = true
				break
			}
		}
		if !dup {
			n += len(v)
		}
	}
	return n
}

func num(name string, v int64) int { return len(name) + intBytes(v) }

// intBytes is the stored size of an integer: its significant digits
// (leading and trailing zeros trimmed), one byte per two, plus one.
func intBytes(v int64) int {
	u := uint64(v)
	if v < 0 {
		u = uint64(-v)
	}
	for u != 0 && u%10 == 0 {
		u /= 10 // trailing zeros
	}
	digits := 0
	for ; u != 0; u /= 10 {
		digits++
	}
	return (digits+1)/2 + 1
}

// floatBytes is intBytes for a float's decimal digits (as strconv's 'g'
// format writes them), up to DynamoDB's 38.
func floatBytes(f float64) int {
	digits := 0
	s := formatG(f)
	lead := true
	trail := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'e' || c == 'E' {
			break
		}
		if c < '0' || c > '9' {
			continue
		}
		if lead && c == '0' {
			continue
		}
		lead = false
		digits++
		if c == '0' {
			trail++
		} else {
			trail = 0
		}
	}
	digits = min(digits-trail, 38)
	return (digits+1)/2 + 1
}

// WriteUnits returns the write request units of a write whose item is
// before bytes before it and after bytes after it (0: absent): one per KB
// of the larger, at least one.
func WriteUnits(before, after int) int64 {
	return max(units(max(before, after), 1024), 1)
}

// ReadUnits returns the read request units of a read of bytes (a scan's
// or query's page: the sum of its items), in halves: a strongly
// consistent read costs 2 halves per 4 KB, an eventually consistent one 1,
// at least one 4 KB block either way.
func ReadUnits(bytes int, consistent bool) (halves int64) {
	blocks := max(units(bytes, 4096), 1)
	if consistent {
		return 2 * blocks
	}
	return blocks
}

func units(n, per int) int64 { return int64((n + per - 1) / per) }

// Prices are on-demand prices in US dollars per million request units.
type Prices struct {
	Write, Read float64
}

// DefaultPrices are us-east-1's.
var DefaultPrices = Prices{Write: DefaultWritePrice, Read: DefaultReadPrice}

// Cost returns the price of writeUnits write and readHalves/2 read
// request units.
func (p Prices) Cost(writeUnits, readHalves int64) float64 {
	return float64(writeUnits)*p.Write/1e6 + float64(readHalves)/2*p.Read/1e6
}

func formatG(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
