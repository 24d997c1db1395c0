package users

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Argon2id parameters for new password hashes: OWASP's minimum
// recommendation (19 MiB, 2 passes, 1 lane).
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
	// maxPasswordLen bounds the work a request can cause.
	maxPasswordLen = 1024
)

// Bounds on argon2id parameters read from a stored hash, so a corrupt or
// hostile users file cannot make a login cost gigabytes.
const (
	maxArgonMemoryKiB = 256 * 1024
	maxArgonTime      = 10
	maxArgonThreads   = 16
)

var errBadHash = errors.New("unrecognized password hash format")

// Password lengths, in characters (Unicode code points), for a password
// being set: NIST SP 800-63B-4 §3.1.1.2 asks for at least 15 where the
// password is the only factor, and that at least 64 be accepted; no
// composition rules.
const (
	DefaultMinPasswordLength = 15
	MaxPasswordLength        = 256
)

// ErrPasswordLength is the error of a password being set that is shorter
// than the minimum or longer than MaxPasswordLength.
var ErrPasswordLength = errors.New("password length")

// CheckNewPassword checks a password being set: at least minLength
// characters (DefaultMinPasswordLength when 0), at most
// MaxPasswordLength. Nothing else: any character, no composition rule.
func CheckNewPassword(password string, minLength int) error {
	if minLength <= 0 {
		minLength = DefaultMinPasswordLength
	}
	n := utf8.RuneCountInString(password)
	switch {
	case n < minLength:
		return fmt.Errorf("%w: a password needs at least %d characters, this one has %d", ErrPasswordLength, minLength, n)
	case n > MaxPasswordLength || len(password) > maxPasswordLen:
		return fmt.Errorf("%w: a password may have at most %d characters", ErrPasswordLength, MaxPasswordLength)
	}
	return nil
}

// HashPassword returns a PHC-encoded argon2id hash of password.
func HashPassword(password string) (string, error) {
	if password == "" {
		return "", errors.New("empty password")
	}
	if len(password) > maxPasswordLen {
		return "", fmt.Errorf("password longer than %d bytes", maxPasswordLen)
	}
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("generating salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemoryKiB, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// CheckPasswordHash reports whether hash is a hash this package can verify.
func CheckPasswordHash(hash string) error {
	switch {
	case strings.HasPrefix(hash, "$argon2id$"):
		_, _, _, err := parseArgon2id(hash)
		return err
	case strings.HasPrefix(hash, "$2a$"), strings.HasPrefix(hash, "$2b$"), strings.HasPrefix(hash, "$2y$"):
		_, err := bcrypt.Cost([]byte(hash))
		return err
	}
	return errBadHash
}

// VerifyPassword reports whether password matches hash (argon2id in PHC
// form, or bcrypt). The comparison is constant-time.
func VerifyPassword(hash, password string) (bool, error) {
	if len(password) > maxPasswordLen {
		return false, nil
	}
	switch {
	case strings.HasPrefix(hash, "$argon2id$"):
		p, salt, key, err := parseArgon2id(hash)
		if err != nil {
			return false, err
		}
		got := argon2.IDKey([]byte(password), salt, p.time, p.memory, p.threads, uint32(len(key)))
		return subtle.ConstantTimeCompare(got, key) == 1, nil
	case strings.HasPrefix(hash, "$2a$"), strings.HasPrefix(hash, "$2b$"), strings.HasPrefix(hash, "$2y$"):
		err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(password))
		if errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
			return false, nil
		}
		return err == nil, err
	}
	return false, errBadHash
}

type argonParams struct {
	memory  uint32
	time    uint32
	threads uint8
}

func parseArgon2id(hash string) (argonParams, []byte, []byte, error) {
	var p argonParams
	parts := strings.Split(hash, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 {
		return p, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, fmt.Errorf("argon2id hash: unsupported version %q", parts[2])
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &p.threads); err != nil {
		return p, nil, nil, fmt.Errorf("argon2id hash: bad parameters: %w", err)
	}
	if p.memory == 0 || p.memory > maxArgonMemoryKiB || p.time == 0 || p.time > maxArgonTime || p.threads == 0 || p.threads > maxArgonThreads {
		return p, nil, nil, errors.New("argon2id hash: parameters out of bounds")
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return p, nil, nil, fmt.Errorf("argon2id hash: bad salt: %w", err)
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return p, nil, nil, errors.New("argon2id hash: bad key")
	}
	return p, salt, key, nil
}

// NeedsRehash reports whether hash is not an argon2id hash with the
// current parameters (a bcrypt hash, or other argon2id costs): a login
// that proves the password then stores a new hash.
func NeedsRehash(hash string) bool {
	if !strings.HasPrefix(hash, "$argon2id$") {
		return true
	}
	p, _, key, err := parseArgon2id(hash)
	return err != nil || p.memory != argonMemoryKiB || p.time != argonTime || p.threads != argonThreads || len(key) != argonKeyLen
}
