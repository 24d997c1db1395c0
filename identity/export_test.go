package identity

import (
	"crypto/rsa"
	"encoding/base64"
)

// SigningKeyForTest returns the key id and private key that sign now.
func (s *Server) SigningKeyForTest() (string, *rsa.PrivateKey) {
	k, err := s.keys.signer(s.cfg.Now())
	if err != nil {
		panic(err)
	}
	return k.id, k.private
}

func decodeSegment(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
