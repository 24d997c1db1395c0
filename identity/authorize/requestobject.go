package authorize

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
)

// Bounds of request objects.
const (
	maxRequestObject = 16 << 10
	// requestObjectLeeway is the clock skew allowed on exp and nbf.
	requestObjectLeeway = 30 * time.Second
)

// mergeRequestObject reads a request object (OpenID Connect Core §6.1)
// and, if it is good, puts its parameters into p, where they win over the
// plain ones. It may be unsigned (alg none) or signed with RS256 or ES256
// by a key of the client's request-object key set; any other algorithm,
// HMAC included (client secrets are kept only as hashes), is refused.
// client_id and response_type, if in the object, must match the plain
// ones. A refused object changes nothing in p.
func (e *Endpoint) mergeRequestObject(p url.Values, raw string, c *clients.Client) *oauth.Error {
	claims, err := e.readRequestObject(raw, c)
	if err != nil {
		return &oauth.Error{Code: oauth.ErrInvalidRequestObject, Description: "the request object is invalid", Cause: err}
	}
	merged := url.Values{}
	for k, v := range claims {
		switch k {
		case "request", "request_uri":
			return &oauth.Error{Code: oauth.ErrInvalidRequestObject, Description: "a request object cannot hold " + k}
		case "client_id", "response_type":
			if sent := p.Get(k); sent != "" && sent != v {
				return &oauth.Error{Code: oauth.ErrInvalidRequestObject, Description: k + " differs from the request object's"}
			}
		}
		merged.Set(k, v)
	}
	for k, v := range merged {
		p[k] = v
	}
	p.Del("request")
	return nil
}

// readRequestObject checks a request object's signature and its iss, aud,
// exp and nbf when present, and returns its string and number members as
// parameters.
func (e *Endpoint) readRequestObject(raw string, c *clients.Client) (map[string]string, error) {
	if len(raw) > maxRequestObject {
		return nil, errors.New("request object too large")
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, errors.New("request object is not a compact JWS (an encrypted one is not supported)")
	}
	var head struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &head) != nil {
		return nil, errors.New("malformed request object header")
	}
	var payload []byte
	switch head.Alg {
	case "none":
		if parts[2] != "" {
			return nil, errors.New("unsigned request object with a signature")
		}
		if payload, err = base64.RawURLEncoding.DecodeString(parts[1]); err != nil {
			return nil, errors.New("malformed request object payload")
		}
	case "RS256", "ES256":
		key, err := requestKey(c, head.Alg, head.Kid)
		if err != nil {
			return nil, err
		}
		_, err = jwt.NewParser(jwt.WithValidMethods([]string{head.Alg}), jwt.WithoutClaimsValidation()).
			Parse(raw, func(*jwt.Token) (any, error) { return key, nil })
		if err != nil {
			return nil, fmt.Errorf("request object signature: %w", err)
		}
		payload, _ = base64.RawURLEncoding.DecodeString(parts[1]) // the parser decoded it
	default:
		return nil, fmt.Errorf("request object algorithm %q refused (none, RS256, ES256 only)", oauth.Truncate(head.Alg, 16))
	}
	return e.requestClaims(payload, c, head.Alg != "none")
}

// requestKey is the client's key that verifies alg, named by kid (or the
// only key of its type when kid is empty). Keys come from the client's
// configuration, never from the object.
func requestKey(c *clients.Client, alg, kid string) (crypto.PublicKey, error) {
	fits := func(k crypto.PublicKey) bool {
		switch k := k.(type) {
		case *rsa.PublicKey:
			return alg == "RS256"
		case *ecdsa.PublicKey:
			return alg == "ES256" && k.Curve == elliptic.P256()
		}
		return false
	}
	if kid != "" {
		if k, ok := c.RequestKeys[kid]; ok && fits(k) {
			return k, nil
		}
		return nil, fmt.Errorf("no %s request-object key %q registered for the client", alg, oauth.Truncate(kid, 64))
	}
	var found crypto.PublicKey
	for _, k := range c.RequestKeys {
		if fits(k) {
			if found != nil {
				return nil, errors.New("request object without kid, and the client has several keys")
			}
			found = k
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no %s request-object key registered for the client", alg)
	}
	return found, nil
}

// requestClaims reads a request object's payload: iss must be the client
// and aud the issuer when present (required of a signed object's aud, so
// that an object signed for another server is not replayed here), exp and
// nbf must hold when present.
func (e *Endpoint) requestClaims(payload []byte, c *clients.Client, signed bool) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errors.New("request object payload is not a JSON object")
	}
	now := e.cfg.Now()
	if iss, ok := m["iss"]; ok && iss != c.ID {
		return nil, errors.New("request object iss is not the client")
	}
	aud := m["aud"]
	var hasAud bool
	switch a := aud.(type) {
	case string:
		hasAud = a == e.cfg.Issuer
	case []any:
		hasAud = slices.Contains(a, any(e.cfg.Issuer))
	}
	if (signed || aud != nil) && !hasAud {
		return nil, errors.New("request object aud is not this issuer")
	}
	if v, ok := m["exp"]; ok {
		if n, err := numeric(v); err != nil || !now.Before(time.Unix(n, 0).Add(requestObjectLeeway)) {
			return nil, errors.New("request object expired")
		}
	}
	if v, ok := m["nbf"]; ok {
		if n, err := numeric(v); err != nil || now.Add(requestObjectLeeway).Before(time.Unix(n, 0)) {
			return nil, errors.New("request object not valid yet")
		}
	}
	out := map[string]string{}
	for k, v := range m {
		switch k {
		case "iss", "aud", "exp", "nbf", "iat", "jti":
			continue
		}
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			if n, err := v.Int64(); err == nil {
				out[k] = strconv.FormatInt(n, 10)
			}
		}
		// Objects (claims) and others are not supported, and ignored.
	}
	return out, nil
}

func numeric(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	return int64(f), err
}
