package identity

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// client is a registered client with its effective policy.
type client struct {
	Client
	accessLifetime time.Duration
	refresh        RefreshPolicy
	grants         map[string]bool
	scopes         map[string]bool
	origins        map[string]bool
	anyOrigin      bool
}

func (c *client) allowsGrant(g string) bool { return c.grants[g] }

func (c *client) allowsOrigin(o string) bool { return c.anyOrigin || c.origins[o] }

// newClients checks the configured clients and fills their defaults.
func newClients(cfg *Config) (map[string]*client, error) {
	clients := make(map[string]*client, len(cfg.Clients))
	for _, cc := range cfg.Clients {
		if cc.ID == "" {
			return nil, errors.New("client with an empty id")
		}
		if _, dup := clients[cc.ID]; dup {
			return nil, fmt.Errorf("client %q registered twice", cc.ID)
		}
		if cc.Public && len(cc.SecretHashes) > 0 {
			return nil, fmt.Errorf("client %q: a public client has no secret", cc.ID)
		}
		if !cc.Public && len(cc.SecretHashes) == 0 {
			return nil, fmt.Errorf("client %q: a confidential client needs a secret", cc.ID)
		}
		for _, h := range cc.SecretHashes {
			if len(h) != sha256.Size {
				return nil, fmt.Errorf("client %q: a secret hash must be a SHA-256 digest", cc.ID)
			}
		}
		c := &client{Client: cc, grants: set(cc.GrantTypes), scopes: set(cc.Scopes), origins: map[string]bool{}}
		for g := range c.grants {
			if !knownGrant(g) {
				return nil, fmt.Errorf("client %q: unknown grant type %q", cc.ID, g)
			}
		}
		if cc.Public && c.grants[GrantClientCredentials] {
			return nil, fmt.Errorf("client %q: a public client cannot use client_credentials", cc.ID)
		}
		for _, s := range cc.DefaultScopes {
			if !c.scopes[s] {
				return nil, fmt.Errorf("client %q: default scope %q is not among its scopes", cc.ID, s)
			}
		}
		if len(c.DefaultScopes) == 0 {
			c.DefaultScopes = slices.Clone(cc.Scopes)
		}
		for _, o := range cc.AllowedOrigins {
			if o == "*" {
				c.anyOrigin = true
				continue
			}
			if err := checkOrigin(o); err != nil {
				return nil, fmt.Errorf("client %q: allowed origin: %w", cc.ID, err)
			}
			c.origins[o] = true
		}
		c.accessLifetime = cc.AccessTokenLifetime
		if c.accessLifetime <= 0 {
			c.accessLifetime = cfg.AccessTokenLifetime
		}
		c.refresh = cfg.Refresh
		if cc.Refresh.Grace != 0 {
			c.refresh.Grace = cc.Refresh.Grace
		}
		if cc.Refresh.SlidingLifetime > 0 {
			c.refresh.SlidingLifetime = cc.Refresh.SlidingLifetime
		}
		if cc.Refresh.AbsoluteLifetime > 0 {
			c.refresh.AbsoluteLifetime = cc.Refresh.AbsoluteLifetime
		}
		clients[cc.ID] = c
	}
	return clients, nil
}

func knownGrant(g string) bool {
	switch g {
	case GrantPassword, GrantRefreshToken, GrantClientCredentials, GrantAuthorizationCode, GrantImplicit, GrantDeviceCode:
		return true
	}
	return false
}

// checkOrigin accepts a serialized origin: scheme://host[:port], nothing more.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an origin (scheme://host[:port])", o)
	}
	return nil
}

func set(items []string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}

// dummySecretHash is compared against when the client is unknown, so an
// unknown client costs the same as a wrong secret.
var dummySecretHash = sha256.Sum256([]byte("gatehouse-unknown-client"))

// authenticateClient identifies and authenticates the client of a token
// request: client_secret_basic, client_secret_post, or a public client's
// bare client_id (RFC 6749 §2.3). A confidential client must authenticate.
func (s *Server) authenticateClient(r *http.Request, form url.Values) (*client, *Error) {
	basicID, basicSecret, basic, perr := basicCredentials(r)
	if perr != nil {
		return nil, perr
	}
	formID, formSecret := form.Get("client_id"), form.Get("client_secret")
	id, secret := formID, formSecret
	if basic {
		if formSecret != "" {
			return nil, invalidRequest("more than one client authentication method was used")
		}
		if formID != "" && formID != basicID {
			return nil, invalidRequest("client_id does not match the authenticated client")
		}
		id, secret = basicID, basicSecret
	}
	if id == "" {
		return nil, &Error{Code: ErrCodeInvalidClient, Description: "client authentication failed", Cause: errors.New("no client_id")}
	}
	// RFC 6749 §5.2: 401 with WWW-Authenticate when the Authorization
	// header was used, 400 otherwise.
	fail := &Error{Code: ErrCodeInvalidClient, Description: "client authentication failed", Basic: basic}
	c, ok := s.clients[id]
	if !ok {
		// Same work as a wrong secret: no client enumeration by timing.
		sum := sha256.Sum256([]byte(secret))
		subtle.ConstantTimeCompare(sum[:], dummySecretHash[:])
		fail.Cause = errors.New("unknown client")
		return nil, fail
	}
	if c.Public {
		if secret != "" {
			fail.Cause = errors.New("public client sent a secret")
			return nil, fail
		}
		return c, nil
	}
	if secret == "" {
		fail.Cause = errors.New("confidential client sent no secret")
		return nil, fail
	}
	sum := sha256.Sum256([]byte(secret))
	match := 0
	for _, h := range c.SecretHashes {
		match |= subtle.ConstantTimeCompare(sum[:], h)
	}
	if match != 1 {
		fail.Cause = errors.New("wrong client secret")
		return nil, fail
	}
	return c, nil
}

// basicCredentials reads client_secret_basic credentials. RFC 6749 §2.3.1:
// id and secret are form-urlencoded before Base64.
func basicCredentials(r *http.Request) (id, secret string, ok bool, err *Error) {
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return "", "", false, nil
	}
	if len(h) > 1 {
		return "", "", false, invalidRequest("more than one Authorization header")
	}
	scheme, cred, found := strings.Cut(h[0], " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false, &Error{Code: ErrCodeInvalidClient, Description: "unsupported client authentication scheme", Basic: true}
	}
	raw, decErr := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if decErr != nil {
		return "", "", false, &Error{Code: ErrCodeInvalidClient, Description: "malformed Basic credentials", Basic: true}
	}
	rawID, rawSecret, found := strings.Cut(string(raw), ":")
	if !found {
		return "", "", false, &Error{Code: ErrCodeInvalidClient, Description: "malformed Basic credentials", Basic: true}
	}
	id, e1 := url.QueryUnescape(rawID)
	secret, e2 := url.QueryUnescape(rawSecret)
	if e1 != nil || e2 != nil || id == "" {
		return "", "", false, &Error{Code: ErrCodeInvalidClient, Description: "malformed Basic credentials", Basic: true}
	}
	return id, secret, true, nil
}
