// Package awserr classifies AWS error codes that the adapters of both
// services (engine/dynamostore, engine/kinesisstream) share.
package awserr

// Credentials reports whether an AWS error code says the credentials were
// rejected or do not allow the call: something a person must fix, which no
// retry cures.
func Credentials(code string) bool {
	switch code {
	case "AccessDeniedException", "AccessDenied", "UnrecognizedClientException", "InvalidSignatureException",
		"SignatureDoesNotMatch", "ExpiredTokenException", "ExpiredToken", "InvalidClientTokenId",
		"MissingAuthenticationTokenException", "MissingAuthenticationToken", "IncompleteSignatureException",
		"IncompleteSignature", "UnauthorizedOperation", "NotAuthorized":
		return true
	}
	return false
}
