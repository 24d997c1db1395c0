package wshandler

import (
	"slices"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/wsauth"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// The gateway's counters live as long as the process, like the app's:
// every configuration registers the same ones, so a reload resets none.
// Labels are bounded: states, methods, results, lapse reasons and limit
// kinds are the gateway's fixed sets, controllers the protocol's (others
// count as "other").
var (
	sessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gatehouse_ws_sessions",
		Help: "Live message-gateway sessions, by state.",
	}, []string{"state"})
	authResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_ws_auth_total",
		Help: "Message-gateway authentication attempts, by method and result.",
	}, []string{"method", "result"})
	relayed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_ws_messages_relayed_total",
		Help: "Client messages forwarded to the backend, by controller.",
	}, []string{"controller"})
	denied = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_ws_messages_denied_total",
		Help: "Client messages refused by the policy or before authentication, by controller.",
	}, []string{"controller"})
	delivered = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatehouse_ws_messages_delivered_total",
		Help: "Backend messages written to clients.",
	})
	slowClients = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatehouse_ws_slow_clients_total",
		Help: "Clients closed because they stopped reading.",
	})
	reauthentications = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatehouse_ws_reauthentications_total",
		Help: "Successful re-authentications of authenticated sessions (same subject).",
	})
	lapses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_ws_lapses_total",
		Help: "Sessions whose authority lapsed, by reason (expired, revoked).",
	}, []string{"reason"})
	limited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_ws_limited_total",
		Help: "Client messages refused by an entitlement limit, by kind (subscriptions, rate).",
	}, []string{"kind"})
	subscriptions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gatehouse_ws_subscriptions",
		Help: "Client subscriptions the gateway tracks (lapsed sessions' included), by controller.",
	}, []string{"controller"})
	reloadSessions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_ws_reload_sessions_total",
		Help: "Sessions a config reload kept as they were (kept), kept and refitted to the new configuration (changed), or closed with 1012 (closed).",
	}, []string{"outcome"})
)

func registerMetrics(ctx caddy.Context) error {
	if err := caddymodule.RegisterPanics(ctx.GetMetricsRegistry()); err != nil {
		return err
	}
	return caddymodule.RegisterOnce(ctx.GetMetricsRegistry(), sessions, authResults, relayed, denied, delivered, slowClients,
		reauthentications, lapses, limited, subscriptions, reloadSessions)
}

// metrics implements wsauth.Metrics with the counters above.
type metrics struct{}

func controllerLabel(c string) string {
	if slices.Contains(zenith.Controllers[:], c) {
		return c
	}
	return "other"
}

// counterCache holds a CounterVec's child per controller label, looked up
// once: Relayed is counted for every batch of messages a client sends, and
// a WithLabelValues (hashing the label, a lookup under the vector's lock)
// each time shows in profiles. Each child is created on first use, so
// /metrics shows the same series as without the cache.
type counterCache struct {
	vec *prometheus.CounterVec
	c   [len(zenith.Controllers) + 1]atomic.Pointer[prometheus.Counter] // "other" last
}

func (cc *counterCache) get(controller string) prometheus.Counter {
	i := slices.Index(zenith.Controllers[:], controller)
	if i < 0 {
		i, controller = len(zenith.Controllers), "other"
	}
	if p := cc.c[i].Load(); p != nil {
		return *p
	}
	c := cc.vec.WithLabelValues(controller)
	cc.c[i].Store(&c)
	return c
}

var (
	relayedBy = counterCache{vec: relayed}
	deniedBy  = counterCache{vec: denied}
)

func (metrics) Sessions(state wsauth.State, delta int) {
	sessions.WithLabelValues(string(state)).Add(float64(delta))
}
func (metrics) Auth(method wsauth.AuthMethod, result string) {
	authResults.WithLabelValues(string(method), result).Inc()
}
func (metrics) Relayed(controller string, n int) { relayedBy.get(controller).Add(float64(n)) }
func (metrics) Denied(controller string)         { deniedBy.get(controller).Inc() }
func (metrics) Delivered(n int)                  { delivered.Add(float64(n)) }
func (metrics) SlowClient()                      { slowClients.Inc() }
func (metrics) Reauthenticated()                 { reauthentications.Inc() }
func (metrics) Lapsed(reason string)             { lapses.WithLabelValues(reason).Inc() }
func (metrics) Limited(kind string)              { limited.WithLabelValues(kind).Inc() }
func (metrics) Subscriptions(controller string, delta int) {
	subscriptions.WithLabelValues(controllerLabel(controller)).Add(float64(delta))
}

var _ wsauth.Metrics = metrics{}
