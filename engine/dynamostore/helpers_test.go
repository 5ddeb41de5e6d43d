package dynamostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/internal/localaws"
)

func ctx(t *testing.T) context.Context { return localaws.Context(t) }

func fastRetries(cfg aws.Config) aws.Config { return localaws.FastRetries(cfg) }

func noRetries(cfg aws.Config) aws.Config { return localaws.NoRetries(cfg) }

// client returns a DynamoDB client for the local server (skipping the test
// when there is none).
func client(t *testing.T) (*dynamodb.Client, localaws.Target) {
	t.Helper()
	tg := localaws.DynamoDB(t)
	return dynamodb.NewFromConfig(fastRetries(tg.Config)), tg
}

// newTable creates a fresh lease table and returns its name.
func newTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	name := localaws.UniqueName(t, "leases")
	if err := dynamostore.CreateTable(ctx(t), c, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		c2, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.DeleteTable(c2, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// putRaw writes item as it is, bypassing the store.
func putRaw(t *testing.T, c *dynamodb.Client, table string, item dynamostore.Item) {
	t.Helper()
	if _, err := c.PutItem(ctx(t), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatalf("PutItem raw: %v", err)
	}
}
