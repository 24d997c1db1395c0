package caddymodule

import (
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/verify"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// The token counters live as long as the process: every configuration
// registers the same ones in its own metrics registry (Caddy makes one per
// configuration), so a reload does not reset them. No label ever carries a
// token, a secret, a user name or a client id that is not configured.
var (
	tokensIssued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_tokens_issued_total",
		Help: "Token responses of the token endpoint, by grant type and client.",
	}, []string{"grant_type", "client_id"})
	tokenFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_token_failures_total",
		Help: "Failed token-endpoint requests, by OAuth error code.",
	}, []string{"error"})
	requestFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_request_failures_total",
		Help: "Failed requests of the identity endpoints, by endpoint and OAuth error code.",
	}, []string{"endpoint", "error"})
	lockouts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatehouse_lockouts_total",
		Help: "(user, source) pairs locked out after repeated failed logins.",
	})
	purged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatehouse_store_purged_total",
		Help: "Expired records (refresh families, access-token records, revocations) removed from the store.",
	})
)

// panics counts the panics contained (internal/contain) by component: a
// socket's goroutine, a background loop, a request. Any is a bug; the
// log holds its stack.
var panics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gatehouse_panics_total",
	Help: "Panics recovered, by component; each ended only its own unit of work (a socket, a request, a loop's pass).",
}, []string{"component"})

// RegisterPanics registers gatehouse_panics_total in reg and has every
// contained panic counted in it and logged through Caddy's logger (when
// the goroutine has no logger of its own).
func RegisterPanics(reg *prometheus.Registry) error {
	contain.SetCounter(func(component string) { panics.WithLabelValues(component).Inc() })
	contain.SetLogger(caddy.Log().Named("gatehouse"))
	return RegisterOnce(reg, panics)
}

// The metrics the verifier collector reads from the verifiers at scrape
// time.
var (
	verificationsDesc = prometheus.NewDesc("gatehouse_verifications_total",
		"Access-token checks, by outcome: cache_hit, verified, or the reason of a refusal.", []string{"outcome"}, nil)
	jwksFetchesDesc = prometheus.NewDesc("gatehouse_jwks_fetches_total",
		"Fetches of remote key sets, by result (success, failure).", []string{"result"}, nil)
	revocationsStaleDesc = prometheus.NewDesc("gatehouse_revocations_stale",
		"1 when the last refresh of a verifier's revocation list failed (the previous list still applies), else 0.", nil, nil)
	revocationNoticesDesc = prometheus.NewDesc("gatehouse_revocation_notices_total",
		"Reads of the revocation list on a notice from a shared store (a revocation on any instance, or the store's listener connecting again).", nil, nil)
)

// metricsOther replaces a label value outside the known set.
const metricsOther = "other"

// knownEndpoints are the endpoint label values counted by name.
var knownEndpoints = []string{
	"token", "introspection", "revocation", "userinfo", "jwks",
	"authorization", "login", "consent", "end-session", "check-session", "device-authorization", "device-verification",
}

// registerTokenMetrics registers the token counters in reg, once.
func registerTokenMetrics(reg *prometheus.Registry) error {
	return RegisterOnce(reg, tokensIssued, tokenFailures, requestFailures, lockouts, purged)
}

// RegisterOnce registers process-lifetime collectors in a configuration's
// registry: every configuration registers the same ones, so a reload resets
// no counter, and registering one a registry already holds is not an error.
func RegisterOnce(reg *prometheus.Registry, collectors ...prometheus.Collector) error {
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok && are.ExistingCollector == c {
				continue
			}
			return fmt.Errorf("registering gatehouse metrics: %w", err)
		}
	}
	return nil
}

// tokenMetrics counts the identity server's events; it implements
// identity.Metrics.
type tokenMetrics struct {
	clients map[string]bool // the configured client ids
}

func newTokenMetrics(clients []Client) *tokenMetrics {
	m := &tokenMetrics{clients: make(map[string]bool, len(clients))}
	for _, c := range clients {
		m.clients[c.ID] = true
	}
	return m
}

// TokenIssued counts a token response.
func (m *tokenMetrics) TokenIssued(grant, clientID string) {
	if !slices.Contains(oauth.GrantTypes, grant) {
		grant = metricsOther
	}
	if !m.clients[clientID] {
		clientID = metricsOther
	}
	tokensIssued.WithLabelValues(grant, clientID).Inc()
}

// RequestFailed counts a failed request of an endpoint; the token
// endpoint's also in gatehouse_token_failures_total.
func (m *tokenMetrics) RequestFailed(endpoint, code string) {
	if !slices.Contains(oauth.ErrorCodes, code) {
		code = metricsOther
	}
	if endpoint == "token" {
		tokenFailures.WithLabelValues(code).Inc()
	}
	if !slices.Contains(knownEndpoints, endpoint) {
		endpoint = metricsOther
	}
	requestFailures.WithLabelValues(endpoint, code).Inc()
}

// Lockout counts a lockout.
func (m *tokenMetrics) Lockout() { lockouts.Inc() }

// Purged counts the records a purge removed.
func (m *tokenMetrics) Purged(n int64) { purged.Add(float64(n)) }

// verifierCollector reports the counters of an app's verifiers and remote
// key set, read at scrape time.
type verifierCollector struct {
	verifiers []*verify.Verifier // distinct
	remote    *verify.RemoteKeySet
}

// newVerifierCollector collects the verifiers of a (the route verifier and
// the identity server's own, when they differ) and its remote key set.
func newVerifierCollector(a *App) *verifierCollector {
	c := &verifierCollector{remote: a.remote}
	for _, v := range []*verify.Verifier{a.verifier, a.serverVerifier()} {
		if v != nil && !slices.Contains(c.verifiers, v) {
			c.verifiers = append(c.verifiers, v)
		}
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *verifierCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- verificationsDesc
	ch <- jwksFetchesDesc
	ch <- revocationsStaleDesc
	ch <- revocationNoticesDesc
}

// Collect implements prometheus.Collector.
func (c *verifierCollector) Collect(ch chan<- prometheus.Metric) {
	outcomes := map[string]int64{"cache_hit": 0, "verified": 0}
	stale, notices := 0.0, int64(0)
	for _, v := range c.verifiers {
		s := v.Stats()
		notices += s.RevocationNotices
		outcomes["cache_hit"] += s.CacheHits
		outcomes["verified"] += s.CacheMisses
		for reason, n := range s.Refused {
			outcomes[string(reason)] += n
		}
		if v.RevocationsStale() {
			stale = 1
		}
	}
	for outcome, n := range outcomes {
		ch <- prometheus.MustNewConstMetric(verificationsDesc, prometheus.CounterValue, float64(n), outcome)
	}
	if c.remote != nil {
		attempts, failures := c.remote.Fetches()
		ch <- prometheus.MustNewConstMetric(jwksFetchesDesc, prometheus.CounterValue, float64(attempts-failures), "success")
		ch <- prometheus.MustNewConstMetric(jwksFetchesDesc, prometheus.CounterValue, float64(failures), "failure")
	}
	ch <- prometheus.MustNewConstMetric(revocationsStaleDesc, prometheus.GaugeValue, stale)
	ch <- prometheus.MustNewConstMetric(revocationNoticesDesc, prometheus.CounterValue, float64(notices))
}

// Interface guards
var (
	_ identity.Metrics     = (*tokenMetrics)(nil)
	_ prometheus.Collector = (*verifierCollector)(nil)
)
