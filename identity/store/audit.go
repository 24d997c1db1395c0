package store

import (
	"context"
	"time"
)

// Audit is what the tamper-evident audit keeps in the store: its keys,
// which sign checkpoints, and the checkpoints themselves. Both are kept
// for good: a key or a checkpoint removed could no longer prove an old
// log, so there is no delete.
type Audit interface {
	// AddAuditKey stores a new audit key. ErrAlreadyExists if its ID is
	// taken (by an audit key; signing keys are apart).
	AddAuditKey(ctx context.Context, k AuditKey) error
	// AuditKeys lists every audit key ever stored, oldest first (by
	// Created, then ID).
	AuditKeys(ctx context.Context) ([]AuditKey, error)
	// RetireAuditKey sets the time the audit key id stops signing (its
	// material and public key never change). ErrNotFound if there is
	// none.
	RetireAuditKey(ctx context.Context, id string, retireAt time.Time) error

	// AddAuditCheckpoint stores a checkpoint. ErrAlreadyExists if its
	// instance, run and seq are taken.
	AddAuditCheckpoint(ctx context.Context, c AuditCheckpoint) error
	// LastAuditCheckpoint returns the checkpoint of instance stored last:
	// the previous run's last one, when a run starts. ErrNotFound if
	// there is none.
	LastAuditCheckpoint(ctx context.Context, instance string) (AuditCheckpoint, error)
	// AuditCheckpoints lists every stored checkpoint in the order they
	// were stored.
	AuditCheckpoints(ctx context.Context) ([]AuditCheckpoint, error)
}

// AuditKey is a key that signs audit checkpoints: its own kind, apart
// from the token-signing keys, with its own schedule. Its public key is
// stored in the clear, so that a log can be verified without the key
// encryption key.
type AuditKey struct {
	ID        string    // the checkpoint JWS "kid"
	Algorithm string    // e.g. "EdDSA"
	Public    []byte    // PKIX DER
	Private   []byte    // PKCS#8 DER, possibly sealed by the caller
	Created   time.Time // when the key was generated
	SignFrom  time.Time // the key signs from this time on
	RetireAt  time.Time // the key stops signing at this time (zero: not scheduled)
}

// AuditCheckpoint is a signed checkpoint of an audit chain, as the writer
// wrote it to the log.
type AuditCheckpoint struct {
	Instance string
	Run      string
	Seq      uint64 // at most 2^63-1
	Hash     []byte // 32 bytes: the checkpoint record's hash
	Time     time.Time
	KeyID    string // the audit key that signed it
	Final    bool   // the run closed with it
	JWS      string // the compact JWS
}
