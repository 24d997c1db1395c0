package identity

import (
	"context"
	"crypto"

	"github.com/gatehouse/gatehouse/identity/verify"
)

// Key returns the published public key kid: the server is the verifier's
// in-process key source, with no HTTP hop.
func (s *Server) Key(_ context.Context, kid string) (crypto.PublicKey, error) {
	if k, ok := s.keys.publicKey(kid, s.cfg.Now()); ok {
		return k, nil
	}
	return nil, verify.ErrUnknownKey
}

// Published reports whether key is still published as kid.
func (s *Server) Published(kid string, key crypto.PublicKey) bool {
	k, ok := s.keys.publicKey(kid, s.cfg.Now())
	return ok && crypto.PublicKey(k) == key
}

var _ verify.KeySource = (*Server)(nil)
