package wshandler

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/wsauth"
	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// defaultHeaders are the identity headers when none are configured.
var defaultHeaders = map[string][]string{
	"X-Gatehouse-User-Id":   {"{http.auth.user.id}"},
	"X-Gatehouse-User-Name": {"{http.auth.user.name}"},
	"X-Gatehouse-Scopes":    {"{http.auth.user.scopes}"},
	"X-Gatehouse-Client-Id": {"{http.auth.user.client_id}"},
}

// config converts the handler's fields into the gateway's configuration,
// without the parts only Provision has (verifier, passwords, logger).
func (h *Handler) config() (wsauth.Config, error) {
	cfg := wsauth.Config{
		Backend: wsauth.Backend{
			Upstreams:      h.Upstreams,
			MessageTimeout: time.Duration(h.BackendMessageTimeout),
			TransactionIDs: h.TransactionIDs,
			Compression:    h.BackendCompression,
		},
		Transport: wsauth.Transport{
			Subprotocols: h.Subprotocols, AllowedOrigins: h.AllowedOrigins,
			DisableCompression: h.DisableCompression, MaxMessageBytes: cmp.Or(h.MaxMessageBytes, h.MaxMessageSize),
			SendQueueBytes: h.SendQueueBytes, SendQueue: h.SendQueue,
			PingInterval: time.Duration(h.PingInterval), IdleTimeout: time.Duration(h.IdleTimeout),
		},
		Auth: wsauth.Auth{
			Timeout: time.Duration(h.AuthTimeout), MaxMessages: h.AuthMaxMessages,
			MaxUnauthenticated: h.MaxUnauthenticated, ReturnAccessToken: h.ReturnAccessToken,
			RequireTLS: h.RequireTLS, WithheldScopes: h.WithheldScopes,
		},
		Live:         wsauth.Live{RecheckInterval: time.Duration(h.RecheckInterval), ExpiryGrace: time.Duration(h.ExpiryGrace)},
		Limits:       wsauth.Limits{Overrides: h.LimitOverrides},
		Profile:      zenith.Profile{Vendor: h.Vendor, Motif: h.Motif},
		TraceSubject: h.TraceSubject,
		Hooks: wsauth.Hooks{
			Secure: secureConnection,
			ClientIP: func(r *http.Request) string {
				ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
				return cmp.Or(ip, r.RemoteAddr)
			},
		},
	}
	if h.Limits != nil {
		cfg.Limits.Default = *h.Limits
	}
	if h.Policy != nil {
		if err := h.Policy.Validate(); err != nil {
			return cfg, fmt.Errorf("gatehouse_ws: policy: %w", err)
		}
		p, err := policy.New(*h.Policy)
		if err != nil {
			return cfg, fmt.Errorf("gatehouse_ws: policy: %w", err)
		}
		cfg.Policy = p
	}
	venues, err := h.venues()
	if err != nil {
		return cfg, err
	}
	cfg.Venues = venues
	headers := h.Headers
	if headers == nil {
		headers = defaultHeaders
	}
	headerPolicy, err := verify.NewHeaderPolicy(headers, nil, false)
	if err != nil {
		return cfg, fmt.Errorf("gatehouse_ws: headers: %w", err)
	}
	pass := h.PassAuthorization
	cfg.Hooks.BackendHeaders = func(hdr http.Header, id wsauth.Identity) {
		headerPolicy.Apply(hdr, identityExpander(id))
		if pass && id.Token != "" {
			hdr.Set("Authorization", "Bearer "+id.Token)
		}
	}
	return cfg, nil
}

// secureConnection reports whether the client reached the site over TLS:
// the connection itself, or a TLS-ending proxy in the server's
// trusted_proxies that says X-Forwarded-Proto: https. The header from any
// other client counts for nothing.
func secureConnection(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool)
	if !trusted {
		return false
	}
	v := r.Header.Values("X-Forwarded-Proto")
	return len(v) > 0 && strings.EqualFold(strings.TrimSpace(v[len(v)-1]), "https")
}

// identityExpander expands the identity placeholders of a header template.
func identityExpander(id wsauth.Identity) func(string) string {
	repl := caddy.NewReplacer()
	repl.Set("http.auth.user.id", id.Subject)
	repl.Set("http.auth.user.client_id", id.ClientID)
	repl.Set("http.auth.user.name", id.DisplayName)
	repl.Set("http.auth.user.scopes", strings.Join(id.Scopes, " "))
	if !id.Expiry.IsZero() {
		repl.Set("http.auth.user.exp", strconv.FormatInt(id.Expiry.Unix(), 10))
	}
	return func(template string) string { return repl.ReplaceAll(template, "") }
}
