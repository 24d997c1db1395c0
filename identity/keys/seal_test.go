package keys

import (
	"bytes"
	"testing"
)

func TestSealKey(t *testing.T) {
	kek := bytes.Repeat([]byte{7}, EncryptionKeySize)
	der := []byte("private key material")
	stored, err := sealKey(kek, der, "kid-1")
	if err != nil || !sealed(stored) || bytes.Contains(stored, der) {
		t.Fatalf("not sealed: %v", err)
	}
	if got, err := openKey(kek, stored, "kid-1"); err != nil || !bytes.Equal(got, der) {
		t.Fatalf("open: %q, %v", got, err)
	}
	// A sealed key moved under another id does not open.
	if _, err := openKey(kek, stored, "other-kid"); err == nil {
		t.Fatal("sealed key opened under another id")
	}
	if _, err := openKey(bytes.Repeat([]byte{8}, EncryptionKeySize), stored, "kid-1"); err == nil {
		t.Fatal("sealed key opened with the wrong key encryption key")
	}
	if _, err := openKey(nil, stored, "kid-1"); err == nil {
		t.Fatal("sealed key opened without a key encryption key")
	}
	if _, err := openKey(kek, stored[:len(encryptedKeyPrefix)+3], "kid-1"); err == nil {
		t.Fatal("truncated sealed key opened")
	}
	// Without a key encryption key a key is stored, and read, as is.
	if clear, _ := sealKey(nil, der, "kid-1"); !bytes.Equal(clear, der) || sealed(clear) {
		t.Fatal("key without a key encryption key was changed")
	}
}
