package dynamostore

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
)

// The attribute names of a lease row, as KCL spells them.
const (
	AttrKey           = "leaseKey"
	AttrOwner         = "leaseOwner"
	AttrCounter       = "leaseCounter"
	AttrCheckpoint    = "checkpoint"
	AttrSubSequence   = "checkpointSubSequenceNumber"
	AttrOwnerSwitches = "ownerSwitchesSinceCheckpoint"
	AttrParents       = "parentShardId"
	AttrChildren      = "childShardIds"
	AttrStartingHash  = "startingHashKey"
	AttrEndingHash    = "endingHashKey"
	// AttrHandoffFrom is shardlease's own attribute (engine.Lease.HandoffFrom):
	// KCL ignores it; it is absent when no handoff is pending.
	AttrHandoffFrom = "handoffFrom"
	// AttrWriter is shardlease's own attribute (engine.Lease.Writer): which
	// process wrote this version of the row. KCL ignores it.
	AttrWriter = "leaseWriter"
	// AttrStreamID is shardlease's own attribute (engine.Lease.StreamID):
	// the identity of the stream incarnation the row's shard belongs to
	// (ARN and creation time). KCL ignores it.
	AttrStreamID = "streamId"
	// AttrPending, AttrHandoffTo and AttrThroughput are the attributes of
	// leases handed out by an assigner (engine.Lease.Pending, HandoffTo,
	// ThroughputKBps; the last with KCL 3.x's name). AttrPending is the key
	// of the pending index (PendingIndexName).
	AttrPending    = "pending"
	AttrHandoffTo  = "handoffTo"
	AttrThroughput = "throughputKBps"
	// AttrSession is shardlease's own attribute (engine.Lease.Session): the
	// session (its holder's writer nonce) a lease is bound to in session
	// renewal. KCL ignores it; it is absent when the lease is renewed per
	// lease.
	AttrSession = "leaseSession"
)

// Item is one raw DynamoDB row.
type Item = map[string]types.AttributeValue

// EncodeLease returns the row that stores l. Empty optional attributes are
// left out (DynamoDB has no empty sets): an unowned lease has no
// leaseOwner, a lease without parents no parentShardId. The string sets are
// written sorted and without duplicates.
func EncodeLease(l engine.Lease) Item {
	item := Item{
		AttrKey:           &types.AttributeValueMemberS{Value: l.Key},
		AttrCounter:       num(l.Counter),
		AttrCheckpoint:    &types.AttributeValueMemberS{Value: l.Checkpoint.Sequence},
		AttrSubSequence:   num(l.Checkpoint.SubSequence),
		AttrOwnerSwitches: num(l.OwnerSwitches),
	}
	putS(item, AttrOwner, l.Owner)
	putS(item, AttrStartingHash, l.StartingHashKey)
	putS(item, AttrEndingHash, l.EndingHashKey)
	putSS(item, AttrParents, l.Parents)
	putSS(item, AttrChildren, l.Children)
	putS(item, AttrHandoffFrom, l.HandoffFrom)
	putS(item, AttrWriter, l.Writer)
	putS(item, AttrStreamID, l.StreamID)
	putS(item, AttrPending, l.Pending)
	putS(item, AttrHandoffTo, l.HandoffTo)
	putS(item, AttrSession, l.Session)
	if l.ThroughputKBps != 0 {
		item[AttrThroughput] = &types.AttributeValueMemberN{Value: strconv.FormatFloat(l.ThroughputKBps, 'g', -1, 64)}
	}
	return item
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func putS(item Item, name, v string) {
	if v != "" {
		item[name] = &types.AttributeValueMemberS{Value: v}
	}
}

func putSS(item Item, name string, v []string) {
	if len(v) > 0 {
		item[name] = &types.AttributeValueMemberSS{Value: slices.Compact(slices.Sorted(slices.Values(v)))}
	}
}

// DecodeLease reads a lease from a row. It fails, naming the attribute,
// when leaseKey, leaseCounter or checkpoint is missing, when any known
// attribute has the wrong type or an unreadable number, or when the lease
// does not pass engine.Lease.Validate. Other attributes are ignored. An
// empty leaseOwner reads as unowned; the string sets come back sorted
// (DynamoDB keeps no order), without duplicates, and nil when absent; an
// empty string in a set is malformed.
//
// The returned key is the leaseKey when it could be read, even on error.
func DecodeLease(item Item) (l engine.Lease, key string, err error) {
	d := decoder{item: item}
	l.Key = d.str(AttrKey, true)
	key = l.Key
	l.Owner = d.str(AttrOwner, false)
	l.Counter = d.num(AttrCounter, true)
	l.Checkpoint.Sequence = d.str(AttrCheckpoint, true)
	l.Checkpoint.SubSequence = d.num(AttrSubSequence, false)
	l.OwnerSwitches = d.num(AttrOwnerSwitches, false)
	l.Parents = d.set(AttrParents)
	l.Children = d.set(AttrChildren)
	l.StartingHashKey = d.str(AttrStartingHash, false)
	l.EndingHashKey = d.str(AttrEndingHash, false)
	l.HandoffFrom = d.str(AttrHandoffFrom, false)
	l.Writer = d.str(AttrWriter, false)
	l.StreamID = d.str(AttrStreamID, false)
	l.Pending = d.str(AttrPending, false)
	l.HandoffTo = d.str(AttrHandoffTo, false)
	l.Session = d.str(AttrSession, false)
	l.ThroughputKBps = d.float(AttrThroughput)
	if d.err != nil {
		return engine.Lease{}, key, d.err
	}
	if err := l.Validate(); err != nil {
		return engine.Lease{}, key, err
	}
	return l, key, nil
}

// decoder reads typed attributes and keeps the first error.
type decoder struct {
	item Item
	err  error
}

func (d *decoder) get(name string, required bool) (types.AttributeValue, bool) {
	v, ok := d.item[name]
	if ok {
		if _, null := v.(*types.AttributeValueMemberNULL); null {
			ok = false
		}
	}
	if !ok && required && d.err == nil {
		d.err = fmt.Errorf("attribute %s is missing", name)
	}
	return v, ok && d.err == nil
}

func (d *decoder) fail(name, want string, v types.AttributeValue) {
	if d.err == nil {
		d.err = fmt.Errorf("attribute %s: want type %s, got %s", name, want, typeName(v))
	}
}

func (d *decoder) str(name string, required bool) string {
	v, ok := d.get(name, required)
	if !ok {
		return ""
	}
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		d.fail(name, "S", v)
		return ""
	}
	return s.Value
}

func (d *decoder) num(name string, required bool) int64 {
	v, ok := d.get(name, required)
	if !ok {
		return 0
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		d.fail(name, "N", v)
		return 0
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("attribute %s: %q is not a 64-bit integer", name, n.Value)
	}
	return i
}

func (d *decoder) float(name string) float64 {
	v, ok := d.get(name, false)
	if !ok {
		return 0
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		d.fail(name, "N", v)
		return 0
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if (err != nil || f < 0 || f != f) && d.err == nil {
		d.err = fmt.Errorf("attribute %s: %q is not a non-negative number", name, n.Value)
	}
	return f
}

func (d *decoder) set(name string) []string {
	v, ok := d.get(name, false)
	if !ok {
		return nil
	}
	ss, ok := v.(*types.AttributeValueMemberSS)
	if !ok {
		d.fail(name, "SS", v)
		return nil
	}
	if len(ss.Value) == 0 {
		return nil
	}
	if slices.Contains(ss.Value, "") && d.err == nil {
		d.err = fmt.Errorf("attribute %s: an empty shard id", name)
		return nil
	}
	// a set has no duplicates; a hand-made list might
	return slices.Compact(slices.Sorted(slices.Values(ss.Value)))
}

func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return fmt.Sprintf("%T", v)
}
