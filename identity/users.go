package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// maxUsersFile bounds the size of a users file.
const maxUsersFile = 16 << 20

// UsersFile is the JSON form of a users file:
//
//	{"users": [{"username": "demo", "subject": "5d1c...", "password_hash": "$argon2id$...",
//	            "display_name": "Demo User", "email": "demo@example.com",
//	            "scopes": ["Service/Market"], "roles": [], "disabled": false}]}
type UsersFile struct {
	Users []FileUser `json:"users"`
}

// FileUser is one user of a users file.
type FileUser struct {
	Username      string   `json:"username"`
	Subject       string   `json:"subject"`
	PasswordHash  string   `json:"password_hash"`
	DisplayName   string   `json:"display_name,omitempty"`
	Email         string   `json:"email,omitempty"`
	EmailVerified bool     `json:"email_verified,omitempty"`
	Scopes        []string `json:"scopes,omitempty"`
	Roles         []string `json:"roles,omitempty"`
	Disabled      bool     `json:"disabled,omitempty"`
}

// LoadUsersFile reads and checks a users file.
func LoadUsersFile(path string) ([]store.User, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading users file: %w", err)
	}
	if len(data) > maxUsersFile {
		return nil, fmt.Errorf("users file %q is larger than %d bytes", path, maxUsersFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f UsersFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parsing users file %q: %w", path, err)
	}
	seenName := map[string]bool{}
	seenSub := map[string]bool{}
	users := make([]store.User, 0, len(f.Users))
	for i, u := range f.Users {
		if err := ValidateUsername(u.Username); err != nil {
			return nil, fmt.Errorf("users file %q, user %d: %w", path, i, err)
		}
		if u.Subject == "" || len(u.Subject) > 255 {
			return nil, fmt.Errorf("users file %q, user %q: subject must be 1 to 255 bytes", path, u.Username)
		}
		if err := CheckPasswordHash(u.PasswordHash); err != nil {
			return nil, fmt.Errorf("users file %q, user %q: password_hash: %w", path, u.Username, err)
		}
		if seenName[u.Username] || seenSub[u.Subject] {
			return nil, fmt.Errorf("users file %q, user %q: duplicate username or subject", path, u.Username)
		}
		seenName[u.Username], seenSub[u.Subject] = true, true
		users = append(users, store.User{
			Username: u.Username, Subject: u.Subject, PasswordHash: u.PasswordHash,
			DisplayName: u.DisplayName, Email: u.Email, EmailVerified: u.EmailVerified,
			Scopes: u.Scopes, Roles: u.Roles, Disabled: u.Disabled,
		})
	}
	return users, nil
}

// ValidateUsername checks a username: 1 to 255 bytes, printable, no spaces.
func ValidateUsername(name string) error {
	if name == "" || len(name) > 255 {
		return errors.New("username must be 1 to 255 bytes")
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("username %q contains a space or control character", name)
		}
	}
	return nil
}

// SeedUsers creates the users that the store does not have yet. Users that
// exist are left as they are, so changes made with the CLI survive a
// restart. It returns how many users it created.
func SeedUsers(ctx context.Context, st store.Store, users []store.User, now time.Time) (int, error) {
	created := 0
	for _, u := range users {
		_, err := st.User(ctx, u.Username)
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			return created, fmt.Errorf("seeding user %q: %w", u.Username, err)
		}
		u.Created, u.Updated = now, now
		if err := st.CreateUser(ctx, u); err != nil {
			if errors.Is(err, store.ErrAlreadyExists) {
				continue // created concurrently by another instance
			}
			return created, fmt.Errorf("seeding user %q: %w", u.Username, err)
		}
		created++
	}
	return created, nil
}
