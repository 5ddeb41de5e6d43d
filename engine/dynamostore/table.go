package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/shardlease/shardlease/engine"
)

// TableAPI is the subset of *dynamodb.Client that CreateTable uses.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// CreateTable creates a lease table named name (one string hash key,
// leaseKey; the pending index, PendingIndexName; on-demand billing) and
// waits until it is ACTIVE. A table that already exists is not an error if
// its key schema is a lease table's; CreateTable then only waits for it
// (EnsureIndex adds the index to a table made without it). The wait polls DescribeTable and ends
// with ctx: give ctx a deadline.
func CreateTable(ctx context.Context, api TableAPI, name string) error {
	_, err := api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(AttrKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrPending), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:              []types.KeySchemaElement{{AttributeName: aws.String(AttrKey), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{pendingIndex()},
		BillingMode:            types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamostore: create lease table %q: %w", name, err)
	}
	return waitActive(ctx, api, name)
}

// Waiter timing: the SDK's TableExistsWaiter with a short first delay, so
// that local servers that create tables at once are not waited on for the
// SDK's default 20 s; the waiter backs off (with jitter) up to
// waitMaxDelay against DynamoDB, where creation takes seconds.
const (
	waitMinDelay = 50 * time.Millisecond
	waitMaxDelay = 5 * time.Second
	// waitDefault bounds the wait when ctx has no deadline.
	waitDefault = 10 * time.Minute
)

// waitActive waits with the SDK's TableExistsWaiter until the table is
// ACTIVE (a ResourceNotFoundException right after CreateTable is waited
// out), then checks its key schema. It ends with ctx, or after waitDefault
// if ctx has no deadline.
func waitActive(ctx context.Context, api TableAPI, name string) error {
	// With a deadline, the waiter's own bound lies past it, so that ctx
	// ends the wait (and the error wraps ctx's).
	maxWait := waitDefault
	if d, ok := ctx.Deadline(); ok {
		maxWait = time.Until(d) + waitMaxDelay
	}
	if ctx.Err() != nil {
		return fmt.Errorf("dynamostore: wait for lease table %q to become ACTIVE: %w", name, ctx.Err())
	}
	w := dynamodb.NewTableExistsWaiter(api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = waitMinDelay, waitMaxDelay
	})
	out, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, maxWait)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("dynamostore: wait for lease table %q to become ACTIVE: %w (%w)", name, ctx.Err(), err)
		}
		return fmt.Errorf("dynamostore: wait for lease table %q to become ACTIVE: %w", name, err)
	}
	return checkSchema(name, out.Table)
}

// CheckTable describes the store's table and reports, in plain words, a
// missing table (wrapping engine.ErrTableMissing), a key schema other than a
// single string hash key named leaseKey (engine.ErrTableSchema), or
// credentials that the service rejects (engine.ErrAccessDenied). It
// implements engine.TableChecker: Consumer.Run calls it at start.
func (s *Store) CheckTable(ctx context.Context) error {
	out, err := s.api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)})
	if err != nil {
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "ResourceNotFoundException" {
			return fmt.Errorf("dynamostore: lease table %q does not exist in %s (create it with dynamostore.CreateTable, or `live create`): %w: %w",
				s.table, s.where, engine.ErrTableMissing, err)
		}
		return s.mapError(fmt.Sprintf("describe lease table %q", s.table), err)
	}
	return checkSchema(s.table, out.Table)
}

// checkSchema verifies that a table's key is one S hash key named leaseKey.
func checkSchema(name string, t *types.TableDescription) error {
	if t == nil {
		return fmt.Errorf("dynamostore: lease table %q: DescribeTable returned no description", name)
	}
	ks := t.KeySchema
	if len(ks) != 1 || aws.ToString(ks[0].AttributeName) != AttrKey || ks[0].KeyType != types.KeyTypeHash {
		return fmt.Errorf("dynamostore: table %q is not a lease table: its key schema is %s, want one hash key %s of type S: %w",
			name, describeKeys(ks), AttrKey, engine.ErrTableSchema)
	}
	for _, a := range t.AttributeDefinitions {
		if aws.ToString(a.AttributeName) == AttrKey && a.AttributeType != types.ScalarAttributeTypeS {
			return fmt.Errorf("dynamostore: table %q is not a lease table: hash key %s has type %s, want S: %w",
				name, AttrKey, a.AttributeType, engine.ErrTableSchema)
		}
	}
	return nil
}

func describeKeys(ks []types.KeySchemaElement) string {
	if len(ks) == 0 {
		return "empty"
	}
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s (%s)", aws.ToString(k.AttributeName), k.KeyType)
	}
	return s
}

// waitIndex waits until the table's pending index is ACTIVE, polling
// DescribeTable with backoff from waitMinDelay to waitMaxDelay, until ctx
// ends (or waitDefault without a deadline).
func waitIndex(ctx context.Context, api TableAPI, name string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, waitDefault)
		defer cancel()
	}
	delay := waitMinDelay
	for polls := 1; ; polls++ {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("dynamostore: wait for index %s of %q: %w", PendingIndexName, name, err)
		}
		if out.Table != nil && out.Table.TableStatus == types.TableStatusActive && indexActive(out.Table) {
			return nil
		}
		if polls >= 5 && !hasIndex(out.Table) {
			// DynamoDB lists a new index at once (CREATING); a server that
			// accepts UpdateTable but never lists it does not build
			// indexes that way (dynalite).
			return fmt.Errorf("dynamostore: table %q: the server accepted the index %s but does not build it: create the table anew (dynamostore.CreateTable, `live create`)", name, PendingIndexName)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("dynamostore: wait for index %s of %q to become ACTIVE: %w", PendingIndexName, name, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, waitMaxDelay)
	}
}
