package wsframe

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// Dial dials for gorilla's Dialer (its NetDialContext): a client's Conn
// over TCP (NewClient), whose flushes timeout bounds. A Dialed in the
// dial's context (Dialed.Context) notes it.
func Dial(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		fc := NewClient(c, timeout)
		noteDialed(ctx, fc)
		return fc, nil
	}
}

// DialTLS is Dial for wss:// (gorilla's NetDialTLSContext): the TLS
// handshake gorilla would do (system roots, the host as server name),
// under the Conn.
func DialTLS(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(c, &tls.Config{ServerName: host})
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		fc := NewClient(tc, timeout)
		noteDialed(ctx, fc)
		return fc, nil
	}
}

// dialedKey is the context key of a dial's *Dialed.
type dialedKey struct{}

// Dialed is where a dial (Dial, DialTLS) notes its Conn, so that a dial
// that failed can tell why: the answer to the upgrade exceeded
// MaxUpgradeAnswer (gorilla's error then names whatever its parser made
// of the answer cut short). The zero Dialed is ready; one per dial.
type Dialed struct{ c *Conn }

// Context is ctx carrying d, for the dial that notes its Conn in d.
func (d *Dialed) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, dialedKey{}, d)
}

func noteDialed(ctx context.Context, c *Conn) {
	if d, ok := ctx.Value(dialedKey{}).(*Dialed); ok {
		d.c = c
	}
}

// Err is err, the error of the dial that noted d, or one wrapping
// ErrUpgradeAnswer when the answer read reached its bound.
func (d *Dialed) Err(err error) error {
	if d.c != nil && d.c.hsRead >= MaxUpgradeAnswer {
		return fmt.Errorf("%w (%v)", ErrUpgradeAnswer, err)
	}
	return err
}
