package factors

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/go-webauthn/webauthn/webauthn"
)

// A ceremony's state between its two requests, sealed for the browser to
// carry.

// ceremonyState is what a sealed state holds.
type ceremonyState struct {
	Kind    string               `json:"k"`
	Subject string               `json:"sub"`
	Expires int64                `json:"exp"`
	Session webauthn.SessionData `json:"s"`
}

// ceremonyAAD binds a sealed state to its kind and user.
func ceremonyAAD(kind, subject string) []byte {
	return []byte("gatehouse passkey ceremony v1\x00" + kind + "\x00" + subject)
}

// sealCeremony returns options as JSON and session sealed for a ceremony
// of kind for subject: AES-256-GCM under the ceremony key, the kind and
// subject bound in as associated data, base64url.
func (s *Service) sealCeremony(options any, session *webauthn.SessionData, kind, subject string) ([]byte, string, error) {
	opts, err := json.Marshal(options)
	if err != nil {
		return nil, "", fmt.Errorf("encoding passkey options: %w", err)
	}
	plain, err := json.Marshal(ceremonyState{Kind: kind, Subject: subject,
		Expires: s.cfg.Now().Add(CeremonyLifetime).Unix(), Session: *session})
	if err != nil {
		return nil, "", fmt.Errorf("encoding a passkey ceremony: %w", err)
	}
	nonce := make([]byte, s.pk.aead.NonceSize(), s.pk.aead.NonceSize()+len(plain)+s.pk.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", fmt.Errorf("reading randomness: %w", err)
	}
	state := base64.RawURLEncoding.EncodeToString(s.pk.aead.Seal(nonce, nonce, plain, ceremonyAAD(kind, subject)))
	if len(state) > MaxCeremonyState {
		return nil, "", fmt.Errorf("a passkey ceremony state of %d bytes", len(state))
	}
	return opts, state, nil
}

// openCeremony opens a state sealed for a ceremony of kind for subject,
// unexpired.
func (s *Service) openCeremony(state, kind, subject string) (webauthn.SessionData, error) {
	if state == "" || len(state) > MaxCeremonyState {
		return webauthn.SessionData{}, fmt.Errorf("%w: no state", ErrCeremony)
	}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	ns := s.pk.aead.NonceSize()
	if err != nil || len(raw) < ns {
		return webauthn.SessionData{}, fmt.Errorf("%w: a malformed state", ErrCeremony)
	}
	plain, err := s.pk.aead.Open(nil, raw[:ns], raw[ns:], ceremonyAAD(kind, subject))
	if err != nil {
		return webauthn.SessionData{}, fmt.Errorf("%w: the state does not open (tampered, another ceremony or user, or another key)", ErrCeremony)
	}
	var c ceremonyState
	if err := json.Unmarshal(plain, &c); err != nil || c.Kind != kind || c.Subject != subject {
		return webauthn.SessionData{}, fmt.Errorf("%w: a malformed state", ErrCeremony)
	}
	if s.cfg.Now().Unix() >= c.Expires {
		return webauthn.SessionData{}, fmt.Errorf("%w: the state expired", ErrCeremony)
	}
	return c.Session, nil
}

// newCeremonyAEAD is the AEAD of the ceremony key.
func newCeremonyAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
