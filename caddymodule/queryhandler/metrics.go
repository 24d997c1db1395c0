package queryhandler

import (
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/caddymodule"
)

// The service's metrics live as long as the process; labels are bounded:
// tables are the catalog's (others count as "unknown"), endpoints and
// outcomes the service's fixed sets.
var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_query_requests_total",
		Help: "Query-service requests, by table, endpoint and outcome (ok or an error code).",
	}, []string{"table", "endpoint", "outcome"})
	durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gatehouse_query_request_duration_seconds",
		Help:    "Query-service request time, by endpoint.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8),
	}, []string{"endpoint"})
)

func registerMetrics(ctx caddy.Context) error {
	if err := caddymodule.RegisterPanics(ctx.GetMetricsRegistry()); err != nil {
		return err
	}
	return caddymodule.RegisterOnce(ctx.GetMetricsRegistry(), requests, durations)
}

// metrics implements queryproxy.Metrics. The children of the vectors are
// kept by their labels (bounded, as the labels are), so a request looks
// its counter up in one map instead of hashing its labels in the vector.
type metrics struct{}

type requestLabels struct{ table, endpoint, outcome string }

var (
	requestCounters sync.Map // requestLabels -> prometheus.Counter
	durationObs     sync.Map // endpoint -> prometheus.Observer
)

func (metrics) Request(table, endpoint, outcome string, elapsed time.Duration) {
	if endpoint == "" {
		endpoint = "none"
	}
	key := requestLabels{table, endpoint, outcome}
	c, ok := requestCounters.Load(key)
	if !ok {
		c, _ = requestCounters.LoadOrStore(key, requests.WithLabelValues(table, endpoint, outcome))
	}
	c.(prometheus.Counter).Inc()
	o, ok := durationObs.Load(endpoint)
	if !ok {
		o, _ = durationObs.LoadOrStore(endpoint, durations.WithLabelValues(endpoint))
	}
	o.(prometheus.Observer).Observe(elapsed.Seconds())
}
