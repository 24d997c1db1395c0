// Package grant is the token endpoint, POST /connect/token (RFC 6749 §3.2):
// it parses a request once into a Request, authenticates the client,
// dispatches to the grant's file (password.go, refresh.go,
// clientcredentials.go, authorizationcode.go when the token service keeps
// codes; devicecode.go when it keeps device authorizations), renders
// the answer, and logs and counts a failure through one failure path.
//
// It imports the domain packages (clients, users, tokens, store) and the
// oauth vocabulary; no other endpoint package.
package grant
