package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema changes in the order they are applied: version
// i+1 is migrations[i]. Append new ones at the end; never edit or reorder one
// that has shipped, since databases in the field have already applied it.
// Times are INTEGER Unix milliseconds, NULL for "not set"; lists are TEXT
// holding a JSON array.
var migrations = [][]string{
	// 1: secrets, signing keys, users, refresh-token families and their
	// tokens, access tokens issued from families, revocations.
	{
		`CREATE TABLE secrets (
			name  TEXT NOT NULL PRIMARY KEY,
			value BLOB NOT NULL
		) STRICT`,
		`CREATE TABLE signing_keys (
			id         TEXT NOT NULL PRIMARY KEY,
			algorithm  TEXT NOT NULL,
			private    BLOB NOT NULL,
			created_at INTEGER NOT NULL,
			sign_from  INTEGER,
			retire_at  INTEGER,
			remove_at  INTEGER
		) STRICT`,
		`CREATE TABLE users (
			username       TEXT NOT NULL PRIMARY KEY,
			subject        TEXT NOT NULL UNIQUE,
			password_hash  TEXT NOT NULL,
			display_name   TEXT NOT NULL,
			email          TEXT NOT NULL,
			email_verified INTEGER NOT NULL,
			scopes         TEXT NOT NULL,
			roles          TEXT NOT NULL,
			disabled       INTEGER NOT NULL,
			created_at     INTEGER,
			updated_at     INTEGER
		) STRICT`,
		`CREATE TABLE refresh_families (
			id         TEXT NOT NULL PRIMARY KEY,
			client_id  TEXT NOT NULL,
			subject    TEXT NOT NULL,
			scopes     TEXT NOT NULL,
			auth_time  INTEGER,
			created_at INTEGER,
			expires_at INTEGER NOT NULL,
			revoked_at INTEGER
		) STRICT`,
		`CREATE INDEX refresh_families_expires_at ON refresh_families (expires_at)`,
		`CREATE TABLE refresh_tokens (
			hash       BLOB NOT NULL PRIMARY KEY,
			family_id  TEXT NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
			parent     BLOB,
			issued_at  INTEGER,
			expires_at INTEGER NOT NULL,
			rotated_at INTEGER,
			successor  BLOB
		) STRICT`,
		`CREATE INDEX refresh_tokens_family_id ON refresh_tokens (family_id)`,
		`CREATE TABLE family_access_tokens (
			jti        TEXT NOT NULL PRIMARY KEY,
			family_id  TEXT NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
			expires_at INTEGER NOT NULL
		) STRICT`,
		`CREATE INDEX family_access_tokens_family_id ON family_access_tokens (family_id, expires_at)`,
		`CREATE INDEX family_access_tokens_expires_at ON family_access_tokens (expires_at)`,
		`CREATE TABLE revocations (
			jti        TEXT NOT NULL PRIMARY KEY,
			expires_at INTEGER NOT NULL,
			revoked_at INTEGER NOT NULL
		) STRICT`,
		`CREATE INDEX revocations_expires_at ON revocations (expires_at)`,
	},
	// 2: failure counters (brute-force defence).
	{
		`CREATE TABLE failure_counters (
			counter_key  TEXT NOT NULL PRIMARY KEY,
			failures     INTEGER NOT NULL,
			window_start INTEGER NOT NULL,
			locked_until INTEGER
		) STRICT`,
		`CREATE INDEX failure_counters_window_start ON failure_counters (window_start)`,
	},
	// 3: constant-size refresh families (the current and previous
	// generations' hashes in the family row; families of version 2 stay
	// legacy, generation 0, until their next rotation converts them),
	// revocations of whole families and of subjects, and an index for
	// incremental revocation reads.
	{
		`ALTER TABLE refresh_families ADD COLUMN salt BLOB`,
		`ALTER TABLE refresh_families ADD COLUMN generation INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE refresh_families ADD COLUMN current_hash BLOB`,
		`ALTER TABLE refresh_families ADD COLUMN current_expires_at INTEGER`,
		`ALTER TABLE refresh_families ADD COLUMN previous_hash BLOB`,
		`ALTER TABLE refresh_families ADD COLUMN rotated_at INTEGER`,
		`CREATE INDEX refresh_families_subject ON refresh_families (subject)`,
		`CREATE TABLE family_revocations (
			family_id  TEXT NOT NULL PRIMARY KEY,
			expires_at INTEGER NOT NULL,
			revoked_at INTEGER NOT NULL
		) STRICT`,
		`CREATE INDEX family_revocations_expires_at ON family_revocations (expires_at)`,
		`CREATE INDEX family_revocations_revoked_at ON family_revocations (revoked_at)`,
		`CREATE TABLE subject_revocations (
			subject    TEXT NOT NULL PRIMARY KEY,
			not_before INTEGER NOT NULL,
			expires_at INTEGER NOT NULL,
			revoked_at INTEGER NOT NULL
		) STRICT`,
		`CREATE INDEX subject_revocations_expires_at ON subject_revocations (expires_at)`,
		`CREATE INDEX subject_revocations_revoked_at ON subject_revocations (revoked_at)`,
		`CREATE INDEX revocations_revoked_at ON revocations (revoked_at)`,
	},
	// 4: the browser flows (store.BrowserStore): login sessions,
	// authorization codes and consents.
	{
		`CREATE TABLE sessions (
			hash                BLOB NOT NULL PRIMARY KEY,
			id                  TEXT NOT NULL UNIQUE,
			subject             TEXT NOT NULL,
			auth_time           INTEGER,
			created_at          INTEGER,
			last_seen           INTEGER,
			expires_at          INTEGER NOT NULL,
			absolute_expires_at INTEGER,
			clients             TEXT NOT NULL
		) STRICT`,
		`CREATE INDEX sessions_expires_at ON sessions (expires_at)`,
		`CREATE INDEX sessions_subject ON sessions (subject)`,
		`CREATE TABLE auth_codes (
			hash                    BLOB NOT NULL PRIMARY KEY,
			client_id               TEXT NOT NULL,
			redirect_uri            TEXT NOT NULL,
			subject                 TEXT NOT NULL,
			scopes                  TEXT NOT NULL,
			nonce                   TEXT NOT NULL,
			session_id              TEXT NOT NULL,
			auth_time               INTEGER,
			code_challenge          TEXT NOT NULL,
			code_challenge_method   TEXT NOT NULL,
			created_at              INTEGER,
			expires_at              INTEGER NOT NULL,
			retain_until            INTEGER NOT NULL,
			used_at                 INTEGER,
			replayed_at             INTEGER,
			family_id               TEXT NOT NULL,
			access_token_id         TEXT NOT NULL,
			access_token_expires_at INTEGER
		) STRICT`,
		`CREATE INDEX auth_codes_retain_until ON auth_codes (retain_until)`,
		`CREATE TABLE consents (
			subject    TEXT NOT NULL,
			client_id  TEXT NOT NULL,
			scopes     TEXT NOT NULL,
			created_at INTEGER,
			expires_at INTEGER,
			PRIMARY KEY (subject, client_id)
		) STRICT`,
		`CREATE INDEX consents_expires_at ON consents (expires_at)`,
	},
	// 5: device authorizations (store.DeviceCodes, RFC 8628).
	{
		`CREATE TABLE device_codes (
			hash                    BLOB NOT NULL PRIMARY KEY,
			user_code_hash          BLOB NOT NULL UNIQUE,
			client_id               TEXT NOT NULL,
			scopes                  TEXT NOT NULL,
			created_at              INTEGER,
			expires_at              INTEGER NOT NULL,
			retain_until            INTEGER NOT NULL,
			interval_ms             INTEGER NOT NULL,
			last_polled_at          INTEGER,
			state                   TEXT NOT NULL,
			decided_at              INTEGER,
			subject                 TEXT NOT NULL,
			auth_time               INTEGER,
			session_id              TEXT NOT NULL,
			used_at                 INTEGER,
			family_id               TEXT NOT NULL,
			access_token_id         TEXT NOT NULL,
			access_token_expires_at INTEGER
		) STRICT`,
		`CREATE INDEX device_codes_retain_until ON device_codes (retain_until)`,
	},
	// 6: logout (identity/logout): the login session a refresh family was
	// granted through, so that a logout can revoke that session's
	// families for clients that ask for it.
	{
		`ALTER TABLE refresh_families ADD COLUMN session_id TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX refresh_families_session_id ON refresh_families (session_id) WHERE session_id <> ''`,
	},
	// 7: a user's families with a client, newest first, for the bound on
	// them (RefreshPolicy.MaxPerUser); it serves the lookups by subject
	// too, so the index on subject alone goes.
	{
		`CREATE INDEX refresh_families_subject_client ON refresh_families (subject, client_id, created_at)`,
		`DROP INDEX refresh_families_subject`,
	},
	// 8: the subjects of deleted users (store.Users.DeleteUser), never
	// given to a user again.
	{
		`CREATE TABLE deleted_subjects (
			subject    TEXT NOT NULL PRIMARY KEY,
			deleted_at INTEGER NOT NULL
		) STRICT`,
	},
	// 9: market-data entitlements (docs/entitlements.md): the pairs a
	// user holds, a refresh family and an authorization code were
	// granted (a JSON array of "VENUE:feed"), and each subject's last
	// entitlement change, a revocation that carries the new set.
	{
		`ALTER TABLE users ADD COLUMN entitlements TEXT NOT NULL DEFAULT '[]'`,
		`ALTER TABLE refresh_families ADD COLUMN entitlements TEXT NOT NULL DEFAULT '[]'`,
		`ALTER TABLE auth_codes ADD COLUMN entitlements TEXT NOT NULL DEFAULT '[]'`,
		`CREATE TABLE entitlement_revocations (
			subject      TEXT NOT NULL PRIMARY KEY,
			not_before   INTEGER NOT NULL,
			entitlements TEXT NOT NULL,
			expires_at   INTEGER NOT NULL,
			revoked_at   INTEGER NOT NULL
		) STRICT`,
		`CREATE INDEX entitlement_revocations_expires_at ON entitlement_revocations (expires_at)`,
		`CREATE INDEX entitlement_revocations_revoked_at ON entitlement_revocations (revoked_at)`,
	},
	// 10: the audit (docs/audit.md): the keys that sign checkpoints,
	// apart from the signing keys and kept for good, and the
	// checkpoints, in the order they were stored (id).
	{
		`CREATE TABLE audit_keys (
			id         TEXT NOT NULL PRIMARY KEY,
			algorithm  TEXT NOT NULL,
			public     BLOB NOT NULL,
			private    BLOB NOT NULL,
			created_at INTEGER NOT NULL,
			sign_from  INTEGER,
			retire_at  INTEGER
		) STRICT`,
		`CREATE TABLE audit_checkpoints (
			id          INTEGER PRIMARY KEY,
			instance    TEXT NOT NULL,
			run         TEXT NOT NULL,
			seq         INTEGER NOT NULL,
			hash        BLOB NOT NULL,
			at          INTEGER NOT NULL,
			key_id      TEXT NOT NULL,
			final       INTEGER NOT NULL,
			jws         TEXT NOT NULL,
			UNIQUE (instance, run, seq)
		) STRICT`,
		`CREATE INDEX audit_checkpoints_instance ON audit_checkpoints (instance, id)`,
	},
	// 11: the market-data pairs a device authorization request asked
	// for (RFC 9396 authorization_details): a JSON array of "VENUE:feed",
	// NULL when it asked for none.
	{
		`ALTER TABLE device_codes ADD COLUMN asked_entitlements TEXT`,
	},
	// 12: changes of users made with the CLI, waiting for an audit run
	// to write them into its chain (store.AuditChange), in the order of
	// their rowid; entitlements and scopes are JSON arrays, NULL when the
	// action does not set them.
	{
		`CREATE TABLE audit_changes (
			id           TEXT NOT NULL PRIMARY KEY,
			made_at      INTEGER NOT NULL,
			action       TEXT NOT NULL,
			username     TEXT NOT NULL,
			subject      TEXT NOT NULL,
			entitlements TEXT,
			scopes       TEXT,
			claimed_by   TEXT,
			claimed_at   INTEGER
		) STRICT`,
	},
	// 13: the users' second factors (store.MFA), by subject: a TOTP
	// factor each (its sealed secret and the step it last accepted) and
	// the hashes of the unspent recovery codes.
	{
		`CREATE TABLE mfa_totp (
			subject    TEXT NOT NULL PRIMARY KEY,
			secret     BLOB NOT NULL,
			last_step  INTEGER NOT NULL,
			created_at INTEGER NOT NULL
		) STRICT`,
		`CREATE TABLE mfa_recovery (
			subject    TEXT NOT NULL,
			hash       BLOB NOT NULL,
			created_at INTEGER NOT NULL,
			PRIMARY KEY (subject, hash)
		) STRICT, WITHOUT ROWID`,
	},
	// 14: the authentication methods (RFC 8176) of sessions, and of the
	// codes, device authorizations and refresh families they issue, as
	// JSON arrays: a scope that needs a second factor follows them.
	{
		`ALTER TABLE sessions ADD COLUMN amr TEXT NOT NULL DEFAULT '[]'`,
		// Every session before this version began with a password.
		`UPDATE sessions SET amr = '["pwd"]'`,
		`ALTER TABLE auth_codes ADD COLUMN amr TEXT NOT NULL DEFAULT '[]'`,
		`ALTER TABLE device_codes ADD COLUMN amr TEXT NOT NULL DEFAULT '[]'`,
		`ALTER TABLE refresh_families ADD COLUMN amr TEXT NOT NULL DEFAULT '[]'`,
	},
	// 15: the users' passkeys (store.Passkeys), by credential id, with
	// their subject; transports are a JSON array.
	{
		`CREATE TABLE passkeys (
			id              BLOB NOT NULL PRIMARY KEY,
			subject         TEXT NOT NULL,
			name            TEXT NOT NULL,
			public_key      BLOB NOT NULL,
			sign_count      INTEGER NOT NULL,
			aaguid          BLOB,
			transports      TEXT NOT NULL,
			backup_eligible INTEGER NOT NULL,
			backup_state    INTEGER NOT NULL,
			created_at      INTEGER NOT NULL,
			last_used_at    INTEGER
		) STRICT`,
		`CREATE INDEX passkeys_subject ON passkeys (subject, created_at)`,
	},
}

// migrate brings the schema of the database behind w up to the last
// migration. Each migration runs in its own write transaction that first
// reads the current version, so two processes opening the same new file at
// once apply every migration exactly once.
func migrate(ctx context.Context, w *sql.DB) error {
	if _, err := w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("creating schema_version: %w", err)
	}
	for i, stmts := range migrations {
		version := i + 1
		if err := applyMigration(ctx, w, version, stmts); err != nil {
			return fmt.Errorf("migrating schema to version %d: %w", version, err)
		}
	}
	return nil
}

// applyMigration runs stmts as schema version version, unless the database
// is at that version or later.
func applyMigration(ctx context.Context, w *sql.DB, version int, stmts []string) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit

	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	if current > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this program's %d", current, len(migrations))
	}
	if current >= version {
		return nil
	}
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	// applied_at is bookkeeping for an operator, from SQLite's own clock.
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied_at)
		VALUES (?, CAST(unixepoch('subsec') * 1000 AS INTEGER))`, version); err != nil {
		return fmt.Errorf("recording schema version: %w", err)
	}
	return tx.Commit()
}
