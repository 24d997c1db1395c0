package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
)

func init() {
	caddy.RegisterModule(HealthHandler{})
	httpcaddyfile.RegisterHandlerDirective("gatehouse_health", func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		handler := new(HealthHandler)
		err := handler.UnmarshalCaddyfile(h.Dispenser)
		return handler, err
	})
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_health", httpcaddyfile.Before, "basic_auth")
}

// HealthHandler answers a liveness or a readiness probe.
//
// Liveness ("live") depends on nothing outside the process: 200 whenever the process
// serves HTTP. Readiness ("ready") runs the gatehouse app's checks: the store (a read)
// and the signing keys (a key signs now), or, verifying another issuer's tokens, its
// key set (fetched); and each gatehouse_ws backend (a TCP connection to an upstream)
// and gatehouse_query engine (a round trip to its database or upstream), under the
// name its readiness subdirective gives, which may mark it optional: an optional
// check's failure is reported and leaves the instance ready (an outage of a shared
// market-data backend need not take the identity server out of a balancer). The
// results are kept a second, so probes cost the backends little. The body is JSON
// naming each check and its outcome, never an address or an error's text (the log has
// those, at Warn): 200 when every required check passed, 503 when one failed.
type HealthHandler struct {
	// Kind is "live" or "ready". Required.
	Kind string `json:"kind,omitempty"`

	app *App
	log *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (HealthHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_health",
		New: func() caddy.Module { return new(HealthHandler) },
	}
}

// Provision finds the gatehouse app for a readiness probe.
func (h *HealthHandler) Provision(ctx caddy.Context) error {
	h.log = ctx.Logger()
	switch h.Kind {
	case "live":
		return nil
	case "ready":
	default:
		return fmt.Errorf("gatehouse_health: kind %q: live or ready", h.Kind)
	}
	appIface, err := ctx.AppIfConfigured("gatehouse")
	if err != nil {
		return fmt.Errorf("gatehouse_health ready needs the gatehouse app (the gatehouse global option): %w", err)
	}
	h.app = appIface.(*App)
	return nil
}

// Validate checks the kind.
func (h *HealthHandler) Validate() error {
	if h.Kind != "live" && h.Kind != "ready" {
		return fmt.Errorf("gatehouse_health: kind %q: live or ready", h.Kind)
	}
	return nil
}

// healthBody is a probe's answer.
type healthBody struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
	Failed []string          `json:"failed,omitempty"`
}

// ServeHTTP answers the probe.
func (h *HealthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return nil
	}
	body, status := healthBody{Status: "live"}, http.StatusOK
	if h.Kind == "ready" {
		ready, results := h.app.readiness.run(r.Context(), h.log)
		body = healthBody{Status: "ready", Checks: map[string]string{}}
		for _, c := range results {
			switch {
			case c.ok:
				body.Checks[c.name] = "ok"
			case c.required:
				body.Checks[c.name] = "failed"
				body.Failed = append(body.Failed, c.name)
			default:
				body.Checks[c.name] = "failed (optional)"
			}
		}
		if !ready {
			body.Status, status = "not ready", http.StatusServiceUnavailable
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write(append(b, '\n'))
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler. Syntax:
//
//	gatehouse_health live|ready
func (h *HealthHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	kind, err := cfutil.OneArg(d)
	if err != nil {
		return err
	}
	h.Kind = kind
	return cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_health: "), func(string) error { return cfutil.Unrecognized(d) })
}

// The bounds of readiness checks.
const (
	readinessCacheFor = time.Second     // results are kept this long
	readinessTimeout  = 2 * time.Second // one check's time limit
)

// readiness is the app's readiness checks and their last results.
type readiness struct {
	mu      sync.Mutex
	checks  []readinessCheck
	at      time.Time // when results were taken
	results []checkResult
}

type readinessCheck struct {
	name     string
	required bool
	check    func(context.Context) error
}

type checkResult struct {
	name     string
	required bool
	ok       bool
}

// AddReadinessCheck adds a named check to the app's readiness probe
// (gatehouse_health ready) and returns its name: name, or name_2, name_3... when
// the name is taken. A required check's failure makes the instance not ready; an
// optional one's is reported.
func (a *App) AddReadinessCheck(name string, required bool, check func(context.Context) error) string {
	if a.readiness == nil {
		a.readiness = new(readiness)
	}
	return a.readiness.add(name, required, check)
}

func (r *readiness) add(name string, required bool, check func(context.Context) error) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	base := name
	for i := 2; slices.ContainsFunc(r.checks, func(c readinessCheck) bool { return c.name == name }); i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	r.checks = append(r.checks, readinessCheck{name: name, required: required, check: check})
	r.at = time.Time{}
	return name
}

// run gives the checks' results, taken at most readinessCacheFor ago: one caller
// runs them, each within readinessTimeout, the others wait for its results.
func (r *readiness) run(ctx context.Context, log *zap.Logger) (bool, []checkResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at.IsZero() || time.Since(r.at) >= readinessCacheFor {
		r.results = r.results[:0]
		for _, c := range r.checks {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readinessTimeout)
			err := c.check(cctx)
			cancel()
			if err != nil {
				log.Warn("readiness check failed", zap.String("check", c.name), zap.Bool("required", c.required), zap.Error(err))
			}
			r.results = append(r.results, checkResult{name: c.name, required: c.required, ok: err == nil})
		}
		r.at = time.Now()
	}
	ready := true
	for _, c := range r.results {
		if c.required && !c.ok {
			ready = false
		}
	}
	return ready, slices.Clone(r.results)
}

// addOwnReadinessChecks adds the app's checks: the store and the signing keys, or the
// remote key set.
func (a *App) addOwnReadinessChecks() {
	if a.readiness == nil {
		a.readiness = new(readiness)
	}
	if a.srv != nil {
		srv := a.srv
		a.AddReadinessCheck("store", true, srv.CheckStore)
		a.AddReadinessCheck("signing_keys", true, func(context.Context) error { return srv.CheckSigningKey() })
	}
	if a.remote != nil {
		remote := a.remote
		a.AddReadinessCheck("jwks", true, func(context.Context) error { return remote.Ready() })
	}
	if a.srv == nil && a.remote == nil && a.store != nil {
		st := a.store
		a.AddReadinessCheck("store", true, func(ctx context.Context) error {
			_, err := st.Counter(ctx, "readiness-probe")
			return err
		})
	}
}

// Interface guards
var (
	_ caddy.Provisioner           = (*HealthHandler)(nil)
	_ caddy.Validator             = (*HealthHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*HealthHandler)(nil)
	_ caddyfile.Unmarshaler       = (*HealthHandler)(nil)
)
