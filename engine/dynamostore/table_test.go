package dynamostore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/internal/localaws"
)

func TestCreateTableIsIdempotentAndChecks(t *testing.T) {
	c, _ := client(t)
	table := newTable(t, c)
	if err := dynamostore.CreateTable(ctx(t), c, table); err != nil {
		t.Fatalf("second CreateTable: %v", err)
	}
	out, err := c.DescribeTable(ctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Table.TableStatus != types.TableStatusActive {
		t.Fatalf("table status %s, want ACTIVE", out.Table.TableStatus)
	}
	if bm := out.Table.BillingModeSummary; bm == nil || bm.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %+v, want PAY_PER_REQUEST", bm)
	}
	if err := dynamostore.New(c, table).CheckTable(ctx(t)); err != nil {
		t.Fatalf("CheckTable: %v", err)
	}
}

func TestCheckTableMissing(t *testing.T) {
	c, _ := client(t)
	name := localaws.UniqueName(t, "missing")
	err := dynamostore.New(c, name).CheckTable(ctx(t))
	if !errors.Is(err, engine.ErrTableMissing) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("CheckTable of a missing table = %v, want ErrTableMissing naming %s", err, name)
	}
}

func TestCheckTableWrongSchema(t *testing.T) {
	c, _ := client(t)
	for _, tc := range []struct {
		name  string
		attrs []types.AttributeDefinition
		keys  []types.KeySchemaElement
	}{
		{"other_hash_key",
			[]types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
			[]types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}},
		{"numeric_leaseKey",
			[]types.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: types.ScalarAttributeTypeN}},
			[]types.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: types.KeyTypeHash}}},
		{"with_range_key",
			[]types.AttributeDefinition{
				{AttributeName: aws.String("leaseKey"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}},
			[]types.KeySchemaElement{
				{AttributeName: aws.String("leaseKey"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := localaws.UniqueName(t, "wrong")
			_, err := c.CreateTable(ctx(t), &dynamodb.CreateTableInput{
				TableName: aws.String(name), AttributeDefinitions: tc.attrs, KeySchema: tc.keys,
				BillingMode: types.BillingModePayPerRequest,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = c.DeleteTable(ctx(t), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
			err = dynamostore.New(c, name).CheckTable(ctx(t))
			if err == nil || !strings.Contains(err.Error(), "not a lease table") {
				t.Fatalf("CheckTable = %v, want 'not a lease table'", err)
			}
			if err := dynamostore.CreateTable(ctx(t), c, name); err == nil {
				t.Fatal("CreateTable accepted an existing table with the wrong schema")
			}
		})
	}
}

// TestMissingTableIsTableMissing: every call on a missing table wraps
// ErrTableMissing, not ErrNotFound (which says a row is missing: a missing
// table read as a missing row would be taken for a deleted lease), and
// names the table and where it was looked for.
func TestMissingTableIsTableMissing(t *testing.T) {
	c, tg := client(t)
	name := localaws.UniqueName(t, "missing")
	s := dynamostore.New(c, name)
	l := engine.Lease{Key: "k", Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	calls := map[string]error{
		"CreateLease": s.CreateLease(ctx(t), l),
		"UpdateLease": s.UpdateLease(ctx(t), engine.Expect{}, l),
		"DeleteLease": s.DeleteLease(ctx(t), "k", engine.Expect{}),
	}
	_, calls["GetLease"] = s.GetLease(ctx(t), "k")
	_, calls["ListLeases"] = s.ListLeases(ctx(t), true)
	for op, err := range calls {
		if !errors.Is(err, engine.ErrTableMissing) || errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%s on a missing table = %v, want ErrTableMissing and not ErrNotFound", op, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `lease table "`+name+`" not found`) || !strings.Contains(msg, tg.Endpoint) {
			t.Errorf("%s: message %q should name the table and the endpoint", op, msg)
		}
	}
}
