package queryhandler

import (
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
	return caddymodule.RegisterOnce(ctx.GetMetricsRegistry(), requests, durations)
}

// metrics implements queryproxy.Metrics.
type metrics struct{}

func (metrics) Request(table, endpoint, outcome string, elapsed time.Duration) {
	if endpoint == "" {
		endpoint = "none"
	}
	requests.WithLabelValues(table, endpoint, outcome).Inc()
	durations.WithLabelValues(endpoint).Observe(elapsed.Seconds())
}
