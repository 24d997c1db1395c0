package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Revocation notices (store.RevocationNotifier): every revocation NOTIFYs
// revocationChannel in the transaction that writes it, so PostgreSQL
// delivers the notice when, and only if, the revocation commits; one
// connection per Store, outside the pool, LISTENs to the channel and
// passes each notice to the subscribers (the verifiers), which then read
// the revocations at once instead of at their next poll.

// revocationChannel is the channel revocations are notified on. The
// payload is empty: a notice only says "read the revocations now".
const revocationChannel = "gatehouse_revocations"

// Timing of the listener.
const (
	// listenIdle is how long the listener waits for a notice before it
	// checks its connection with an empty statement: a connection that
	// died without a word (a host gone, a dropped route) is found within
	// listenIdle plus listenPingTimeout.
	listenIdle        = 15 * time.Second
	listenPingTimeout = 5 * time.Second
	// The pause before connecting again grows from listenMinBackoff,
	// doubling at each failure up to listenMaxBackoff, with jitter; a
	// connection that held for listenStable starts again from the least.
	listenMinBackoff = 100 * time.Millisecond
	listenMaxBackoff = 5 * time.Second
	listenStable     = 30 * time.Second
	// listenConnectTimeout bounds one attempt to connect.
	listenConnectTimeout = 10 * time.Second
	// listenCloseTimeout bounds the goodbye to the server.
	listenCloseTimeout = time.Second
)

// notifyQuery sends a revocation notice; it runs inside the transaction of
// the revocation, so the notice goes out with the commit.
const notifyQuery = `SELECT pg_notify('` + revocationChannel + `', '')`

// notifyTx sends a revocation notice within tx, unless notices are off.
func (s *Store) notifyTx(ctx context.Context, tx pgx.Tx) error {
	if s.notify == nil {
		return nil
	}
	_, err := tx.Exec(ctx, notifyQuery)
	return err
}

// RevocationNotices returns a channel that receives a value soon after any
// instance sharing the database commits a revocation, and after the
// listener connects again following a lost connection
// (store.RevocationNotifier). Values coalesce (the channel holds one). It
// is closed once ctx ends or the Store closes. With Config.DisableNotify
// it returns nil, which never receives. The first call starts the
// listener, which runs until Close.
func (s *Store) RevocationNotices(ctx context.Context) <-chan struct{} {
	if s.notify == nil {
		return nil
	}
	return s.notify.subscribe(ctx)
}

// notifier is the listener and its subscribers.
type notifier struct {
	conn   *pgx.ConnConfig // the pool's, for the listener's own connection
	health *health
	log    *zap.Logger

	mu      sync.Mutex
	subs    map[chan struct{}]struct{}
	started bool
	closed  bool
	cancel  context.CancelFunc // ends the listener
	done    chan struct{}      // closed when the listener has ended
}

func newNotifier(conn *pgx.ConnConfig, h *health, log *zap.Logger) *notifier {
	return &notifier{conn: conn, health: h, log: log, subs: map[chan struct{}]struct{}{}}
}

// subscribe adds a subscriber until ctx ends, starting the listener on
// the first one.
func (n *notifier) subscribe(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		close(ch)
		return ch
	}
	n.subs[ch] = struct{}{}
	if !n.started {
		n.started = true
		var lctx context.Context
		lctx, n.cancel = context.WithCancel(context.Background())
		n.done = make(chan struct{})
		contain.Go(n.log, "store.postgres.listener", func() { n.listen(lctx) }, nil)
	}
	contain.ContextAfterFunc(ctx, n.log, "store.postgres.listener", func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if _, ok := n.subs[ch]; ok {
			delete(n.subs, ch)
			close(ch)
		}
	})
	return ch
}

// signal tells every subscriber to read the revocations, without waiting
// for any: one whose channel is full has a notice pending already.
func (n *notifier) signal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// close ends the listener, waits for it, and closes every subscriber's
// channel.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	cancel, done := n.cancel, n.done
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		delete(n.subs, ch)
		close(ch)
	}
}

// listen keeps a connection listening until ctx ends, connecting again
// with a growing pause whenever it fails.
func (n *notifier) listen(ctx context.Context) {
	defer close(n.done)
	backoff := listenMinBackoff
	for {
		began := time.Now()
		err := n.listenContained(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) >= listenStable {
			backoff = listenMinBackoff
		}
		if !answered(err) {
			n.health.fail(err)
		}
		n.log.Debug("revocation listener lost its connection", zap.Error(err), zap.Duration("retry_in", backoff))
		// Jitter spreads the instances that lost the server together.
		pause := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// listenContained is listenOnce with a panic contained: it is reported,
// and the listener connects again after its backoff, as after a lost
// connection.
func (n *notifier) listenContained(ctx context.Context) (err error) {
	defer contain.Recover(n.log, "store.postgres.listener", func() { err = errListenerPanicked })
	contain.Point("store.postgres.listener")
	return n.listenOnce(ctx)
}

// errListenerPanicked is the error of a listener connection that panicked.
var errListenerPanicked = errors.New("the revocation listener panicked")

// listenOnce connects, LISTENs, tells the subscribers to read (notices
// sent while no connection listened are lost), then passes on every
// notice until the connection fails or ctx ends. It returns why it
// stopped.
func (n *notifier) listenOnce(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, listenConnectTimeout)
	conn, err := pgx.ConnectConfig(cctx, n.conn.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), listenCloseTimeout)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{revocationChannel}.Sanitize()); err != nil {
		return err
	}
	n.health.check(nil)
	n.signal()
	for {
		wctx, cancel := context.WithTimeout(ctx, listenIdle)
		_, err := conn.WaitForNotification(wctx)
		idle := wctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			n.signal()
		case ctx.Err() != nil:
			return ctx.Err()
		case idle:
			pctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
			_, err := conn.Exec(pctx, ";")
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}
