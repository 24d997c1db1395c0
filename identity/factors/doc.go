// Package factors keeps the users' second factors: it enrols a TOTP
// factor (its secret sealed at rest as private signing keys are), checks
// one-time and recovery codes under the password checks' brute-force
// defence, makes recovery codes, and removes factors. The arithmetic is
// package mfa's; the one-use rules (a step accepted once, a recovery code
// spent once) are the store's compare-and-sets, so they hold across
// instances. It also keeps the users' passkeys (WebAuthn credentials):
// go-webauthn runs the checks of the registration and sign-in ceremonies;
// this package seals a ceremony's state for the browser to carry, and
// adds the rules of its own (a passkey signs in its owner only, a sign
// count must grow, a challenge is answered once, failures count as wrong
// codes do). A passkey with user verification is two factors.
//
// Its row in the import table: store, mfa, keys (sealing), users (the
// brute-force defence) and oauth (the authentication methods).
package factors
