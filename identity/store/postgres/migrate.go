package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// migrations are the schema changes in the order they are applied: version
// i+1 is migrations[i]. Append new ones at the end; never edit or reorder
// one that has shipped, since databases in the field have already applied
// it. Times are timestamptz (NULL for "not set"), lists text[], keys and
// names text COLLATE "C" (byte order, as the SQLite backend compares).
//
// Version 1 is the whole schema of the SQLite backend's version 3: the
// constant-size refresh families, and the tables of the legacy scheme
// (a row per refresh token, a row per access token of a family) so that
// families copied from an older database keep working until they convert.
var migrations = [][]string{
	// 1: secrets, signing keys, users, refresh-token families and their
	// legacy tokens and access tokens, revocations of the three kinds,
	// failure counters.
	{
		`CREATE TABLE secrets (
			name  text COLLATE "C" NOT NULL PRIMARY KEY,
			value bytea NOT NULL
		)`,
		`CREATE TABLE signing_keys (
			id         text COLLATE "C" NOT NULL PRIMARY KEY,
			algorithm  text NOT NULL,
			private    bytea NOT NULL,
			created_at timestamptz NOT NULL,
			sign_from  timestamptz,
			retire_at  timestamptz,
			remove_at  timestamptz
		)`,
		`CREATE TABLE users (
			username       text COLLATE "C" NOT NULL PRIMARY KEY,
			subject        text COLLATE "C" NOT NULL UNIQUE,
			password_hash  text NOT NULL,
			display_name   text NOT NULL,
			email          text NOT NULL,
			email_verified boolean NOT NULL,
			scopes         text[] NOT NULL,
			roles          text[] NOT NULL,
			disabled       boolean NOT NULL,
			created_at     timestamptz,
			updated_at     timestamptz
		)`,
		`CREATE TABLE refresh_families (
			id                 text COLLATE "C" NOT NULL PRIMARY KEY,
			client_id          text COLLATE "C" NOT NULL,
			subject            text COLLATE "C" NOT NULL,
			scopes             text[] NOT NULL,
			auth_time          timestamptz,
			created_at         timestamptz,
			expires_at         timestamptz NOT NULL,
			revoked_at         timestamptz,
			salt               bytea,
			generation         integer NOT NULL DEFAULT 0,
			current_hash       bytea,
			current_expires_at timestamptz,
			previous_hash      bytea,
			rotated_at         timestamptz
		)`,
		`CREATE INDEX refresh_families_expires_at ON refresh_families (expires_at)`,
		`CREATE INDEX refresh_families_subject ON refresh_families (subject)`,
		`CREATE TABLE refresh_tokens (
			hash       bytea NOT NULL PRIMARY KEY,
			family_id  text COLLATE "C" NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
			parent     bytea,
			issued_at  timestamptz,
			expires_at timestamptz NOT NULL,
			rotated_at timestamptz,
			successor  bytea
		)`,
		`CREATE INDEX refresh_tokens_family_id ON refresh_tokens (family_id)`,
		`CREATE TABLE family_access_tokens (
			jti        text COLLATE "C" NOT NULL PRIMARY KEY,
			family_id  text COLLATE "C" NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
			expires_at timestamptz NOT NULL
		)`,
		`CREATE INDEX family_access_tokens_family_id ON family_access_tokens (family_id, expires_at)`,
		`CREATE INDEX family_access_tokens_expires_at ON family_access_tokens (expires_at)`,
		`CREATE TABLE revocations (
			jti        text COLLATE "C" NOT NULL PRIMARY KEY,
			expires_at timestamptz NOT NULL,
			revoked_at timestamptz NOT NULL
		)`,
		`CREATE INDEX revocations_expires_at ON revocations (expires_at)`,
		`CREATE INDEX revocations_revoked_at ON revocations (revoked_at)`,
		`CREATE TABLE family_revocations (
			family_id  text COLLATE "C" NOT NULL PRIMARY KEY,
			expires_at timestamptz NOT NULL,
			revoked_at timestamptz NOT NULL
		)`,
		`CREATE INDEX family_revocations_expires_at ON family_revocations (expires_at)`,
		`CREATE INDEX family_revocations_revoked_at ON family_revocations (revoked_at)`,
		`CREATE TABLE subject_revocations (
			subject    text COLLATE "C" NOT NULL PRIMARY KEY,
			not_before timestamptz NOT NULL,
			expires_at timestamptz NOT NULL,
			revoked_at timestamptz NOT NULL
		)`,
		`CREATE INDEX subject_revocations_expires_at ON subject_revocations (expires_at)`,
		`CREATE INDEX subject_revocations_revoked_at ON subject_revocations (revoked_at)`,
		`CREATE TABLE failure_counters (
			counter_key  text COLLATE "C" NOT NULL PRIMARY KEY,
			failures     integer NOT NULL,
			window_start timestamptz NOT NULL,
			locked_until timestamptz
		)`,
		`CREATE INDEX failure_counters_window_start ON failure_counters (window_start)`,
	},
	// 2: failure counters keyed by bytes, not text: the password
	// checker's pair keys hold a NUL (and a user name from a form may not
	// be UTF-8), which a text column refuses. The keys stored so far are
	// UTF-8 text, whose bytes they become.
	{
		`ALTER TABLE failure_counters ALTER COLUMN counter_key TYPE bytea USING convert_to(counter_key, 'UTF8')`,
	},
	// 3: the browser flows (store.BrowserStore): login sessions,
	// authorization codes and consents, as the SQLite backend's version 4.
	// Sessions and codes are keyed by the SHA-256 of their secret (bytea).
	{
		`CREATE TABLE sessions (
			hash                bytea NOT NULL PRIMARY KEY,
			id                  text COLLATE "C" NOT NULL UNIQUE,
			subject             text COLLATE "C" NOT NULL,
			auth_time           timestamptz,
			created_at          timestamptz,
			last_seen           timestamptz,
			expires_at          timestamptz NOT NULL,
			absolute_expires_at timestamptz,
			clients             text[] NOT NULL
		)`,
		`CREATE INDEX sessions_expires_at ON sessions (expires_at)`,
		`CREATE INDEX sessions_subject ON sessions (subject)`,
		`CREATE TABLE auth_codes (
			hash                    bytea NOT NULL PRIMARY KEY,
			client_id               text COLLATE "C" NOT NULL,
			redirect_uri            text NOT NULL,
			subject                 text COLLATE "C" NOT NULL,
			scopes                  text[] NOT NULL,
			nonce                   text NOT NULL,
			session_id              text COLLATE "C" NOT NULL,
			auth_time               timestamptz,
			code_challenge          text NOT NULL,
			code_challenge_method   text NOT NULL,
			created_at              timestamptz,
			expires_at              timestamptz NOT NULL,
			retain_until            timestamptz NOT NULL,
			used_at                 timestamptz,
			replayed_at             timestamptz,
			family_id               text COLLATE "C" NOT NULL,
			access_token_id         text COLLATE "C" NOT NULL,
			access_token_expires_at timestamptz
		)`,
		`CREATE INDEX auth_codes_retain_until ON auth_codes (retain_until)`,
		`CREATE TABLE consents (
			subject    text COLLATE "C" NOT NULL,
			client_id  text COLLATE "C" NOT NULL,
			scopes     text[] NOT NULL,
			created_at timestamptz,
			expires_at timestamptz,
			PRIMARY KEY (subject, client_id)
		)`,
		`CREATE INDEX consents_expires_at ON consents (expires_at)`,
	},
	// 4: device authorizations (store.DeviceCodes, RFC 8628), as the
	// SQLite backend's version 5. The polling interval is in milliseconds.
	{
		`CREATE TABLE device_codes (
			hash                    bytea NOT NULL PRIMARY KEY,
			user_code_hash          bytea NOT NULL UNIQUE,
			client_id               text COLLATE "C" NOT NULL,
			scopes                  text[] NOT NULL,
			created_at              timestamptz,
			expires_at              timestamptz NOT NULL,
			retain_until            timestamptz NOT NULL,
			interval_ms             bigint NOT NULL,
			last_polled_at          timestamptz,
			state                   text COLLATE "C" NOT NULL,
			decided_at              timestamptz,
			subject                 text COLLATE "C" NOT NULL,
			auth_time               timestamptz,
			session_id              text COLLATE "C" NOT NULL,
			used_at                 timestamptz,
			family_id               text COLLATE "C" NOT NULL,
			access_token_id         text COLLATE "C" NOT NULL,
			access_token_expires_at timestamptz
		)`,
		`CREATE INDEX device_codes_retain_until ON device_codes (retain_until)`,
	},
	// 5: logout (identity/logout): the login session a refresh family was
	// granted through, as the SQLite backend's version 6.
	{
		`ALTER TABLE refresh_families ADD COLUMN session_id text COLLATE "C" NOT NULL DEFAULT ''`,
		`CREATE INDEX refresh_families_session_id ON refresh_families (session_id) WHERE session_id <> ''`,
	},
	// 6: the bound on a user's families with a client, as the SQLite
	// backend's version 7.
	{
		`CREATE INDEX refresh_families_subject_client ON refresh_families (subject, client_id, created_at)`,
		`DROP INDEX refresh_families_subject`,
	},
	// 7: the subjects of deleted users, as the SQLite backend's version 8.
	{
		`CREATE TABLE deleted_subjects (
			subject    text COLLATE "C" PRIMARY KEY,
			deleted_at timestamptz NOT NULL
		)`,
	},
	// 8: market-data entitlements, as the SQLite backend's version 9 (the
	// pairs as text[] of "VENUE:feed").
	{
		`ALTER TABLE users ADD COLUMN entitlements text[] NOT NULL DEFAULT '{}'`,
		`ALTER TABLE refresh_families ADD COLUMN entitlements text[] NOT NULL DEFAULT '{}'`,
		`ALTER TABLE auth_codes ADD COLUMN entitlements text[] NOT NULL DEFAULT '{}'`,
		`CREATE TABLE entitlement_revocations (
			subject      text COLLATE "C" NOT NULL PRIMARY KEY,
			not_before   timestamptz NOT NULL,
			entitlements text[] NOT NULL,
			expires_at   timestamptz NOT NULL,
			revoked_at   timestamptz NOT NULL
		)`,
		`CREATE INDEX entitlement_revocations_expires_at ON entitlement_revocations (expires_at)`,
		`CREATE INDEX entitlement_revocations_revoked_at ON entitlement_revocations (revoked_at)`,
	},
	// 9: the audit, as the SQLite backend's version 10: the keys that
	// sign checkpoints, kept for good, and the checkpoints in the order
	// they were stored (id).
	{
		`CREATE TABLE audit_keys (
			id         text COLLATE "C" NOT NULL PRIMARY KEY,
			algorithm  text NOT NULL,
			public     bytea NOT NULL,
			private    bytea NOT NULL,
			created_at timestamptz NOT NULL,
			sign_from  timestamptz,
			retire_at  timestamptz
		)`,
		`CREATE TABLE audit_checkpoints (
			id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			instance text COLLATE "C" NOT NULL,
			run      text COLLATE "C" NOT NULL,
			seq      bigint NOT NULL,
			hash     bytea NOT NULL,
			at       timestamptz NOT NULL,
			key_id   text COLLATE "C" NOT NULL,
			final    boolean NOT NULL,
			jws      text NOT NULL,
			UNIQUE (instance, run, seq)
		)`,
		`CREATE INDEX audit_checkpoints_instance ON audit_checkpoints (instance, id)`,
	},
	// 10: the pairs a device authorization request asked for, as the
	// SQLite backend's version 11 (NULL when it asked for none).
	{
		`ALTER TABLE device_codes ADD COLUMN asked_entitlements text[]`,
	},
	// 11: changes of users made with the CLI, waiting for an audit run
	// (store.AuditChange), as the SQLite backend's version 12, in the
	// order of seq (two changes of one user are serialized by the user's
	// row lock, so the later one gets the higher seq).
	{
		`CREATE TABLE audit_changes (
			seq          bigint GENERATED ALWAYS AS IDENTITY,
			id           text COLLATE "C" NOT NULL PRIMARY KEY,
			made_at      timestamptz NOT NULL,
			action       text NOT NULL,
			username     text NOT NULL,
			subject      text NOT NULL,
			entitlements text[],
			scopes       text[],
			claimed_by   text,
			claimed_at   timestamptz
		)`,
		`CREATE INDEX audit_changes_seq ON audit_changes (seq)`,
	},
	// 12: the users' second factors (store.MFA), as the SQLite backend's
	// version 13.
	{
		`CREATE TABLE mfa_totp (
			subject    text COLLATE "C" NOT NULL PRIMARY KEY,
			secret     bytea NOT NULL,
			last_step  bigint NOT NULL,
			created_at timestamptz NOT NULL
		)`,
		`CREATE TABLE mfa_recovery (
			subject    text COLLATE "C" NOT NULL,
			hash       bytea NOT NULL,
			created_at timestamptz NOT NULL,
			PRIMARY KEY (subject, hash)
		)`,
	},
	// 13: the authentication methods (RFC 8176) of sessions, codes,
	// device authorizations and refresh families, as the SQLite backend's
	// version 14.
	{
		`ALTER TABLE sessions ADD COLUMN amr text[] NOT NULL DEFAULT '{}'`,
		// Every session before this version began with a password.
		`UPDATE sessions SET amr = '{pwd}'`,
		`ALTER TABLE auth_codes ADD COLUMN amr text[] NOT NULL DEFAULT '{}'`,
		`ALTER TABLE device_codes ADD COLUMN amr text[] NOT NULL DEFAULT '{}'`,
		`ALTER TABLE refresh_families ADD COLUMN amr text[] NOT NULL DEFAULT '{}'`,
	},
	// 14: the users' passkeys (store.Passkeys), as the SQLite backend's
	// version 15.
	{
		`CREATE TABLE passkeys (
			id              bytea NOT NULL PRIMARY KEY,
			subject         text COLLATE "C" NOT NULL,
			name            text NOT NULL,
			public_key      bytea NOT NULL,
			sign_count      bigint NOT NULL,
			aaguid          bytea,
			transports      text[] NOT NULL,
			backup_eligible boolean NOT NULL,
			backup_state    boolean NOT NULL,
			created_at      timestamptz NOT NULL,
			last_used_at    timestamptz
		)`,
		`CREATE INDEX passkeys_subject ON passkeys (subject, created_at)`,
	},
}

// migrateLockID is the key of the advisory lock that each migration's
// transaction holds: "gatehous" in ASCII. Advisory locks are per database,
// so stores of other databases on the same server do not wait for it.
const migrateLockID int64 = 0x67617465686f7573

// migrate brings the schema up to the last of migrations and returns the
// version it is at. Each migration runs in a transaction of its own that
// first takes the advisory lock migrateLockID (released when the
// transaction ends), then reads the current version: of several instances
// starting at once, one migrates while the others wait for the lock, and
// then find the migration applied and skip it. schema_migrations itself is
// created under the lock too, since two CREATE TABLE IF NOT EXISTS racing
// each other can fail.
func (s *Store) migrate(ctx context.Context, migrations [][]string) (int, error) {
	version := 0
	for i, stmts := range migrations {
		v, err := s.applyMigration(ctx, migrations, i+1, stmts)
		if err != nil {
			return 0, fmt.Errorf("migrating schema to version %d: %w", i+1, err)
		}
		version = v
	}
	return version, nil
}

// applyMigration runs stmts as schema version version, unless the database
// is at that version or later, and returns the version the database is at
// after it.
func (s *Store) applyMigration(ctx context.Context, migrations [][]string, version int, stmts []string) (int, error) {
	var after, before int
	err := pgx.BeginTxFunc(ctx, s.pool, txOptions, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, migrateLockID).Scan(&locked); err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
		if !locked {
			s.log.Info("waiting for another instance to migrate the postgres store schema",
				zap.Int("version", version))
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockID); err != nil {
				return fmt.Errorf("waiting for the migration lock: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer NOT NULL PRIMARY KEY,
			applied_at timestamptz NOT NULL
		)`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("reading schema version: %w", err)
		}
		if current > len(migrations) {
			return fmt.Errorf("database schema version %d is newer than this program's %d", current, len(migrations))
		}
		if current >= version {
			before, after = current, current
			return nil
		}
		for _, stmt := range stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		// applied_at is bookkeeping for an operator, from the server's clock.
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())`, version); err != nil {
			return fmt.Errorf("recording schema version: %w", err)
		}
		before, after = current, version
		return nil
	})
	if err == nil && after == version && before < version {
		s.log.Info("migrated postgres store schema", zap.Int("from_version", before), zap.Int("to_version", version))
	}
	return after, err
}
