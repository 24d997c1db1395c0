package users

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

func TestPasswordHashes(t *testing.T) {
	argon, err := HashPassword("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	bc, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, hash, password string
		want                 bool
		wantErr              bool
	}{
		{"argon2id match", argon, "s3cret", true, false},
		{"argon2id mismatch", argon, "s3creT", false, false},
		{"bcrypt match", string(bc), "s3cret", true, false},
		{"bcrypt mismatch", string(bc), "nope", false, false},
		{"over-long password never matches", argon, strings.Repeat("a", maxPasswordLen+1), false, false},
		{"unknown format", "plain:s3cret", "s3cret", false, true},
		{"argon2id with hostile memory cost", "$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHQ$" + strings.Repeat("A", 43), "x", false, true},
		{"argon2id wrong version", "$argon2id$v=16$m=19456,t=2,p=1$c2FsdHNhbHQ$" + strings.Repeat("A", 43), "x", false, true},
		{"argon2id truncated", "$argon2id$v=19$m=19456", "x", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifyPassword(tt.hash, tt.password)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("VerifyPassword = %v, %v", got, err)
			}
			if !tt.wantErr && CheckPasswordHash(tt.hash) != nil {
				t.Fatal("CheckPasswordHash refused a good hash")
			}
		})
	}
	other, _ := HashPassword("s3cret")
	if other == argon {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	if _, err := HashPassword(""); err == nil {
		t.Fatal("empty password hashed")
	}
}

func TestLoadUsersFile(t *testing.T) {
	hash, _ := passwordHashes(t)
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "users.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	user := func(name, sub, h string) string {
		return `{"username":"` + name + `","subject":"` + sub + `","password_hash":"` + h + `","scopes":["Service/Market"]}`
	}
	tests := []struct {
		name    string
		body    string
		wantErr string
		wantN   int
	}{
		{"two users", `{"users":[` + user("a", "1", hash) + `,` + user("b", "2", hash) + `]}`, "", 2},
		{"unknown field", `{"users":[{"username":"a","subject":"1","password_hash":"` + hash + `","password":"x"}]}`, "unknown field", 0},
		{"duplicate username", `{"users":[` + user("a", "1", hash) + `,` + user("a", "2", hash) + `]}`, "duplicate", 0},
		{"duplicate subject", `{"users":[` + user("a", "1", hash) + `,` + user("b", "1", hash) + `]}`, "duplicate", 0},
		{"missing subject", `{"users":[` + user("a", "", hash) + `]}`, "subject", 0},
		{"plaintext password", `{"users":[` + user("a", "1", "demo") + `]}`, "password_hash", 0},
		{"space in username", `{"users":[` + user("a b", "1", hash) + `]}`, "space", 0},
		{"not JSON", `users: []`, "parsing", 0},
		{"entitlements", `{"users":[{"username":"a","subject":"1","password_hash":"` + hash + `","entitlements":["ASX:quotes","NZX:depth"]}]}`, "", 1},
		{"malformed entitlement", `{"users":[{"username":"a","subject":"1","password_hash":"` + hash + `","entitlements":["asx:quotes"]}]}`, "entitlements: malformed", 0},
		{"entitlements too large", `{"users":[{"username":"a","subject":"1","password_hash":"` + hash + `","entitlements":[` + manyPairs(200) + `]}]}`, "too large for an access token", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			users, err := LoadFile(write(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(users) != tt.wantN {
				t.Fatalf("%d users, %v", len(users), err)
			}
			if tt.name == "entitlements" && users[0].Entitlements.String() != "ASX:quotes NZX:depth" {
				t.Fatalf("entitlements read as %v", users[0].Entitlements)
			}
		})
	}
}

// Seeding creates missing users and leaves existing ones as the CLI made
// them.
func TestSeedUsers(t *testing.T) {
	st := openStore(t)
	dh, oh := passwordHashes(t)
	u, _ := st.User(t.Context(), "demo")
	u.PasswordHash = oh
	if err := st.UpdateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteUser(t.Context(), "gone", t0, t0.Add(time.Hour)); err == nil {
		t.Fatal("deleted a user that is not there")
	}
	if err := st.CreateUser(t.Context(), store.User{Username: "gone", Subject: "sub-gone", PasswordHash: dh}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteUser(t.Context(), "gone", t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	seeded, err := Seed(t.Context(), st, []store.User{
		{Username: "demo", Subject: "sub-demo", PasswordHash: dh},
		{Username: "new", Subject: "sub-new", PasswordHash: dh},
		{Username: "gone", Subject: "sub-gone", PasswordHash: dh},
	}, t0)
	if err != nil || seeded.Created != 1 || len(seeded.Stricter) != 0 || !slices.Equal(seeded.Deleted, []string{"gone"}) {
		t.Fatalf("seeded %+v, %v", seeded, err)
	}
	if _, err := st.User(t.Context(), "gone"); err == nil {
		t.Fatal("seeding added a deleted user's subject again")
	}
	got, _ := st.User(t.Context(), "demo")
	if got.PasswordHash != oh {
		t.Fatal("seeding overwrote an existing user")
	}
	if _, err := st.User(t.Context(), "new"); err != nil {
		t.Fatal(err)
	}
}

// hashWith is an argon2id hash of password with other memory and time
// costs than the current ones.
func hashWith(password string, memoryKiB, passes uint32) (string, error) {
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte(password), salt, passes, memoryKiB, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, memoryKiB, passes, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Seeding names the existing users whose entry gives less than the store
// holds, disabled, fewer scopes or fewer entitlements, and changes none of
// them: the warning an operator who edited the file to take something away
// needs.
func TestSeedNamesStricterEntries(t *testing.T) {
	st := openStore(t)
	u, _ := st.User(t.Context(), "demo")
	u.Scopes = []string{"a", "b"}
	if err := st.UpdateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateEntitlements(t.Context(), "demo", func(entitle.Set) (entitle.Set, error) {
		return entitle.MustParse("ASX:quotes"), nil
	}, t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		entry    store.User
		stricter bool
	}{
		{store.User{Username: "demo", Scopes: []string{"a", "b"}, Entitlements: entitle.MustParse("ASX:quotes")}, false},
		{store.User{Username: "demo", Scopes: []string{"b", "a", "c"}, Entitlements: entitle.MustParse("ASX:quotes")}, false},
		{store.User{Username: "demo", Scopes: []string{"a"}}, true},
		{store.User{Username: "demo", Scopes: []string{"a", "b"}, Disabled: true}, true},
		{store.User{Username: "demo", Scopes: []string{"a", "b"}, Entitlements: entitle.MustParse("ASX:quotes NZX:quotes")}, false},
		{store.User{Username: "demo", Scopes: []string{"a", "b"}, Entitlements: entitle.MustParse("NZX:quotes")}, true},
	} {
		seeded, err := Seed(t.Context(), st, []store.User{tt.entry}, t0)
		if err != nil || seeded.Created != 0 || (len(seeded.Stricter) == 1 && seeded.Stricter[0] == "demo") != tt.stricter {
			t.Errorf("%+v: %+v, %v", tt.entry, seeded, err)
		}
	}
	if got, _ := st.User(t.Context(), "demo"); got.Disabled || len(got.Scopes) != 2 || got.Entitlements.String() != "ASX:quotes" {
		t.Errorf("seeding changed an existing user: %+v", got)
	}
}

// manyPairs is n pairs of distinct venues, quoted, comma-separated.
func manyPairs(n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf(`"V%03d:quotes"`, i)
	}
	return strings.Join(ps, ",")
}
