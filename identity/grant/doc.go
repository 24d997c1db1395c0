// Package grant is the token endpoint, POST /connect/token (RFC 6749 §3.2):
// it parses a request once into a Request, authenticates the client,
// dispatches to the grant's file (password.go, refresh.go,
// clientcredentials.go, authorizationcode.go when the token service keeps
// codes; later the device-code grant), renders
// the answer, and logs and counts a failure through one failure path.
//
// It imports the domain packages (clients, users, tokens) and the oauth
// vocabulary; no other endpoint package imports it, nor does it import one.
package grant
