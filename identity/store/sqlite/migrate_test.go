package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/store/storetest"
)

// TestMigrationsIdempotent: opening a file again, or from two Stores at
// once, applies each migration once.
func TestMigrationsIdempotent(t *testing.T) {
	ctx := storetest.Context(t)
	dir := t.TempDir()

	path := filepath.Join(dir, "sequential.db")
	for range 3 {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	checkVersions(ctx, t, path)

	path = filepath.Join(dir, "concurrent.db")
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := sqlite.Open(ctx, path)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wait(ctx, t, &wg)
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	checkVersions(ctx, t, path)
}

// checkVersions checks that schema_version records each version once, up
// to the latest.
func checkVersions(ctx context.Context, t *testing.T, path string) {
	t.Helper()
	db := rawDB(t, path)
	var rows, distinct, maxVersion int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT version), MAX(version) FROM schema_version`).
		Scan(&rows, &distinct, &maxVersion)
	if err != nil {
		t.Fatalf("reading schema_version: %v", err)
	}
	if maxVersion != sqlite.SchemaVersion || rows != maxVersion || distinct != maxVersion {
		t.Errorf("schema_version: %d rows, %d versions, latest %d; want each of 1 to %d once",
			rows, distinct, maxVersion, sqlite.SchemaVersion)
	}
}

// schema is the schema of the database at path, as SQLite records it.
func schema(ctx context.Context, t *testing.T, path string) []string {
	t.Helper()
	rows, err := rawDB(t, path).QueryContext(ctx, `SELECT type || ' ' || name || ': ' || COALESCE(sql, '')
		FROM sqlite_schema ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var objs []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestMigratedSchemaMatchesNew: a database of each earlier schema version,
// once opened, has exactly the schema of a new one.
func TestMigratedSchemaMatchesNew(t *testing.T) {
	ctx := storetest.Context(t)
	newPath := filepath.Join(t.TempDir(), "new.db")
	open(t, newPath)
	want := schema(ctx, t, newPath)
	for v := 1; v < sqlite.SchemaVersion; v++ {
		t.Run(fmt.Sprintf("FromVersion%d", v), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.db")
			if err := sqlite.CreateAtVersion(ctx, path, v); err != nil {
				t.Fatalf("CreateAtVersion: %v", err)
			}
			open(t, path)
			checkVersions(ctx, t, path)
			if got := schema(ctx, t, path); !reflect.DeepEqual(got, want) {
				t.Errorf("schema migrated from version %d:\n%q\nwant\n%q", v, got, want)
			}
		})
	}
}

// TestMigrateFromVersion1: a file at schema version 1 (before the failure
// counters) keeps its revocations and gains the counters when it is opened.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := storetest.Context(t)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	if err := sqlite.CreateAtVersion(ctx, path, 1); err != nil {
		t.Fatalf("CreateAtVersion: %v", err)
	}
	now := time.Now()
	exec(ctx, t, path, `INSERT INTO revocations (jti, expires_at, revoked_at) VALUES (?, ?, ?)`,
		"jti", now.Add(time.Hour).UnixMilli(), now.UnixMilli())

	s := open(t, path)
	checkVersions(ctx, t, path)
	if revoked, err := s.AccessTokenRevoked(ctx, "jti", "", "sub", now); err != nil || !revoked {
		t.Errorf("AccessTokenRevoked after migrating: %v, %v; want true", revoked, err)
	}
	if c, _, err := s.Admit(ctx, "k", now, time.Minute, 5, time.Minute); err != nil || c.Count != 1 {
		t.Errorf("Admit after migrating: %+v, %v", c, err)
	}
}

// exec runs a statement on the database at path, outside any Store.
func exec(ctx context.Context, t *testing.T, path, query string, args ...any) {
	t.Helper()
	if _, err := rawDB(t, path).ExecContext(ctx, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestMigrateFromVersion2: a file at schema version 2 (a row per refresh
// token and per access token issued from a family) opens at the latest
// version with its families legacy, readable, convertible (then rotating
// as constant ones), and revocable with their recorded access tokens;
// the revocations and counters it held are kept.
func TestMigrateFromVersion2(t *testing.T) {
	ctx := storetest.Context(t)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	if err := sqlite.CreateAtVersion(ctx, path, 2); err != nil {
		t.Fatalf("CreateAtVersion: %v", err)
	}
	t0 := time.Date(2031, time.March, 4, 5, 6, 7, 890_000_000, time.UTC)
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	first, second, revokedTok := []byte("hash of the first token"), []byte("hash of the second token"), []byte("hash of a revoked token")
	for _, row := range []struct {
		query string
		args  []any
	}{
		{`INSERT INTO refresh_families (id, client_id, subject, scopes, auth_time, created_at, expires_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{"fam1", "demo-app", "alice", `["openid","offline_access"]`, ms(-time.Minute), ms(0), ms(720 * time.Hour), nil}},
		{`INSERT INTO refresh_families (id, client_id, subject, scopes, auth_time, created_at, expires_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{"fam2", "demo-app", "bob", `["offline_access"]`, ms(0), ms(0), ms(720 * time.Hour), ms(time.Hour)}},
		{`INSERT INTO refresh_tokens (hash, family_id, parent, issued_at, expires_at, rotated_at, successor)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{first, "fam1", nil, ms(0), ms(336 * time.Hour), ms(time.Hour), second}},
		{`INSERT INTO refresh_tokens (hash, family_id, parent, issued_at, expires_at, rotated_at, successor)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{second, "fam1", first, ms(time.Hour), ms(337 * time.Hour), nil, nil}},
		{`INSERT INTO refresh_tokens (hash, family_id, parent, issued_at, expires_at, rotated_at, successor)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{revokedTok, "fam2", nil, ms(0), ms(336 * time.Hour), nil, nil}},
		{`INSERT INTO family_access_tokens (jti, family_id, expires_at) VALUES (?, ?, ?)`,
			[]any{"fam1/at0", "fam1", ms(time.Hour)}},
		{`INSERT INTO family_access_tokens (jti, family_id, expires_at) VALUES (?, ?, ?)`,
			[]any{"fam1/at1", "fam1", ms(2 * time.Hour)}},
		// fam2's access token, revoked with it by a program of version 2.
		{`INSERT INTO family_access_tokens (jti, family_id, expires_at) VALUES (?, ?, ?)`,
			[]any{"fam2/at0", "fam2", ms(2 * time.Hour)}},
		{`INSERT INTO revocations (jti, expires_at, revoked_at) VALUES (?, ?, ?)`,
			[]any{"fam2/at0", ms(2 * time.Hour), ms(time.Hour)}},
		{`INSERT INTO failure_counters (counter_key, failures, window_start, locked_until) VALUES (?, ?, ?, ?)`,
			[]any{"user:alice", 2, ms(0), nil}},
	} {
		exec(ctx, t, path, row.query, row.args...)
	}

	s := open(t, path)
	checkVersions(ctx, t, path)

	// Readable, as written, and legacy.
	wantFamily := store.RefreshFamily{ID: "fam1", ClientID: "demo-app", Subject: "alice",
		Scopes: []string{"openid", "offline_access"}, AuthTime: t0.Add(-time.Minute), Created: t0,
		ExpiresAt: t0.Add(720 * time.Hour)}
	wantToken := store.RefreshToken{Hash: second, FamilyID: "fam1", Parent: first,
		IssuedAt: t0.Add(time.Hour), ExpiresAt: t0.Add(337 * time.Hour)}
	tok, f, err := s.LegacyRefreshToken(ctx, second)
	if err != nil || !reflect.DeepEqual(tok, wantToken) || !reflect.DeepEqual(f, wantFamily) || !f.Legacy() {
		t.Fatalf("LegacyRefreshToken after migrating: %+v, %+v, %v;\nwant %+v, %+v (legacy)", tok, f, err, wantToken, wantFamily)
	}
	if f, err := s.RefreshFamily(ctx, "fam1"); err != nil || !reflect.DeepEqual(f, wantFamily) {
		t.Errorf("RefreshFamily after migrating: %+v, %v; want %+v", f, err, wantFamily)
	}
	if c, err := s.Counter(ctx, "user:alice"); err != nil || c.Count != 2 || !c.WindowStart.Equal(t0) {
		t.Errorf("Counter after migrating: %+v, %v", c, err)
	}
	if revoked, err := s.AccessTokenRevoked(ctx, "fam2/at0", "", "bob", t0); err != nil || !revoked {
		t.Errorf("AccessTokenRevoked of a token revoked before migrating: %v, %v; want true", revoked, err)
	}

	// Convertible, then rotating as a constant family; the family revoked
	// before migrating is not.
	now := t0.Add(90 * time.Minute)
	next, next2 := []byte("hash of generation 2"), []byte("hash of generation 3")
	err = s.ConvertLegacyFamily(ctx, revokedTok, []byte("salt"), next, now.Add(time.Hour), now)
	if !errors.Is(err, store.ErrFamilyRevoked) {
		t.Errorf("ConvertLegacyFamily of a family revoked before migrating: %v, want %v", err, store.ErrFamilyRevoked)
	}
	if err := s.ConvertLegacyFamily(ctx, second, []byte("salt"), next, now.Add(time.Hour), now); err != nil {
		t.Fatalf("ConvertLegacyFamily: %v", err)
	}
	if err := s.RotateRefreshFamily(ctx, "fam1", 2, next2, now.Add(2*time.Hour), now); err != nil {
		t.Fatalf("RotateRefreshFamily of the converted family: %v", err)
	}
	f, err = s.RefreshFamily(ctx, "fam1")
	if err != nil || f.Generation != 3 || !bytes.Equal(f.Previous, next) || !bytes.Equal(f.Current, next2) {
		t.Errorf("RefreshFamily after converting and rotating: %+v, %v; want generation 3", f, err)
	}

	// Revoking it revokes the access token recorded before migrating that
	// has not expired.
	if err := s.RevokeRefreshFamily(ctx, "fam1", now, now.Add(time.Hour)); err != nil {
		t.Fatalf("RevokeRefreshFamily: %v", err)
	}
	for jti, want := range map[string]bool{"fam1/at0": false, "fam1/at1": true} {
		if revoked, err := s.AccessTokenRevoked(ctx, jti, "", "alice", t0); err != nil || revoked != want {
			t.Errorf("AccessTokenRevoked(%q) after revoking its migrated family: %v, %v; want %v", jti, revoked, err, want)
		}
	}
}

// TestNewerSchemaRefused: a file migrated by a newer program is not opened.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := storetest.Context(t)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	exec(ctx, t, path, `INSERT INTO schema_version (version, applied_at) VALUES (1000, 0)`)
	if s, err := sqlite.Open(ctx, path); err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
}
