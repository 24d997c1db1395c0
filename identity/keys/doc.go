// Package keys owns the signing keys: their lifecycle (announce -> sign ->
// retire -> remove, shared by every instance through the store), sealing
// at rest with AES-256-GCM, the published JWK Set, RS256 signing, and the
// in-process key source of the access-token verifier.
//
// It imports the store's Keys role and verify's KeySource contract, and
// nothing else from identity.
package keys
