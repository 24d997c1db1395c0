package caddymodule

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestTokenMetricsLabels checks that label values stay in bounded sets: a
// client id that is not configured, an unknown grant or error code count
// as "other".
func TestTokenMetricsLabels(t *testing.T) {
	m := newTokenMetrics([]Client{{ID: "svc"}})
	tests := []struct {
		name   string
		count  func()
		metric prometheus.Counter
	}{
		{"configured client", func() { m.TokenIssued("client_credentials", "svc") }, tokensIssued.WithLabelValues("client_credentials", "svc")},
		{"unconfigured client", func() { m.TokenIssued("password", "alice's-password") }, tokensIssued.WithLabelValues("password", metricsOther)},
		{"unknown grant", func() { m.TokenIssued("urn:evil", "svc") }, tokensIssued.WithLabelValues(metricsOther, "svc")},
		{"known error", func() { m.RequestFailed("token", "invalid_grant") }, tokenFailures.WithLabelValues("invalid_grant")},
		{"unknown error", func() { m.RequestFailed("token", "eyJhbGciOi...") }, tokenFailures.WithLabelValues(metricsOther)},
		{"known error by endpoint", func() { m.RequestFailed("introspection", "invalid_client") }, requestFailures.WithLabelValues("introspection", "invalid_client")},
		{"unknown endpoint", func() { m.RequestFailed("/etc/passwd", "invalid_client") }, requestFailures.WithLabelValues(metricsOther, "invalid_client")},
		{"purge", func() { m.Purged(1) }, purged},
		{"lockout", m.Lockout, lockouts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := counterValue(t, tt.metric)
			tt.count()
			if got := counterValue(t, tt.metric); got != before+1 {
				t.Errorf("counter %v, want %v", got, before+1)
			}
		})
	}
}

// TestVerifierCollector gathers the collector through a pedantic registry
// (as Caddy's), which checks it against its descriptions, and sums two
// verifiers.
func TestVerifierCollector(t *testing.T) {
	is := verifytest.NewIssuer(t, testIssuerURL, time.Now)
	var vs []*verify.Verifier
	for range 2 {
		v, err := verify.New(context.Background(), verify.Config{Issuer: is.URL, Keys: is})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
		good := is.Token("alice", "a")
		for _, tok := range []string{good, good, "not-a-token"} {
			v.Verify(context.Background(), tok)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if err := registerTokenMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if err := registerTokenMetrics(reg); err != nil {
		t.Errorf("registering the token metrics again (a second app in one registry): %v", err)
	}
	if err := reg.Register(&verifierCollector{verifiers: vs}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "/" + l.GetValue()
			}
			got[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"gatehouse_verifications_total/verified":  2,
		"gatehouse_verifications_total/cache_hit": 2,
		"gatehouse_verifications_total/malformed": 2,
		"gatehouse_revocations_stale":             0,
		"gatehouse_revocation_notices_total":      0, // a SQLite store sends none
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", key, v, ok, want)
		}
	}
	if _, ok := got["gatehouse_jwks_fetches_total/success"]; ok {
		t.Error("jwks fetches reported without a remote key set")
	}
}
