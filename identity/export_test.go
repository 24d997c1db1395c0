package identity

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"time"
)

// SigningKeyForTest returns the key id and private key that sign now.
func (s *Server) SigningKeyForTest() (string, *rsa.PrivateKey) {
	kid, key, err := s.keys.SigningKey(s.cfg.Now())
	if err != nil {
		panic(err)
	}
	return kid, key
}

// hashCount is how many password hashes the server has computed.
func (s *Server) hashCount() int64 { return s.passwords.Hashes() }

// syncKeys applies the key schedule at now.
func (s *Server) syncKeys(ctx context.Context, now time.Time) error { return s.keys.Sync(ctx, now) }

// signsNow reports whether some key signs now.
func (s *Server) signsNow() error {
	_, _, err := s.keys.SigningKey(s.cfg.Now())
	return err
}

func decodeSegment(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
