package wsauth

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// CodeCredentials are the Data of an AuthCode message: an authorization
// code the client got from the identity server's authorization endpoint,
// exchanged as the token endpoint would (RFC 6749 §4.1.3, RFC 7636 §4.5).
type CodeCredentials struct {
	ClientID     string
	ClientSecret string // empty for a public client
	Code         string
	RedirectURI  string // the authorization request's redirect_uri
	CodeVerifier string // the PKCE verifier
	// RemoteAddr is the client's address, for the log.
	RemoteAddr string
}

// CodeExchanger answers AuthCode messages: the identity server's code
// exchange (client, redirect URI, PKCE, one use). Errors are refusals or
// faults as for Verifier.
type CodeExchanger interface {
	ExchangeCode(ctx context.Context, cred CodeCredentials) (Identity, error)
}

// parseCode reads an AuthCode message's Data: one object whose members
// ClientID, ClientSecret, Code, RedirectURI and CodeVerifier (exact names,
// each at most once, strings) are read and others ignored. ClientID and
// Code are required.
func parseCode(data []byte) (CodeCredentials, bool) {
	v, ok := zenith.ParseStrings(data, "ClientID", "ClientSecret", "Code", "RedirectURI", "CodeVerifier")
	if !ok {
		return CodeCredentials{}, false
	}
	c := CodeCredentials{ClientID: v[0], ClientSecret: v[1], Code: v[2], RedirectURI: v[3], CodeVerifier: v[4]}
	return c, c.ClientID != "" && c.Code != ""
}

// authCode answers an AuthCode message: the code exchanged by Hooks.Codes,
// the session authenticated as the identity of the access token it gives.
func (s *session) authCode(env *zenith.Envelope) {
	topic := s.otherReplyTopic(env)
	if s.g.cfg().Hooks.Codes == nil {
		s.refuse(AuthCodeMsg, AuthResultNo, "no code exchange", topic, env)
		return
	}
	cred, ok := parseCode(env.Data)
	if !ok {
		s.refuse(AuthCodeMsg, AuthResultNo, "malformed AuthCode", topic, env)
		return
	}
	cred.RemoteAddr = s.client.remote
	ctx, cancel := s.checkContext()
	defer cancel()
	at := time.Now()
	id, err := s.g.cfg().Hooks.Codes.ExchangeCode(ctx, cred)
	s.accept(AuthCodeMsg, id, at, err, topic, env)
}
