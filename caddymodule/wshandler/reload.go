package wshandler

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth"
)

// DefaultDrainWindow is how long a gateway that no configuration keeps
// takes to close its sessions (1012), spread evenly. With the last close's
// write (write timeout, 10 s) and its answer (close grace, 2 s) it ends
// within the shipped systemd unit's stop timeout and Kubernetes' default
// grace period (30 s each), with room.
const DefaultDrainWindow = 10 * time.Second

// How the sessions live across reloads. A config reload builds new
// handlers before it cleans up the old ones. Each handler's Gateway is
// kept in gateways under its key: the server's name, the handler's name
// (its name field, else its position among the server's gatehouse_ws
// handlers) and a hash of what a live socket cannot change under it (the
// gateway's Backend and Transport but for its admission settings,
// wsauth.Transport.Fixed: origins, sub-protocols and compression change
// for the next upgrades only). A new handler whose key is held takes
// that Gateway and puts its own configuration in force on it
// (Reconfigure): the sessions go on, on the new app's verifier, identity
// server, revocation signal and policy. The old handler's Cleanup then
// only lets go. A Gateway no handler holds any more (its key changed, or
// the handler went) is drained: its sessions closed with 1012, spread
// over the drain window. A handler cannot see its route's matcher, so a
// changed matcher keeps the sessions as they are.
var (
	gateways = caddy.NewUsagePool()

	// positions counts the gatehouse_ws handlers provisioned on each
	// server, for the next one's position; the server's entry goes at
	// the first Cleanup of one of its handlers, after its provisioning.
	positionsMu sync.Mutex
	positions   = map[*caddyhttp.Server]int{}
)

// shared is a Gateway in gateways, with the handlers holding it: the last
// one's configuration is in force, and its drain window and logger serve
// the drain.
type shared struct {
	gw *wsauth.Gateway

	mu      sync.Mutex
	holders []holder
	window  time.Duration
	log     *zap.Logger

	drainOnce sync.Once
	drained   chan struct{} // closed when the drain has ended
}

type holder struct {
	h   *Handler
	cfg wsauth.Config
}

func newShared(gw *wsauth.Gateway) *shared { return &shared{gw: gw, drained: make(chan struct{})} }

// take adds h, whose gateway configuration is cfg, to the holders; a
// Gateway built before (keep) is reconfigured with cfg.
func (sh *shared) take(h *Handler, cfg wsauth.Config, keep bool) (wsauth.Reconfigured, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var r wsauth.Reconfigured
	if keep {
		var err error
		if r, err = sh.gw.Reconfigure(cfg); err != nil {
			return r, err
		}
	}
	sh.holders = append(sh.holders, holder{h, cfg})
	sh.window, sh.log = h.drainWindow(), h.logger
	return r, nil
}

// release removes h from the holders. When h's configuration was in force
// and another holder remains (a new configuration that failed to start,
// unwound, while the one before it goes on), the last remaining one's is
// put back.
func (sh *shared) release(h *Handler) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i := slices.IndexFunc(sh.holders, func(x holder) bool { return x.h == h })
	if i < 0 {
		return nil
	}
	last := i == len(sh.holders)-1
	sh.holders = slices.Delete(sh.holders, i, i+1)
	if !last || len(sh.holders) == 0 {
		return nil
	}
	back := sh.holders[len(sh.holders)-1]
	sh.window, sh.log = back.h.drainWindow(), back.h.logger
	_, err := sh.gw.Reconfigure(back.cfg)
	return err
}

// Destruct drains the Gateway once no handler holds it: on a goroutine of
// its own after a reload, so that the reload does not wait. When the
// process exits it waits for the drain, and starts every other pooled
// Gateway's at the same time, so that the exit takes one window, not one
// per handler.
func (sh *shared) Destruct() error {
	if !caddy.Exiting() {
		sh.startDrain(false)
		return nil
	}
	gateways.Range(func(_, v any) bool {
		v.(*shared).startDrain(true)
		return true
	})
	sh.startDrain(true)
	<-sh.drained // within the window, then the close handshakes (CloseGrace)
	return nil
}

// startDrain starts the drain, once; after a reload, the sessions it
// closes are counted then, in the reload's log line.
func (sh *shared) startDrain(exiting bool) {
	sh.drainOnce.Do(func() {
		sh.mu.Lock()
		window, log := sh.window, sh.log
		sh.mu.Unlock()
		n := sh.gw.Sessions()
		if exiting {
			log.Info("ws sessions draining", zap.String("reason", "exit"), zap.Int("sessions", n), zap.Duration("window", window))
		} else {
			reloadOutcome(0, 0, n)
		}
		contain.Go(log, "ws.drain", func() {
			defer close(sh.drained)
			sh.gw.Drain(websocket.CloseServiceRestart, window)
		}, nil)
	})
}

// provisionGateway takes the Gateway of the handler the config before held
// under the same key (see gateways), and puts cfg in force on it; or
// builds one.
func (h *Handler) provisionGateway(ctx caddy.Context, cfg wsauth.Config) error {
	if caddymodule.Validating() {
		// Nothing is served: the live gateways are left alone.
		gw, err := wsauth.New(cfg)
		if err != nil {
			return fmt.Errorf("gatehouse_ws: %w", err)
		}
		h.gw = gw
		return nil
	}
	key, err := h.poolKey(ctx, &cfg)
	if err != nil {
		return err
	}
	v, loaded, err := gateways.LoadOrNew(key, func() (caddy.Destructor, error) {
		gw, err := wsauth.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("gatehouse_ws: %w", err)
		}
		return newShared(gw), nil
	})
	if err != nil {
		return err
	}
	sh := v.(*shared)
	r, err := sh.take(h, cfg, loaded)
	if err != nil {
		_, _ = gateways.Delete(key)
		return fmt.Errorf("gatehouse_ws: %w", err)
	}
	h.gw, h.shared, h.key = sh.gw, sh, key
	h.tallied = ctx.Context
	tallyJoin(h.tallied, h.logger)
	if loaded {
		reloadOutcome(r.Sessions-r.Changed, r.Changed, 0)
	}
	return nil
}

// drainWindow is DrainWindow, or its deprecated name's value, or the
// default.
func (h *Handler) drainWindow() time.Duration {
	return cmp.Or(time.Duration(h.DrainWindow), time.Duration(h.ReloadDelay), DefaultDrainWindow)
}

// poolKey is the key of h's Gateway in gateways (see above): the server,
// the handler's name or position, and a hash of the configuration a live
// socket depends on.
func (h *Handler) poolKey(ctx caddy.Context, cfg *wsauth.Config) (string, error) {
	srv, _ := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	name := h.Name
	if name == "" {
		positionsMu.Lock()
		name = "#" + strconv.Itoa(positions[srv])
		positions[srv]++
		positionsMu.Unlock()
	}
	h.server = srv
	fixed, err := json.Marshal(struct {
		Backend   wsauth.Backend
		Transport wsauth.Transport
	}{cfg.Backend, cfg.Transport.Fixed()})
	if err != nil {
		return "", fmt.Errorf("gatehouse_ws: hashing the backend's configuration: %w", err)
	}
	sum := sha256.Sum256(fixed)
	var server string
	if srv != nil {
		server = srv.Name()
	}
	return "gatehouse_ws/" + strconv.Quote(server) + "/" + strconv.Quote(name) + "/" + hex.EncodeToString(sum[:16]), nil
}
