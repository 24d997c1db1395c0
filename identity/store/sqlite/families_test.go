package sqlite_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/store/storetest"
)

// rowCounts counts the rows of every table of the database at path.
func rowCounts(ctx context.Context, t *testing.T, path string) map[string]int {
	t.Helper()
	db := rawDB(t, path)
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	counts := make(map[string]int, len(tables))
	for _, name := range tables {
		// The name comes from the catalog, quoted as an identifier.
		quoted := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+quoted).Scan(&n); err != nil {
			t.Fatalf("counting the rows of %s: %v", name, err)
		}
		counts[name] = n
	}
	return counts
}

func tokenHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// TestConstantFamilyStorage: the rows a family holds after 10,000
// rotations equal those after one, in every table, whether it was created
// in the constant scheme or converted from a legacy family; and the family
// still rotates from its last generation.
func TestConstantFamilyStorage(t *testing.T) {
	const rotations = 10_000
	t0 := time.Date(2031, time.March, 4, 5, 6, 7, 890_000_000, time.UTC)
	for _, tt := range []struct {
		name  string
		start func(ctx context.Context, s *sqlite.Store) (generation int, err error)
	}{
		{"New", func(ctx context.Context, s *sqlite.Store) (int, error) {
			return 1, s.CreateRefreshFamily(ctx, store.RefreshFamily{ID: "fam", ClientID: "app", Subject: "alice",
				Created: t0, ExpiresAt: t0.Add(720 * time.Hour), Salt: []byte("salt"),
				Generation: 1, Current: tokenHash("fam/1"), CurrentExpiresAt: t0.Add(time.Hour)}, store.FamilyBound{})
		}},
		{"ConvertedLegacy", func(ctx context.Context, s *sqlite.Store) (int, error) {
			f := store.RefreshFamily{ID: "fam", ClientID: "app", Subject: "alice", Created: t0, ExpiresAt: t0.Add(720 * time.Hour)}
			tok := store.RefreshToken{Hash: tokenHash("fam/legacy"), FamilyID: "fam", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}
			at := store.IssuedAccessToken{JTI: "fam/at0", ExpiresAt: t0.Add(time.Hour)}
			if err := s.SeedLegacyFamily(ctx, f, []store.RefreshToken{tok}, []store.IssuedAccessToken{at}); err != nil {
				return 0, err
			}
			return 2, s.ConvertLegacyFamily(ctx, tok.Hash, []byte("salt"), tokenHash("fam/2"), t0.Add(time.Hour), t0)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := storetest.Context(t)
			path := filepath.Join(t.TempDir(), "gatehouse.db")
			// Each rotation is a commit; their syncs would only slow the test.
			s := open(t, path, sqlite.WithSynchronous("normal"))
			g, err := tt.start(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			rotate := func() {
				t.Helper()
				now := t0.Add(time.Duration(g) * time.Second)
				if err := s.RotateRefreshFamily(ctx, "fam", g, tokenHash(fmt.Sprintf("fam/%d", g+1)), now.Add(time.Hour), now); err != nil {
					t.Fatalf("RotateRefreshFamily from %d: %v", g, err)
				}
				g++
			}
			rotate()
			once := rowCounts(ctx, t, path)
			for range rotations - 1 {
				rotate()
			}
			if got := rowCounts(ctx, t, path); !reflect.DeepEqual(got, once) {
				t.Errorf("rows after %d rotations: %v; after one: %v", rotations, got, once)
			}
			f, err := s.RefreshFamily(ctx, "fam")
			if err != nil || f.Generation != g {
				t.Errorf("RefreshFamily: generation %d, %v; want %d", f.Generation, err, g)
			}
			rotate()
		})
	}
}
