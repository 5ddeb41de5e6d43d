package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/shardlease/shardlease/engine"
)

// PendingIndexName is the global secondary index on AttrPending that
// leases handed out by an assigner need (engine.PendingIndex): a sparse
// index (only rows with a pending attribute are in it) that projects the
// keys only, so each worker reads just the rows that wait for it.
const PendingIndexName = "shardlease-pending"

// pendingIndex describes the index for CreateTable and EnsureIndex.
func pendingIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName:  aws.String(PendingIndexName),
		KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String(AttrPending), KeyType: types.KeyTypeHash}},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}
}

// ListPending queries the pending index for the rows whose pending is who,
// following LastEvaluatedKey, and returns them sorted by key with Key and
// Pending set (the index projects the keys). Reads of a global secondary
// index are eventually consistent. A table without the index is an error
// wrapping engine.ErrNoIndex. engine.PendingIndex.
func (s *Store) ListPending(ctx context.Context, who string) ([]engine.Lease, error) {
	q, ok := s.api.(QueryAPI)
	if !ok {
		return nil, fmt.Errorf("dynamostore: list pending %q: the client cannot Query: %w", who, engine.ErrNoIndex)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(PendingIndexName),
		KeyConditionExpression:    aws.String("#p = :who"),
		ExpressionAttributeNames:  map[string]string{"#p": AttrPending},
		ExpressionAttributeValues: map[string]types.AttributeValue{":who": &types.AttributeValueMemberS{Value: who}},
	}
	var out []engine.Lease
	for page := 1; ; page++ {
		res, err := q.Query(ctx, in)
		if err != nil {
			if noIndex(err) || s.missingIndex(ctx, err) {
				return nil, fmt.Errorf("dynamostore: list pending %q: table %q has no index %s (add it with dynamostore.EnsureIndex or `live create`): %w: %w",
					who, s.table, PendingIndexName, engine.ErrNoIndex, err)
			}
			return nil, s.mapError(fmt.Sprintf("list pending %q (query page %d)", who, page), err)
		}
		for _, item := range res.Items {
			d := decoder{item: item}
			key, p := d.str(AttrKey, true), d.str(AttrPending, true)
			if d.err == nil && p == who {
				out = append(out, engine.Lease{Key: key, Pending: p})
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	slices.SortFunc(out, func(a, b engine.Lease) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// QueryAPI is the part of *dynamodb.Client that ListPending needs.
type QueryAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ QueryAPI = (*dynamodb.Client)(nil)

// noIndex reports whether err says the table has no such index.
func noIndex(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException" && strings.Contains(strings.ToLower(api.ErrorMessage()), "index")
}

// missingIndex reports whether a ResourceNotFoundException of a Query
// is about the index rather than the table (dynalite answers a missing
// index so, where DynamoDB answers ValidationException): the table exists.
func (s *Store) missingIndex(ctx context.Context, err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ResourceNotFoundException" {
		return false
	}
	out, derr := s.api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)})
	return derr == nil && !hasIndex(out.Table)
}

// IndexAPI is the part of *dynamodb.Client that EnsureIndex needs.
type IndexAPI interface {
	TableAPI
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

var _ IndexAPI = (*dynamodb.Client)(nil)

// EnsureIndex adds the pending index to an existing lease table if it
// lacks it (UpdateTable), and waits until the table and the index are
// ACTIVE. Give ctx a deadline: on DynamoDB, building an index takes minutes.
func EnsureIndex(ctx context.Context, api IndexAPI, name string) error {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("dynamostore: describe lease table %q: %w", name, err)
	}
	if hasIndex(out.Table) {
		return waitIndex(ctx, api, name)
	}
	update := func(pt *types.ProvisionedThroughput) error {
		_, err := api.UpdateTable(ctx, &dynamodb.UpdateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(AttrPending), AttributeType: types.ScalarAttributeTypeS}},
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
				IndexName: aws.String(PendingIndexName), KeySchema: pendingIndex().KeySchema, Projection: pendingIndex().Projection,
				ProvisionedThroughput: pt,
			}}},
		})
		return err
	}
	pt := provisioned(out.Table)
	err = update(pt)
	var api2 smithy.APIError
	if pt == nil && errors.As(err, &api2) && strings.Contains(strings.ToLower(api2.ErrorMessage()), "provisionedthroughput") {
		// A server that wants capacity for the index although the table
		// bills on demand (dynalite): give it a small one.
		err = update(&types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)})
	}
	if err != nil {
		return fmt.Errorf("dynamostore: add index %s to lease table %q: %w", PendingIndexName, name, err)
	}
	return waitIndex(ctx, api, name)
}

// provisioned returns the throughput a new index needs on a provisioned
// table (the table's own), nil on an on-demand one.
func provisioned(t *types.TableDescription) *types.ProvisionedThroughput {
	if t.BillingModeSummary != nil && t.BillingModeSummary.BillingMode == types.BillingModePayPerRequest {
		return nil
	}
	if p := t.ProvisionedThroughput; p != nil && aws.ToInt64(p.ReadCapacityUnits) > 0 {
		return &types.ProvisionedThroughput{ReadCapacityUnits: p.ReadCapacityUnits, WriteCapacityUnits: p.WriteCapacityUnits}
	}
	return nil
}

func hasIndex(t *types.TableDescription) bool {
	if t == nil {
		return false
	}
	for _, g := range t.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == PendingIndexName {
			return true
		}
	}
	return false
}

// indexActive reports whether the table's pending index exists and is
// ACTIVE (dynalite reports no status: present counts as active).
func indexActive(t *types.TableDescription) bool {
	for _, g := range t.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == PendingIndexName {
			return g.IndexStatus == "" || g.IndexStatus == types.IndexStatusActive
		}
	}
	return false
}
