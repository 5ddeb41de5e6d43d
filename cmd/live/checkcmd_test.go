package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
	"github.com/shardlease/shardlease/internal/localaws"
)

// TestCheckNamesAWrongKeySchema: `live check -table` on a table that is not
// a lease table (keyed by another attribute) says so, and exits 2, instead
// of reading its rows as lost checkpoints (S3).
func TestCheckNamesAWrongKeySchema(t *testing.T) {
	_, _ = liveServers(t, "schema")
	clients, err := awsenv.Load(context.Background(), awsenv.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	name := localaws.UniqueName(t, "not-leases")
	_, err = clients.DynamoDB.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	code, out := runMain(t, "check", "-table", name, linHistoryDir(t, false, false))
	if code != exitUsage || !strings.Contains(out, "is not a lease table: its key schema is id (HASH), want one hash key leaseKey of type S") {
		t.Fatalf("live check on a table keyed by id: exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "S3") {
		t.Errorf("the schema problem is reported as S3:\n%s", out)
	}
	code, out = runMain(t, "check", "-table", name+"-missing", linHistoryDir(t, false, false))
	if code != exitUsage || !strings.Contains(out, "does not exist") {
		t.Fatalf("live check on a missing table: exit %d:\n%s", code, out)
	}
}
