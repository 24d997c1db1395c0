// Package users is who may log in: password hashing (argon2id, bcrypt
// accepted), the users file that seeds the store, and the Checker, the one
// password check with the brute-force defence (lockout, throttling, a
// bounded pool of hash slots, a dummy hash for unknown users) that the
// password grant, the login page and the message gateway all call as a Go
// function.
//
// It imports only the store's interfaces from identity; it knows nothing
// of HTTP or OAuth.
package users
