package users

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// MaxFileSize bounds the size of a users file.
const MaxFileSize = 16 << 20

// MaxSubjectLen bounds a subject id.
const MaxSubjectLen = 255

// File is the JSON form of a users file:
//
//	{"users": [{"username": "demo", "subject": "5d1c...", "password_hash": "$argon2id$...",
//	            "display_name": "Demo User", "email": "demo@example.com",
//	            "scopes": ["Service/Market"], "roles": [], "entitlements": ["ASX:quotes"],
//	            "totp_secret": "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", "disabled": false}]}
type File struct {
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
	// Entitlements are the user's market-data pairs ("ASX:quotes"), set
	// when the user is created; the store's set is the user's from then
	// on (gatehouse user entitle, unentitle).
	Entitlements []string `json:"entitlements,omitempty"`
	Disabled     bool     `json:"disabled,omitempty"`
	// TOTPSecret seeds the user's TOTP factor: the secret as an
	// authenticator app shows it (base32, RFC 4648, without padding; case
	// and spaces ignored), of at least MinTOTPSecretBytes bytes. It is
	// enrolled at a start or reload only when the user has no TOTP factor,
	// so a factor the user enrolled is kept, and one reset with the CLI
	// is seeded again. For demos and operators' seeding: a secret kept in
	// a file is weaker than one the user enrolled, which never leaves the
	// store.
	TOTPSecret string `json:"totp_secret,omitempty"`
}

// MinTOTPSecretBytes is the least size of a seeded TOTP secret: 128 bits,
// RFC 4226 §4's minimum (it recommends 160, the size of an enrolled one).
const MinTOTPSecretBytes = 16

// Loaded is a users file, read and checked.
type Loaded struct {
	// Users are its users, for Seed.
	Users []store.User
	// TOTPSecrets are the TOTP secrets it seeds (totp_secret), decoded, by
	// username.
	TOTPSecrets map[string][]byte
}

// LoadFile reads and checks a users file: Load's users.
func LoadFile(path string) ([]store.User, error) {
	l, err := Load(path)
	return l.Users, err
}

// Load reads and checks a users file. It reads no more than MaxFileSize
// bytes of it.
func Load(path string) (Loaded, error) {
	fh, err := os.Open(path)
	if err != nil {
		return Loaded{}, fmt.Errorf("reading users file: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return Loaded{}, fmt.Errorf("reading users file: %w", err)
	}
	if len(data) > MaxFileSize {
		return Loaded{}, fmt.Errorf("users file %q is larger than %d bytes", path, MaxFileSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return Loaded{}, fmt.Errorf("parsing users file %q: %w", path, err)
	}
	seenName := map[string]bool{}
	seenSub := map[string]bool{}
	l := Loaded{Users: make([]store.User, 0, len(f.Users))}
	for i, u := range f.Users {
		if err := ValidateUsername(u.Username); err != nil {
			return Loaded{}, fmt.Errorf("users file %q, user %d: %w", path, i, err)
		}
		if err := ValidateSubject(u.Subject); err != nil {
			return Loaded{}, fmt.Errorf("users file %q, user %q: %w", path, u.Username, err)
		}
		if err := CheckPasswordHash(u.PasswordHash); err != nil {
			return Loaded{}, fmt.Errorf("users file %q, user %q: password_hash: %w", path, u.Username, err)
		}
		pairs, err := ParseEntitlements(u.Entitlements)
		if err != nil {
			return Loaded{}, fmt.Errorf("users file %q, user %q: entitlements: %w", path, u.Username, err)
		}
		if seenName[u.Username] || seenSub[u.Subject] {
			return Loaded{}, fmt.Errorf("users file %q, user %q: duplicate username or subject", path, u.Username)
		}
		seenName[u.Username], seenSub[u.Subject] = true, true
		if u.TOTPSecret != "" {
			secret, err := ParseTOTPSecret(u.TOTPSecret)
			if err != nil {
				// The error names no part of the secret.
				return Loaded{}, fmt.Errorf("users file %q, user %q: totp_secret: %w", path, u.Username, err)
			}
			if l.TOTPSecrets == nil {
				l.TOTPSecrets = map[string][]byte{}
			}
			l.TOTPSecrets[u.Username] = secret
		}
		l.Users = append(l.Users, store.User{
			Username: u.Username, Subject: u.Subject, PasswordHash: u.PasswordHash,
			DisplayName: u.DisplayName, Email: u.Email, EmailVerified: u.EmailVerified,
			Scopes: u.Scopes, Roles: u.Roles, Disabled: u.Disabled, Entitlements: pairs,
		})
	}
	return l, nil
}

// ParseTOTPSecret decodes a TOTP secret as an authenticator app shows it:
// base32 (RFC 4648) without padding, in either case, spaces ignored (some
// apps show it in groups of four). It must be at least MinTOTPSecretBytes
// bytes. Its errors quote none of the text.
func ParseTOTPSecret(text string) ([]byte, error) {
	norm := strings.ToUpper(strings.ReplaceAll(text, " ", ""))
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(norm)
	if err != nil {
		return nil, errors.New("not base32 without padding (RFC 4648), as an authenticator app shows a secret")
	}
	if len(secret) < MinTOTPSecretBytes {
		return nil, fmt.Errorf("%d bytes: a TOTP secret must have at least %d (%d bits; 20 recommended)",
			len(secret), MinTOTPSecretBytes, 8*MinTOTPSecretBytes)
	}
	return secret, nil
}

// ParseEntitlements reads a user's market-data entitlements, each
// "VENUE:feed" (entitle.ParsePair), and checks that they fit in an access
// token (entitle.Set.CheckTokenSize).
func ParseEntitlements(texts []string) (entitle.Set, error) {
	s, err := entitle.Parse(texts...)
	if err != nil {
		return entitle.Set{}, err
	}
	if err := s.CheckTokenSize(); err != nil {
		return entitle.Set{}, err
	}
	return s, nil
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

// ValidateSubject checks a subject id: 1 to MaxSubjectLen bytes.
func ValidateSubject(sub string) error {
	if sub == "" || len(sub) > MaxSubjectLen {
		return fmt.Errorf("subject must be 1 to %d bytes", MaxSubjectLen)
	}
	return nil
}

// ClientNamed returns the one of clientIDs that subject names, compared
// without regard to case (a resource may compare owners so), and whether
// there is one. A user's subject must name no client: a
// client_credentials token's sub is its client's ID, so every resource
// would take the user and the client for one principal.
func ClientNamed(subject string, clientIDs []string) (string, bool) {
	for _, id := range clientIDs {
		if strings.EqualFold(subject, id) {
			return id, true
		}
	}
	return "", false
}

// ErrSubjectNamesClient is the error of a user whose subject names a
// client (ClientNamed).
var ErrSubjectNamesClient = errors.New("a client_credentials token's sub is its client's ID, so the user and the client would be one principal to every resource")

// NewSubject returns a new random subject id: a version 4 UUID.
func NewSubject() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// Seeded is what Seed did.
type Seeded struct {
	// Created counts the users it created.
	Created int
	// Stricter names the users it left whose entry gives less than the
	// store holds (disabled there but not in the store, fewer scopes or
	// fewer entitlements):
	// an operator who edited the file to take something away must be told
	// that it did not.
	Stricter []string
	// Deleted names the users it did not create because their subject was
	// a deleted user's (store.ErrSubjectDeleted): the file still lists a
	// user deleted with gatehouse user delete.
	Deleted []string
}

// Seed creates the users that the store does not have yet. Users that
// exist are left as they are, so changes made with the CLI survive a
// restart, and a deleted user's subject is given to no one (Seeded).
func Seed(ctx context.Context, st store.Store, users []store.User, now time.Time) (Seeded, error) {
	var r Seeded
	for _, u := range users {
		had, err := st.User(ctx, u.Username)
		if err == nil {
			if u.Disabled && !had.Disabled || slices.ContainsFunc(had.Scopes, func(s string) bool { return !slices.Contains(u.Scopes, s) }) ||
				!had.Entitlements.SubsetOf(u.Entitlements) {
				r.Stricter = append(r.Stricter, u.Username)
			}
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			return r, fmt.Errorf("seeding user %q: %w", u.Username, err)
		}
		u.Created, u.Updated = now, now
		switch err := st.CreateUser(ctx, u); {
		case errors.Is(err, store.ErrAlreadyExists):
			// created concurrently by another instance
		case errors.Is(err, store.ErrSubjectDeleted):
			r.Deleted = append(r.Deleted, u.Username)
		case err != nil:
			return r, fmt.Errorf("seeding user %q: %w", u.Username, err)
		default:
			r.Created++
		}
	}
	return r, nil
}

// Outdated lists the users whose password hashes are not argon2id with the
// current parameters (NeedsRehash): such a hash may take longer than the
// failure floor, and is upgraded at the user's next login.
func Outdated(users []store.User) []string {
	var names []string
	for _, u := range users {
		if NeedsRehash(u.PasswordHash) {
			names = append(names, u.Username)
		}
	}
	return names
}
