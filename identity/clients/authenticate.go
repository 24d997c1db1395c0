package clients

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"

	"github.com/gatehouse/gatehouse/identity/oauth"
)

// dummySecretHash is compared against when the client is unknown, so an
// unknown client costs the same as a wrong secret.
var dummySecretHash = sha256.Sum256([]byte("gatehouse-unknown-client"))

// secretMatches compares a secret with the stored SHA-256 digests in
// constant time, whichever matches.
func secretMatches(secret string, hashes [][]byte) bool {
	sum := sha256.Sum256([]byte(secret))
	match := 0
	for _, h := range hashes {
		match |= subtle.ConstantTimeCompare(sum[:], h)
	}
	return match == 1
}

// credentials are the client credentials a request presents.
type credentials struct {
	id, secret string
	basic      bool // sent in the Authorization header
}

// readCredentials takes client_secret_basic or client_secret_post
// credentials, refusing a mix of both.
func readCredentials(r *http.Request, form url.Values) (credentials, *oauth.Error) {
	basicID, basicSecret, basic, perr := oauth.BasicCredentials(r)
	if perr != nil {
		return credentials{}, perr
	}
	formID, formSecret := form.Get("client_id"), form.Get("client_secret")
	if !basic {
		return credentials{id: formID, secret: formSecret}, nil
	}
	if formSecret != "" {
		return credentials{}, oauth.InvalidRequest("more than one client authentication method was used")
	}
	if formID != "" && formID != basicID {
		return credentials{}, oauth.InvalidRequest("client_id does not match the authenticated client")
	}
	return credentials{id: basicID, secret: basicSecret, basic: true}, nil
}

// Authenticate identifies and authenticates the client of a request:
// client_secret_basic, client_secret_post, or a public client's bare
// client_id (RFC 6749 §2.3). A confidential client must authenticate.
func (reg *Registry) Authenticate(r *http.Request, form url.Values) (*Client, *oauth.Error) {
	cred, perr := readCredentials(r, form)
	if perr != nil {
		return nil, perr
	}
	return reg.authenticate(cred)
}

func (reg *Registry) authenticate(cred credentials) (*Client, *oauth.Error) {
	if cred.id == "" {
		return nil, &oauth.Error{Code: oauth.ErrInvalidClient, Description: "client authentication failed", Cause: errors.New("no client_id")}
	}
	// RFC 6749 §5.2: 401 with WWW-Authenticate when the Authorization
	// header was used, 400 otherwise.
	fail := func(cause string) *oauth.Error {
		return &oauth.Error{Code: oauth.ErrInvalidClient, Description: "client authentication failed", Basic: cred.basic, Cause: errors.New(cause)}
	}
	c, ok := reg.clients[cred.id]
	switch {
	case !ok:
		// Same work as a wrong secret: no client enumeration by timing.
		secretMatches(cred.secret, [][]byte{dummySecretHash[:]})
		return nil, fail("unknown client")
	case c.Public && cred.secret != "":
		return nil, fail("public client sent a secret")
	case c.Public:
		return c, nil
	case cred.secret == "":
		return nil, fail("confidential client sent no secret")
	case !secretMatches(cred.secret, c.SecretHashes):
		return nil, fail("wrong client secret")
	}
	return c, nil
}

// Caller is who called an endpoint that API resources may call too
// (introspection): a client, or an API resource by name.
type Caller struct {
	Client   *Client // nil for an API resource
	Resource string  // the API resource's name; "" for a client
}

// AuthenticateCaller authenticates an API resource by name and secret, or
// else a client, as Authenticate does.
func (reg *Registry) AuthenticateCaller(r *http.Request, form url.Values) (Caller, *oauth.Error) {
	cred, perr := readCredentials(r, form)
	if perr != nil {
		return Caller{}, perr
	}
	if res, ok := reg.resources[cred.id]; ok {
		if cred.secret == "" || !secretMatches(cred.secret, res.SecretHashes) {
			return Caller{}, &oauth.Error{Code: oauth.ErrInvalidClient, Description: "client authentication failed", Basic: cred.basic, Cause: errors.New("wrong API resource secret")}
		}
		return Caller{Resource: res.Name}, nil
	}
	c, perr := reg.authenticate(cred)
	if perr != nil {
		return Caller{}, perr
	}
	return Caller{Client: c}, nil
}

// AuthenticateSecret authenticates a client by id and secret given apart
// from any HTTP request (a public client sends no secret), as the other
// front doors that take client credentials need (the message gateway's
// AuthOwner).
func (reg *Registry) AuthenticateSecret(id, secret string) (*Client, *oauth.Error) {
	return reg.authenticate(credentials{id: id, secret: secret})
}
