package dynamostore_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/engine/storetest"
)

// TestContract runs the engine.LeaseStore contract suite against dynalite,
// one fresh table per subtest, with 25-row scan pages so that the 150-row
// scan takes several pages.
func TestContract(t *testing.T) {
	c, _ := client(t)
	storetest.Run(t, func(t *testing.T) engine.LeaseStore {
		return dynamostore.New(c, newTable(t, c), dynamostore.WithScanPageSize(25))
	}, storetest.WithMalformed(func(t *testing.T, s engine.LeaseStore, key string) {
		// A leaseCounter that is a string, not a number.
		putRaw(t, c, s.(*dynamostore.Store).Table(), dynamostore.Item{
			"leaseKey":     &types.AttributeValueMemberS{Value: key},
			"leaseCounter": &types.AttributeValueMemberS{Value: "seven"},
			"checkpoint":   &types.AttributeValueMemberS{Value: "TRIM_HORIZON"},
		})
	}))
}
