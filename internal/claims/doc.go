// Package claims holds no code: its test checks the claims table
// (docs/claims.md), which maps every guarantee the documentation states
// to the invariant or test that checks it and the planted bugs that show
// the check fires.
//
//	go test ./internal/claims                 # check the table
//	go test ./internal/claims -claims.update  # rewrite its "stated in" column
package claims
