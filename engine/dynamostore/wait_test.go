package dynamostore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine/dynamostore"
)

// describeSeq is a TableAPI whose CreateTable says the table exists and
// whose DescribeTable answers from a script, then repeats its last answer.
type describeSeq struct {
	answers []func() (*dynamodb.DescribeTableOutput, error)
	calls   int
}

func (d *describeSeq) CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return nil, &types.ResourceInUseException{Message: aws.String("exists")}
}

func (d *describeSeq) DescribeTable(ctx context.Context, _ *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	i := min(d.calls, len(d.answers)-1)
	d.calls++
	return d.answers[i]()
}

func tableIn(status types.TableStatus, key string) func() (*dynamodb.DescribeTableOutput, error) {
	return func() (*dynamodb.DescribeTableOutput, error) {
		return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
			TableStatus:          status,
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(key), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: types.ScalarAttributeTypeS}},
		}}, nil
	}
}

func notFound() (*dynamodb.DescribeTableOutput, error) {
	return nil, &types.ResourceNotFoundException{Message: aws.String("no table")}
}

// TestCreateTableWaitsOutNotFoundAndCreating: the waiter (the SDK's
// TableExistsWaiter with a short first delay) polls through "not found"
// (DescribeTable right after CreateTable) and CREATING until ACTIVE, then
// checks the key schema.
func TestCreateTableWaitsOutNotFoundAndCreating(t *testing.T) {
	api := &describeSeq{answers: []func() (*dynamodb.DescribeTableOutput, error){
		notFound, tableIn(types.TableStatusCreating, "leaseKey"), tableIn(types.TableStatusActive, "leaseKey"),
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamostore.CreateTable(ctx, api, "t"); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	if api.calls != 3 {
		t.Errorf("DescribeTable called %d times, want 3 (not found, CREATING, ACTIVE)", api.calls)
	}

	wrong := &describeSeq{answers: []func() (*dynamodb.DescribeTableOutput, error){tableIn(types.TableStatusActive, "id")}}
	if err := dynamostore.CreateTable(ctx, wrong, "t"); err == nil || !strings.Contains(err.Error(), "not a lease table") {
		t.Errorf("CreateTable over a table keyed by id = %v, want 'not a lease table'", err)
	}
}

// TestCreateTableWaitEndsWithContext: a table that stays CREATING ends the
// wait when ctx does, with an error saying so.
func TestCreateTableWaitEndsWithContext(t *testing.T) {
	api := &describeSeq{answers: []func() (*dynamodb.DescribeTableOutput, error){tableIn(types.TableStatusCreating, "leaseKey")}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := dynamostore.CreateTable(ctx, api, "t")
	if err == nil || !strings.Contains(err.Error(), "ACTIVE") {
		t.Fatalf("CreateTable of a table that never becomes ACTIVE = %v, want a wait error", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CreateTable = %v, want it to wrap context.DeadlineExceeded", err)
	}
}
