package logout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Defaults of NotifierConfig.
const (
	DefaultBackchannelTimeout  = 5 * time.Second
	DefaultBackchannelAttempts = 3
	DefaultBackchannelBackoff  = time.Second
	DefaultBackchannelWorkers  = 4
	DefaultBackchannelQueue    = 1024
)

// NotifierConfig configures a Notifier.
type NotifierConfig struct {
	// Client sends the requests. Default: an http.Client that follows no
	// redirect (a logout token goes to the registered URI only).
	Client *http.Client
	// Timeout bounds one attempt. Default 5s.
	Timeout time.Duration
	// Attempts is how many times a delivery is tried. Default 3.
	Attempts int
	// Backoff is the wait before the second attempt, doubled before each
	// next one. Default 1s.
	Backoff time.Duration
	// Workers is how many deliveries run at once. Default 4.
	Workers int
	// Queue bounds the deliveries waiting; past it a delivery is dropped
	// and logged. Default 1024.
	Queue int
	// Logger receives delivery failures (Warn) and successes (Debug).
	Logger *zap.Logger
}

// delivery is one logout token for one client.
type delivery struct {
	uri, clientID, jti, token string
}

// Notifier delivers logout tokens to back-channel logout URIs (OpenID
// Connect Back-Channel Logout 1.0 §2.5), off the request path: a bounded
// queue, a few workers, each delivery tried a bounded number of times,
// each attempt with a timeout. Close stops it without waiting for more
// than the attempts in flight, which its cancellation ends at once.
type Notifier struct {
	cfg    NotifierConfig
	queue  chan delivery
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// NewNotifier starts a notifier.
func NewNotifier(cfg NotifierConfig) *Notifier {
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultBackchannelTimeout
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultBackchannelAttempts
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackchannelBackoff
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultBackchannelWorkers
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultBackchannelQueue
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	n := &Notifier{cfg: cfg, queue: make(chan delivery, cfg.Queue)}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for range cfg.Workers {
		// A panic in a delivery drops that delivery; the worker goes on.
		n.wg.Add(1)
		contain.Go(cfg.Logger, "identity.backchannel", func() {
			defer n.wg.Done()
			contain.Loop(n.ctx, cfg.Logger, "identity.backchannel", func(context.Context) { n.work() })
		}, nil)
	}
	return n
}

// Notify queues the delivery of token (whose id is jti) to uri for
// clientID. It never blocks: false when the queue is full or the notifier
// closed, and the delivery is dropped (logged).
func (n *Notifier) Notify(uri, clientID, jti, token string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		select {
		case n.queue <- delivery{uri: uri, clientID: clientID, jti: jti, token: token}:
			return true
		default:
		}
	}
	n.cfg.Logger.Warn("back-channel logout dropped: queue full or closing",
		zap.String("client_id", clientID), zap.String("jti", jti))
	return false
}

// Close stops the notifier: attempts in flight are cancelled, deliveries
// waiting are dropped (each logged), and Close returns when the workers
// have.
func (n *Notifier) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	n.mu.Unlock()
	n.cancel()
	n.wg.Wait()
	for {
		select {
		case d := <-n.queue:
			n.cfg.Logger.Warn("back-channel logout not delivered: server closing",
				zap.String("client_id", d.clientID), zap.String("jti", d.jti))
		default:
			return
		}
	}
}

func (n *Notifier) work() {
	for {
		select {
		case <-n.ctx.Done():
			return
		case d := <-n.queue:
			n.deliver(d)
		}
	}
}

// errPermanent marks an answer not worth another attempt.
var errPermanent = errors.New("refused")

// deliver tries d up to Attempts times, waiting Backoff, then twice as
// long, between attempts.
func (n *Notifier) deliver(d delivery) {
	wait := n.cfg.Backoff
	var err error
	for attempt := 1; attempt <= n.cfg.Attempts; attempt++ {
		if err = n.post(d); err == nil {
			n.cfg.Logger.Debug("back-channel logout delivered", zap.String("client_id", d.clientID),
				zap.String("jti", d.jti), zap.Int("attempt", attempt))
			return
		}
		if errors.Is(err, errPermanent) || attempt == n.cfg.Attempts {
			break
		}
		select {
		case <-n.ctx.Done():
			err = fmt.Errorf("%w (server closing)", err)
			attempt = n.cfg.Attempts
		case <-time.After(wait):
			wait *= 2
		}
	}
	n.cfg.Logger.Warn("back-channel logout not delivered", zap.String("client_id", d.clientID),
		zap.String("jti", d.jti), zap.Error(err))
}

// post makes one attempt: 2xx is delivered; 400 (the RP refused the
// token, §2.8) and other 4xx but 408 and 429 are not tried again.
func (n *Notifier) post(d delivery) error {
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Timeout)
	defer cancel()
	body := url.Values{"logout_token": {d.token}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.uri, strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cache-Control", "no-store")
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		return err // the error names the URI, never the body
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout &&
		resp.StatusCode != http.StatusTooManyRequests:
		return fmt.Errorf("%w: status %d", errPermanent, resp.StatusCode)
	}
	return fmt.Errorf("status %d", resp.StatusCode)
}
