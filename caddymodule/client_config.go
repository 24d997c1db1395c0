package caddymodule

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/clients"
)

// Client is a registered OAuth client.
type Client struct {
	// ID is the client_id. Required, unique.
	ID string `json:"id,omitempty"`

	// Name is a display name. Optional.
	Name string `json:"name,omitempty"`

	// Public marks a client that cannot keep a secret (a native or browser
	// app): it sends its client_id alone and must have no secret. Default
	// false: a confidential client, which authenticates with a secret on
	// every token request.
	Public bool `json:"public,omitempty"`

	// SecretSHA256 are the SHA-256 digests of the client's secrets, each as
	// 64 hex digits (as `gatehouse client secret` prints it) or as the
	// base64 of the digest (as IdentityServer's Sha256() prints it). Several
	// allow a rotation. A confidential client needs at least one. Generate
	// secrets with `gatehouse client secret`: the digest is fast to check,
	// so a low-entropy secret could be guessed from a leaked digest.
	SecretSHA256 []string `json:"secret_sha256,omitempty"`

	// GrantTypes are the grant types the client may use: password,
	// refresh_token, client_credentials, authorization_code, implicit,
	// urn:ietf:params:oauth:grant-type:device_code. Default: none.
	GrantTypes []string `json:"grant_types,omitempty"`

	// Scopes are the scopes the client may request. Default: none.
	Scopes []string `json:"scopes,omitempty"`

	// DefaultScopes are granted when a request names no scope; each must be
	// among Scopes. Default: all of Scopes (filtered by what the user may
	// hold). An empty list ([]) is refused: leave the field out.
	DefaultScopes []string `json:"default_scopes,omitempty"`

	// Entitlements are the market-data entitlements of a client_credentials
	// client, each VENUE:feed (ASX:quotes, docs/entitlements.md): its
	// access tokens carry them as authorization_details, and a request
	// may ask for fewer. Only a client with the client_credentials grant
	// may have them; a user's come from the store (gatehouse user
	// entitle). Default: none. A change applies to tokens issued after the
	// config is loaded: those issued before keep theirs until they expire
	// (keep the client's access_token_lifetime short if that matters).
	Entitlements []string `json:"entitlements,omitempty"`

	// AccessTokenLifetime overrides the app's access_token_lifetime for
	// this client. Default: the app's.
	AccessTokenLifetime caddy.Duration `json:"access_token_lifetime,omitempty"`

	// RefreshToken overrides the fields of the app's refresh-token policy
	// that it sets. Default: the app's.
	RefreshToken *RefreshToken `json:"refresh_token,omitempty"`

	// AllowedOrigins are the browser origins (scheme://host[:port]) allowed
	// to call the token, revocation and userinfo endpoints with CORS. "*"
	// allows any origin. Default: none (no CORS).
	AllowedOrigins []string `json:"allowed_origins,omitempty"`

	// RedirectURIs are the registered redirect URIs of browser flows. A
	// loopback http://127.0.0.1/... URI matches any port (RFC 8252 §7.3).
	// Default: none.
	RedirectURIs []string `json:"redirect_uris,omitempty"`

	// PostLogoutRedirectURIs are where the end-session endpoint may send
	// the browser after a logout the client started (its
	// post_logout_redirect_uri), compared exactly as strings. Default:
	// none, and the browser stays on the identity server's logged-out
	// page.
	PostLogoutRedirectURIs []string `json:"post_logout_redirect_uris,omitempty"`

	// FrontchannelLogoutURI is loaded in a hidden iframe of the identity
	// server's logged-out page when a login session the client signed in
	// through ends (OpenID Connect Front-Channel Logout). The frame is a
	// third-party frame: browsers that block third-party cookies load it
	// without the client's cookies. Default: none.
	FrontchannelLogoutURI string `json:"frontchannel_logout_uri,omitempty"`

	// FrontchannelLogoutSessionRequired adds iss and sid (the session id
	// of the ID tokens' "sid") to the front-channel logout URI's query.
	// Default false.
	FrontchannelLogoutSessionRequired bool `json:"frontchannel_logout_session_required,omitempty"`

	// BackchannelLogoutURI receives, by a server-to-server POST
	// (application/x-www-form-urlencoded logout_token=...), a signed
	// logout token (typ logout+jwt, with sid and sub) when a login
	// session the client signed in through ends (OpenID Connect
	// Back-Channel Logout). Delivery is retried a few times with
	// timeouts, off the request path. Default: none.
	BackchannelLogoutURI string `json:"backchannel_logout_uri,omitempty"`

	// LogoutRevokesRefresh revokes, at logout, the refresh tokens (and
	// their access tokens, live sockets included) the client got through
	// the session that ends. Default false: offline access outlives the
	// browser session.
	LogoutRevokesRefresh bool `json:"logout_revokes_refresh,omitempty"`

	// Introspect allows the client to call the introspection endpoint.
	// Default false.
	Introspect bool `json:"introspect,omitempty"`

	// RequireConsent shows the user a consent page, naming the client and
	// the scopes it asks for, before the authorization endpoint answers
	// the client; the answer is remembered per user and client, for the
	// scopes allowed. Default false (a first-party client).
	RequireConsent bool `json:"require_consent,omitempty"`

	// AllowPlainPKCE lets the client send code_challenge_method=plain
	// (RFC 7636), which protects a code only where the challenge cannot be
	// seen. Default false: S256 only. Public clients must use PKCE.
	AllowPlainPKCE bool `json:"allow_plain_pkce,omitempty"`

	// AllowHTTPRedirect lets redirect_uris use plain http to a host other
	// than loopback (localhost, 127.0.0.0/8, ::1). Default false: such a
	// URI is refused at load, since the codes and tokens sent to it would
	// travel in the clear.
	AllowHTTPRedirect bool `json:"allow_http_redirect,omitempty"`

	// JWKS is a JWK Set (a JSON object with "keys") of the public keys the
	// client signs request objects with (OpenID Connect Core §6.1), RSA
	// for RS256 or P-256 for ES256, each with a kid. Default: none, and
	// only unsigned request objects are accepted from the client.
	JWKS json.RawMessage `json:"jwks,omitempty"`

	// AccessTokenSigningAlg is the "alg" of the client's access tokens:
	// RS256, ES256 or EdDSA, one of signing_keys algorithms. This
	// server's own property (no registration standard names one): every
	// resource that checks the client's tokens must accept the algorithm.
	// Default: the first of signing_keys algorithms (RS256 unless set).
	AccessTokenSigningAlg string `json:"access_token_signing_alg,omitempty"`

	// IDTokenSignedResponseAlg is the "alg" of the client's ID tokens
	// (OpenID Connect Dynamic Client Registration 1.0 §2): RS256, ES256 or
	// EdDSA, one of signing_keys algorithms; never "none". Default: the
	// first of signing_keys algorithms.
	IDTokenSignedResponseAlg string `json:"id_token_signed_response_alg,omitempty"`
}

// identityClient converts c.
func (c *Client) identityClient() (clients.Config, error) {
	hashes, err := parseDigests(c.SecretSHA256)
	if err != nil {
		return clients.Config{}, fmt.Errorf("client %q: secret_sha256: %w", c.ID, err)
	}
	pairs, err := entitle.Parse(c.Entitlements...)
	if err != nil {
		return clients.Config{}, fmt.Errorf("client %q: entitlements: %w", c.ID, err)
	}
	return clients.Config{
		ID:                  c.ID,
		Name:                c.Name,
		Public:              c.Public,
		SecretHashes:        hashes,
		GrantTypes:          c.GrantTypes,
		Scopes:              c.Scopes,
		DefaultScopes:       c.DefaultScopes,
		Entitlements:        pairs,
		AccessTokenLifetime: time.Duration(c.AccessTokenLifetime),
		Refresh:             c.RefreshToken.policy(),
		AllowedOrigins:      c.AllowedOrigins,
		RedirectURIs:        c.RedirectURIs,
		Introspect:          c.Introspect,
		RequireConsent:      c.RequireConsent,
		AllowPlainPKCE:      c.AllowPlainPKCE,
		AllowHTTPRedirect:   c.AllowHTTPRedirect,
		RequestObjectJWKS:   []byte(c.JWKS),

		AccessTokenSigningAlg:    c.AccessTokenSigningAlg,
		IDTokenSignedResponseAlg: c.IDTokenSignedResponseAlg,

		PostLogoutRedirectURIs:            c.PostLogoutRedirectURIs,
		FrontchannelLogoutURI:             c.FrontchannelLogoutURI,
		FrontchannelLogoutSessionRequired: c.FrontchannelLogoutSessionRequired,
		BackchannelLogoutURI:              c.BackchannelLogoutURI,
		LogoutRevokesRefresh:              c.LogoutRevokesRefresh,
	}, nil
}

// parseDigests decodes secret digests (see clients.ParseDigest).
func parseDigests(list []string) ([][]byte, error) {
	hashes := make([][]byte, 0, len(list))
	for i, s := range list {
		h, err := clients.ParseDigest(s)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		hashes = append(hashes, h)
	}
	return hashes, nil
}
