package authorize

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gatehouse/gatehouse/identity/clients"
)

// maxPending bounds a sealed request a form may send back.
const maxPending = 32 << 10

// sealed is what a form carries of the request: the request, the step it
// is for, and when it stops being valid.
type sealed struct {
	Step    string   `json:"step"`
	Expires int64    `json:"exp"`
	Request *request `json:"req"`
}

// seal seals q for the form of step (login, consent): AES-256-GCM under
// the seal key, the step bound in as associated data, base64url.
func (e *Endpoint) seal(q *request, step string) (string, error) {
	plain, err := json.Marshal(sealed{Step: step, Expires: e.cfg.Now().Add(e.cfg.PendingLifetime).Unix(), Request: q})
	if err != nil {
		return "", err
	}
	nonce := make([]byte, e.aead.NonceSize(), e.aead.NonceSize()+len(plain)+e.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(e.aead.Seal(nonce, nonce, plain, aad(step))), nil
}

func aad(step string) []byte { return []byte("gatehouse pending request v1\x00" + step) }

// open opens a request sealed for step, unexpired, whose client still
// exists and still has its redirect URI registered (the configuration may
// have changed since).
func (e *Endpoint) open(text, step string) (*request, *clients.Client, error) {
	if text == "" || len(text) > maxPending {
		return nil, nil, errors.New("no sealed request")
	}
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(raw) < e.aead.NonceSize() {
		return nil, nil, errors.New("malformed sealed request")
	}
	ns := e.aead.NonceSize()
	plain, err := e.aead.Open(nil, raw[:ns], raw[ns:], aad(step))
	if err != nil {
		return nil, nil, errors.New("sealed request does not open (tampered, another step, or another key)")
	}
	var s sealed
	if err := json.Unmarshal(plain, &s); err != nil || s.Request == nil || s.Step != step {
		return nil, nil, errors.New("sealed request malformed")
	}
	if e.cfg.Now().Unix() >= s.Expires {
		return nil, nil, errors.New("sealed request expired")
	}
	c, ok := e.cfg.Clients.Client(s.Request.ClientID)
	if !ok || !c.MatchRedirectURI(s.Request.RedirectURI) {
		return nil, nil, errors.New("the client or its redirect URI is no longer registered")
	}
	return s.Request, c, nil
}
