// Package identity is Gatehouse's OAuth 2.0 / OpenID Connect provider: the
// discovery document, the signing key set, and the token endpoint with its
// grants, written on net/http and golang-jwt/v5.
//
// A Server is built from a plain Config and a store.Store with NewServer and
// serves its endpoints through Endpoint. It never imports Caddy: the
// caddymodule package wires it into Caddy.
package identity
