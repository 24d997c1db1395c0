package store

import (
	"cmp"
	"context"
	"slices"
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

	// PendingAuditChanges reports whether a change waits for an audit
	// run (a read: the runs ask every second).
	PendingAuditChanges(ctx context.Context) (bool, error)
	// ClaimAuditChanges claims for claimant, at now, up to limit of the
	// changes that no one holds or whose claim was taken before stale,
	// and returns them in the order they were stored (two changes of one
	// user in the order they were made, whatever their Time): a change claimed
	// by an instance that died is claimed again once its claim is stale.
	// Two claimants racing get disjoint changes.
	ClaimAuditChanges(ctx context.Context, claimant string, now, stale time.Time, limit int) ([]AuditChange, error)
	// DeleteAuditChanges removes the changes with these IDs, once they
	// are in a chain; IDs that are gone already are skipped.
	DeleteAuditChanges(ctx context.Context, ids []string) error
}

// AuditChange is a change of a user made outside the running instances
// (with the gatehouse CLI), which has no audit chain of its own: the
// change's own transaction stores it (WithAuditChange), and an instance's
// audit run claims it and writes it into its chain, so that no change
// stored goes unrecorded, whichever instance runs and whenever it starts.
type AuditChange struct {
	ID       string    // unique: the records' change_id
	Time     time.Time // when the change was made (millisecond precision)
	Action   string    // what was done: add, delete, password, disable, enable, scopes, entitle, unentitle, mfa_reset, mfa_recovery_codes
	Username string
	Subject  string
	// Entitlements is the user's whole set of pairs (VENUE:feed) after
	// the change, when the action sets it (add, delete, entitle,
	// unentitle); nil otherwise.
	Entitlements []string
	// Scopes is the user's scopes after a scopes action; nil otherwise.
	Scopes []string
}

// SetsEntitlements reports whether the action sets the user's
// entitlements, so that the change says what the user holds after it.
func (c *AuditChange) SetsEntitlements() bool {
	switch c.Action {
	case "add", "delete", "entitle", "unentitle":
		return true
	}
	return false
}

// Fill completes c with what the store knows of the user after the
// change, u: the username and the subject when c has none, and, when the action sets the
// entitlements and c names none, u's set (a deleted user's change names
// an empty set: the user holds nothing after it).
func (c *AuditChange) Fill(u User) {
	if c.Username == "" {
		c.Username = u.Username
	}
	if c.Subject == "" {
		c.Subject = u.Subject
	}
	if c.Entitlements == nil && c.SetsEntitlements() {
		c.Entitlements = u.Entitlements.Strings()
		if c.Entitlements == nil {
			c.Entitlements = []string{}
		}
	}
}

// InStoredOrder returns changes sorted by order, each change's place in
// the backend's own sequence (RETURNING, which claims them, has no order),
// or nil for none: for the backends' ClaimAuditChanges.
func InStoredOrder(changes []AuditChange, order []int64) []AuditChange {
	if len(changes) == 0 {
		return nil
	}
	idx := make([]int, len(changes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(order[a], order[b]) })
	out := make([]AuditChange, len(changes))
	for i, j := range idx {
		out[i] = changes[j]
	}
	return out
}

type auditChangeKey struct{}

// WithAuditChange returns a context that makes the user-changing methods
// (CreateUser, UpdateUser, DeleteUser, UpdateEntitlements, and of the
// second factors ResetMFA and ReplaceRecoveryCodes) store c as a pending
// audit change in their own transaction, when they change something: the
// change and its record commit together or not at all. The factors'
// methods know the user by subject alone: c names the username.
// The method reads c when it writes it, after its callbacks ran (an
// UpdateEntitlements update may fill c.Entitlements), and a retried
// transaction writes it once.
func WithAuditChange(ctx context.Context, c *AuditChange) context.Context {
	return context.WithValue(ctx, auditChangeKey{}, c)
}

// AuditChangeOf returns the change WithAuditChange put in ctx, or nil.
func AuditChangeOf(ctx context.Context) *AuditChange {
	c, _ := ctx.Value(auditChangeKey{}).(*AuditChange)
	return c
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
