package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/keys"
)

// AuditLoggerName is the name of the logger the audit chain is written to
// (docs/audit.md): one JSON record per line. Its log must encode JSON
// with Caddy's default keys and must not sample; Provision refuses any
// other.
const AuditLoggerName = "gatehouse.audit.chain"

// The values of Audit.OnFailure.
const (
	AuditContinue = "continue"
	AuditRefuse   = "refuse"
)

// Audit turns on the tamper-evident audit (docs/audit.md): records chained
// by hash, written to the log of AuditLoggerName, with checkpoints signed
// by an audit key of the store. Present (even empty, `audit` in the
// Caddyfile), the app writes the chain; absent, no audit.
type Audit struct {
	// CheckpointInterval is how long records may stay after the last
	// signed checkpoint while records come in: a checkpoint is signed and
	// written to the log and the store at that interval, and one at
	// shutdown. Default 1m. A longer interval leaves more records that
	// only the chain protects (`audit verify` lists them as unprotected).
	CheckpointInterval caddy.Duration `json:"checkpoint_interval,omitempty"`

	// OnFailure is what happens while the audit log cannot be written:
	// "continue" (the default) goes on unaudited, the failures counted
	// (gatehouse_audit_write_failures_total) and logged; "refuse" makes
	// the gateway and the identity server refuse new sessions, logins and
	// tokens until a record is written again.
	OnFailure string `json:"on_failure,omitempty"`

	// Instance names this instance in every record: one chain of runs per
	// instance. Default: the Caddy instance id kept in Caddy's data
	// directory (instance.uuid). Set it when several instances share a
	// data directory; never give two running instances the same name.
	Instance string `json:"instance,omitempty"`

	// KeyPeriod is how long an audit key signs checkpoints before a new
	// one takes over (audit keys stay in the store for good). Default
	// 2160h (90 days); negative (Caddyfile: "off"): no automatic rotation.
	KeyPeriod caddy.Duration `json:"key_period,omitempty"`

	// FlushDelay is how long a record may wait before its write: the
	// records of a delay share one write to the log (a query service
	// writes one record per query, and the write is most of a record's
	// cost), and a request does not wait for the write. A crash (of the
	// process, not a clean stop) loses the records not yet written: a cut
	// tail, which verify reports as such. Default 2ms; negative
	// (Caddyfile: "off"): each record is written before the request that
	// made it goes on, concurrent ones sharing a write.
	FlushDelay caddy.Duration `json:"flush_delay,omitempty"`

	// EncryptionKeyEnv and EncryptionKeyFile name the key encryption key
	// that seals audit keys at rest, in the forms of signing_keys'.
	// Default: signing_keys' own (none: audit keys stored in the clear).
	// An app without an identity server names it here.
	EncryptionKeyEnv  string `json:"encryption_key_env,omitempty"`
	EncryptionKeyFile string `json:"encryption_key_file,omitempty"`
}

// checkAudit checks the audit block; nil (no audit) is fine.
func (a *App) checkAudit() error {
	au := a.Audit
	if au == nil {
		return nil
	}
	if au.CheckpointInterval < 0 {
		return fmt.Errorf("audit: checkpoint_interval must be positive, got %v", time.Duration(au.CheckpointInterval))
	}
	switch au.OnFailure {
	case "", AuditContinue, AuditRefuse:
	default:
		return fmt.Errorf("audit: on_failure %q: %q or %q", au.OnFailure, AuditContinue, AuditRefuse)
	}
	_, err := a.auditKeyPolicy()
	return err
}

// auditKeyPolicy is the audit keys' policy: the audit block's period and
// key encryption key, else signing_keys' key encryption key.
func (a *App) auditKeyPolicy() (keys.AuditPolicy, error) {
	au := a.Audit
	kek := &SigningKeys{EncryptionKeyEnv: au.EncryptionKeyEnv, EncryptionKeyFile: au.EncryptionKeyFile}
	if kek.EncryptionKeyEnv == "" && kek.EncryptionKeyFile == "" && a.SigningKeys != nil {
		kek = a.SigningKeys
	}
	pol, err := kek.keyPolicy()
	if err != nil {
		return keys.AuditPolicy{}, fmt.Errorf("audit: %w", err)
	}
	ap := keys.AuditPolicy{Period: time.Duration(au.KeyPeriod), CheckInterval: pol.CheckInterval, EncryptionKey: pol.EncryptionKey}
	return ap, ap.Validate()
}

// interval is the checkpoint interval, default applied.
func (au *Audit) interval() time.Duration {
	if au.CheckpointInterval <= 0 {
		return audit.DefaultCheckpointInterval
	}
	return time.Duration(au.CheckpointInterval)
}

// DefaultAuditFlushDelay is the default of Audit.FlushDelay.
const DefaultAuditFlushDelay = 2 * time.Millisecond

// flushDelay is the writer's FlushDelay, default applied (0: none).
func (au *Audit) flushDelay() time.Duration {
	switch {
	case au.FlushDelay < 0:
		return 0
	case au.FlushDelay == 0:
		return DefaultAuditFlushDelay
	}
	return time.Duration(au.FlushDelay)
}

// instance is the instance name, default applied.
func (au *Audit) instance() (string, error) {
	if au.Instance != "" {
		return au.Instance, nil
	}
	id, err := caddy.InstanceID()
	if err != nil {
		return "", fmt.Errorf("audit: reading the instance id from Caddy's data directory: %w", err)
	}
	return id.String(), nil
}
