// Package factors keeps the users' second factors: it enrols a TOTP
// factor (its secret sealed at rest as private signing keys are), checks
// one-time and recovery codes under the password checks' brute-force
// defence, makes recovery codes, and removes factors. The arithmetic is
// package mfa's; the one-use rules (a step accepted once, a recovery code
// spent once) are the store's compare-and-sets, so they hold across
// instances.
//
// Its row in the import table: store, mfa, keys (sealing), users (the
// brute-force defence) and oauth (the authentication methods).
package factors
