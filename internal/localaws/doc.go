// Package localaws points tests at the local AWS-compatible servers that
// scripts/localaws.sh runs: dynalite for DynamoDB and kinesalite for
// Kinesis. It is a test helper only; production code never imports it.
//
// A test asks for a server with DynamoDB(t) or Kinesis(t). The servers are
// found from the environment:
//
//   - AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_KINESIS, as printed by
//     `scripts/localaws.sh env`; or
//   - SHARDLEASE_LOCALAWS=1, which reads the ports that
//     `scripts/localaws.sh start` left in its state directory
//     ($LOCALAWS_STATE_DIR, default .tmp/localaws at the repository root).
//
// When neither is set, or the server does not answer, the test is skipped
// with a message saying how to start the servers, unless
// SHARDLEASE_REQUIRE_LOCALAWS=1, in which case it fails: `make
// test-contract` sets it so that a missing server can never pass silently.
//
// FaultProxy puts an in-process reverse proxy in front of a server to
// produce what the local servers never do: throttling, expired iterators,
// ChildShards in GetRecords, and a write that applied but whose reply was
// lost (so the SDK retries it).
//
// Besides the two adapters, this is the only package that imports the AWS
// SDK (only its core aws package, to build an aws.Config), and only tests
// import it.
package localaws
