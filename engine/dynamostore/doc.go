// Package dynamostore is the lease table on Amazon DynamoDB: Store
// implements engine.LeaseStore with aws-sdk-go-v2.
//
// Rows use the attribute names of the Java Kinesis Client Library (see
// engine.Lease), so KCL tooling can read a shardlease table and shardlease
// can adopt a KCL table. The table has one string hash key, leaseKey;
// CreateTable makes one and CheckTable verifies an existing one.
//
// Every write is conditional: create is a PutItem on
// attribute_not_exists(leaseKey); update (an UpdateItem that sets the
// lease's attributes and keeps any it does not know) and delete are on the
// owner and counter the caller read. Errors are mapped to the engine's sentinels
// (engine.ErrConditionFailed, ErrThrottled, ErrNotFound for a missing row,
// ErrTableMissing, ErrTableSchema, ErrAccessDenied); anything else is
// returned wrapped as it is, and the engine takes it as an unknown outcome.
// The SDK retries failed requests, so a write that applied but whose reply
// was lost can come back as ErrConditionFailed on the retry: Store reports
// it as such and the engine resolves it by re-reading the row.
package dynamostore
