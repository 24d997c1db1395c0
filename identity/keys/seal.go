package keys

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// encryptedKeyPrefix marks a private key sealed with the operator's key
// encryption key (AES-256-GCM): prefix || nonce || ciphertext.
var encryptedKeyPrefix = []byte("gatehouse-kek-v1:")

// EncryptionKeySize is the size of a key encryption key: AES-256.
const EncryptionKeySize = 32

// sealed reports whether a stored private key is sealed.
func sealed(stored []byte) bool {
	return len(stored) > len(encryptedKeyPrefix) && bytes.HasPrefix(stored, encryptedKeyPrefix)
}

// sealKey encrypts a private key's DER with kek; nil kek stores it as is.
func sealKey(kek, der []byte, kid string) ([]byte, error) {
	if kek == nil {
		return der, nil
	}
	aead, err := newAEAD(kek)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("reading randomness: %w", err)
	}
	out := append(bytes.Clone(encryptedKeyPrefix), nonce...)
	// The key id is authenticated, so a sealed key cannot be swapped
	// under another id.
	return aead.Seal(out, nonce, der, []byte(kid)), nil
}

// openKey decrypts a stored private key; a key stored in the clear is
// returned as is.
func openKey(kek, stored []byte, kid string) ([]byte, error) {
	if !bytes.HasPrefix(stored, encryptedKeyPrefix) {
		return stored, nil
	}
	if kek == nil {
		return nil, fmt.Errorf("signing key %q is encrypted and no key encryption key is configured", kid)
	}
	aead, err := newAEAD(kek)
	if err != nil {
		return nil, err
	}
	rest := stored[len(encryptedKeyPrefix):]
	if len(rest) < aead.NonceSize() {
		return nil, fmt.Errorf("signing key %q: sealed key truncated", kid)
	}
	der, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], []byte(kid))
	if err != nil {
		return nil, fmt.Errorf("signing key %q: decryption failed (wrong key encryption key?)", kid)
	}
	return der, nil
}

func newAEAD(kek []byte) (cipher.AEAD, error) {
	if len(kek) != EncryptionKeySize {
		return nil, errors.New("the key encryption key must be 32 bytes")
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// SealSecret seals a server secret called name with kek, as private keys
// are sealed (the name is the associated data); nil kek keeps it as is.
func SealSecret(kek, secret []byte, name string) ([]byte, error) { return sealKey(kek, secret, name) }

// OpenSecret opens a server secret that SealSecret sealed; one stored in
// the clear is returned as is.
func OpenSecret(kek, stored []byte, name string) ([]byte, error) { return openKey(kek, stored, name) }

// errEncryptionKeyForm says what a key encryption key must look like; it
// never carries the key.
var errEncryptionKeyForm = fmt.Errorf("must be %d bytes, as %d hex digits or base64",
	EncryptionKeySize, 2*EncryptionKeySize)

// ParseEncryptionKey decodes a key encryption key written as 64 hex digits
// or as base64 (standard or URL alphabet, padded or not). Its error never
// carries the key.
func ParseEncryptionKey(s string) ([]byte, error) {
	if len(s) == 2*EncryptionKeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) == EncryptionKeySize {
				return b, nil
			}
			clear(b)
		}
	}
	return nil, errEncryptionKeyForm
}
