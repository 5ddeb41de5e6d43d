package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
)

// ListLeases scans the whole table, following LastEvaluatedKey, with
// ConsistentRead set to consistent. Rows that DecodeLease rejects are
// returned in Listing.Malformed. Leases come back sorted by key.
func (s *Store) ListLeases(ctx context.Context, consistent bool) (engine.Listing, error) {
	var out engine.Listing
	in := &dynamodb.ScanInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(consistent)}
	if s.pageSize > 0 {
		in.Limit = aws.Int32(s.pageSize)
	}
	for page := 1; ; page++ {
		res, err := s.api.Scan(ctx, in)
		if err != nil {
			return engine.Listing{}, s.mapError(fmt.Sprintf("list leases (scan page %d)", page), err)
		}
		for _, item := range res.Items {
			l, key, err := DecodeLease(item)
			if err != nil {
				out.Malformed = append(out.Malformed, engine.MalformedRow{Key: key, Reason: err.Error()})
				continue
			}
			out.Leases = append(out.Leases, l)
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	slices.SortFunc(out.Leases, func(a, b engine.Lease) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(out.Malformed, func(a, b engine.MalformedRow) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// GetLease reads the row with key by a strongly consistent GetItem. A
// missing row is an error wrapping engine.ErrNotFound; a malformed row is
// an error naming the attribute.
func (s *Store) GetLease(ctx context.Context, key string) (engine.Lease, error) {
	res, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return engine.Lease{}, s.mapError(fmt.Sprintf("get lease %q", key), err)
	}
	if len(res.Item) == 0 {
		return engine.Lease{}, fmt.Errorf("dynamostore: get lease %q: no such row in table %q: %w", key, s.table, engine.ErrNotFound)
	}
	l, _, err := DecodeLease(res.Item)
	if err != nil {
		return engine.Lease{}, fmt.Errorf("dynamostore: get lease %q: malformed row: %w", key, err)
	}
	return l, nil
}

// CreateLease writes l with the condition attribute_not_exists(leaseKey).
// An existing row fails with engine.ErrConditionFailed. A lease that does
// not pass Validate is refused without a call.
func (s *Store) CreateLease(ctx context.Context, l engine.Lease) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("dynamostore: create lease: refusing to write an invalid row: %w", err)
	}
	var a attempts
	_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     EncodeLease(l),
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": AttrKey},
	}, a.option)
	if err != nil {
		return s.mapWriteError(fmt.Sprintf("create lease %q", l.Key), err, &a)
	}
	return nil
}

// UpdateLease makes the row l.Key hold l (UpdateItem) on the condition that
// the stored row has expect's counter and owner (no owner, or an empty one,
// when expect.Owner is ""). A missing row fails the condition. Every
// attribute of a lease row is set, or removed when l leaves it empty;
// attributes shardlease does not know (those of other KCL versions, or a
// user's) are kept, so a table adopted from KCL can be handed back. A
// lease that does not pass Validate is refused without a call.
func (s *Store) UpdateLease(ctx context.Context, expect engine.Expect, l engine.Lease) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("dynamostore: update lease: refusing to write an invalid row: %w", err)
	}
	cond, names, values := condition(expect)
	update := updateExpression(EncodeLease(l), names, values)
	var a attempts
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(l.Key),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}, a.option)
	if err != nil {
		return s.mapWriteError(fmt.Sprintf("update lease %q (expect owner %q counter %d)", l.Key, expect.Owner, expect.Counter), err, &a)
	}
	return nil
}

// rowAttributes are the attributes of a lease row besides the key, in the
// order the update expression names them.
var rowAttributes = []string{AttrOwner, AttrCounter, AttrCheckpoint, AttrSubSequence, AttrOwnerSwitches,
	AttrParents, AttrChildren, AttrStartingHash, AttrEndingHash, AttrHandoffFrom, AttrWriter, AttrStreamID,
	AttrPending, AttrHandoffTo, AttrThroughput, AttrSession}

// updateExpression returns "SET ... REMOVE ..." that makes a row's known
// attributes those of item (removing the ones item lacks), adding its
// placeholders (#a0.., :a0..) to names and values.
func updateExpression(item Item, names map[string]string, values Item) string {
	var set, remove []string
	for i, attr := range rowAttributes {
		n := "#a" + strconv.Itoa(i)
		names[n] = attr
		v, ok := item[attr]
		if !ok {
			remove = append(remove, n)
			continue
		}
		vn := ":a" + strconv.Itoa(i)
		values[vn] = v
		set = append(set, n+" = "+vn)
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	return expr
}

// DeleteLease deletes the row key on the same condition as UpdateLease.
func (s *Store) DeleteLease(ctx context.Context, key string, expect engine.Expect) error {
	cond, names, values := condition(expect)
	var a attempts
	_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(key),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}, a.option)
	if err != nil {
		return s.mapWriteError(fmt.Sprintf("delete lease %q (expect owner %q counter %d)", key, expect.Owner, expect.Counter), err, &a)
	}
	return nil
}

func keyOf(key string) Item {
	return Item{AttrKey: &types.AttributeValueMemberS{Value: key}}
}

// condition returns the condition expression that the stored row has
// expect's counter and owner. An unowned expectation accepts a missing
// leaseOwner or an empty one (KCL and other writers differ).
func condition(expect engine.Expect) (string, map[string]string, Item) {
	names := map[string]string{"#c": AttrCounter, "#o": AttrOwner}
	values := Item{":c": &types.AttributeValueMemberN{Value: strconv.FormatInt(expect.Counter, 10)}}
	if expect.Owner == "" {
		// Not size(#o) = 0: dynalite gets size("") wrong.
		values[":empty"] = &types.AttributeValueMemberS{Value: ""}
		return "#c = :c AND (attribute_not_exists(#o) OR #o = :empty)", names, values
	}
	values[":o"] = &types.AttributeValueMemberS{Value: expect.Owner}
	return "#c = :c AND #o = :o", names, values
}
