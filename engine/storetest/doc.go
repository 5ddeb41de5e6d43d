// Package storetest is the contract suite of engine.LeaseStore: one set
// of table-driven behaviour tests that every lease store must pass, run
// against DynamoDB (dynalite) in engine/dynamostore and against the
// simulation's fake table in fakes.
//
// It covers every call the engine makes: create and conditional create;
// update conditioned on owner, counter and "unowned"; delete with the same
// conditions; strongly consistent reads; not-found errors; scans of many
// rows (more than one page where the store pages); and, through an
// optional hook, rows that cannot be decoded.
package storetest
