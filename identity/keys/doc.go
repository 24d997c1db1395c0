// Package keys owns the signing keys: their lifecycle (announce -> sign ->
// retire -> remove, shared by every instance through the store), sealing
// at rest with AES-256-GCM, the published JWK Set, signing with RS256,
// ES256 (low s) and EdDSA, one signing key per algorithm, and the
// in-process key source of the access-token verifier; and the audit keys,
// their own kind (Ed25519, kept for good), that sign the audit's
// checkpoints (AuditKeys, an audit.Signer without importing audit).
//
// It imports the store's Keys role and verify's KeySource contract, and
// nothing else from identity.
package keys
