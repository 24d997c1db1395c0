package mfa

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// Recovery codes: a set of single-use codes a user keeps on paper, each of
// which stands in for the second factor once (a lost phone). The store
// keeps their hashes only; spending one deletes its hash in the same
// statement that checks it, so a code works once on every instance.
const (
	// RecoveryCodes is how many codes a set has.
	RecoveryCodes = 10
	// recoveryChars is a code's length without its dashes: 16 characters
	// of a 32-letter alphabet, 80 bits, beyond guessing online and beyond
	// a search of the hashes of a leaked store (which a 10-character code,
	// 50 bits, would not be: a salt-free SHA-256 runs at billions a second
	// on one graphics card).
	recoveryChars = 16
	// recoveryGroup is the characters between dashes, for reading aloud.
	recoveryGroup = 4
)

// recoveryAlphabet is Crockford's base32 alphabet: no I, L, O or U, so
// that what a user reads off paper is what they type (normalize maps the
// look-alikes back).
const recoveryAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewRecoveryCodes is a new set of RecoveryCodes codes, formatted for the
// user (XXXX-XXXX-XXXX-XXXX), and their hashes (RecoveryHash) for the
// store, in the same order.
func NewRecoveryCodes() (codes []string, hashes [][]byte, err error) {
	for range RecoveryCodes {
		var raw [recoveryChars]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, nil, err
		}
		var b strings.Builder
		for i, r := range raw {
			if i > 0 && i%recoveryGroup == 0 {
				b.WriteByte('-')
			}
			b.WriteByte(recoveryAlphabet[r&31]) // 256 is a multiple of 32: no bias
		}
		code := b.String()
		codes = append(codes, code)
		hashes = append(hashes, RecoveryHash(code))
	}
	return codes, hashes, nil
}

// RecoveryHash is the hash the store keeps of a recovery code, as typed:
// its normal form (normalize) hashed with SHA-256; nil when the input
// cannot be a code (wrong length or letters), which matches no hash.
func RecoveryHash(typed string) []byte {
	n, ok := normalize(typed)
	if !ok {
		return nil
	}
	sum := sha256.Sum256([]byte(n))
	return sum[:]
}

// MatchRecovery is the index in hashes of the code typed, or -1. Every
// hash is compared, in constant time.
func MatchRecovery(typed string, hashes [][]byte) int {
	h := RecoveryHash(typed)
	if h == nil {
		return -1
	}
	found := -1
	for i, want := range hashes {
		eq := subtle.ConstantTimeCompare(h, want)
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	return found
}

// normalize is a typed recovery code in the form its hash is taken of:
// upper case, dashes and spaces dropped, and Crockford's look-alikes (I
// and L for 1, O for 0) mapped back. It reports false unless the result
// is recoveryChars letters of the alphabet.
func normalize(typed string) (string, bool) {
	if len(typed) > 4*recoveryChars {
		return "", false
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(typed) {
		switch r {
		case '-', ' ':
			continue
		case 'I', 'L':
			r = '1'
		case 'O':
			r = '0'
		}
		if !strings.ContainsRune(recoveryAlphabet, r) {
			return "", false
		}
		b.WriteRune(r)
	}
	if b.Len() != recoveryChars {
		return "", false
	}
	return b.String(), true
}
