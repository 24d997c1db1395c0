package marketdata

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Defaults of Config.
const (
	DefaultUserIDHeader   = "X-Gatehouse-User-Id"
	DefaultTickInterval   = time.Second
	DefaultSeed           = 1
	DefaultMaxConnections = 1024
	DefaultSendQueue      = 256
	DefaultSendQueueBytes = 1 << 20
	DefaultWriteTimeout   = 10 * time.Second
	DefaultReadLimit      = 1 << 20 // 1 MiB
	DefaultPingInterval   = 30 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultCloseGrace     = time.Second
)

// Sub-protocols of the message service: ServiceJson is the interface's
// name (docs/api-surface.md §9), ZenithJson the original platform's.
const (
	SubprotocolService = "ServiceJson"
	SubprotocolZenith  = "ZenithJson"
)

// DefaultSubprotocols are the sub-protocols accepted when
// Config.Subprotocols is empty, in order of preference.
var DefaultSubprotocols = []string{SubprotocolService, SubprotocolZenith}

// Config configures a Server. Zero values take the defaults named per
// field.
type Config struct {
	// Logger receives the server's logs: Debug per connection, Info when
	// a connection is closed for misbehaving. Default: no logging.
	Logger *zap.Logger
	// Now is the clock of the demo data (the markets' trading date and
	// time). Network deadlines always use the real clock. Default
	// time.Now.
	Now func() time.Time
	// TickInterval is how often the simulated prices move and every
	// Market/Security subscription gets an update. Default 1s.
	TickInterval time.Duration
	// Seed seeds the pseudo-random walk of the prices: the same seed gives
	// the same prices tick after tick. Default 1.
	Seed uint64

	// UserIDHeader is the request header of the upgrade in which the
	// gateway names the authenticated user (the access token's subject).
	// Trading topics answer for that user. The header is trusted as is:
	// this is why the server must only ever be reachable through the
	// gateway. Default "X-Gatehouse-User-Id".
	UserIDHeader string
	// Accounts are the trading accounts of each user, by user id (the
	// subject). Default: DemoAccounts().
	Accounts map[string][]Account

	// Subprotocols are the WebSocket sub-protocols accepted, in order of
	// preference. A client that offers sub-protocols but none of these is
	// refused (HTTP 400); one that offers none is accepted. Default
	// ServiceJson, ZenithJson.
	Subprotocols []string
	// Compression accepts permessage-deflate (RFC 7692) when a client (the
	// gateway's backend leg) offers it, answering with
	// server_no_context_takeover and client_no_context_takeover; every
	// message to that client is then compressed, alone. Default false: no
	// extension negotiated.
	Compression bool
	// CheckOrigin decides whether an upgrade's Origin is acceptable.
	// Default: every origin, since the gateway checks the browser's Origin
	// and the backend has no ambient credential (cookie) to protect; the
	// identity comes from headers a browser cannot set on a WebSocket.
	CheckOrigin func(r *http.Request) bool

	// MaxConnections bounds the live connections; an upgrade beyond it
	// gets HTTP 503. Default 1024.
	MaxConnections int
	// SendQueue is how many outgoing messages may wait for one
	// connection's writer. A client that falls that far behind is closed
	// (1008), never buffered without bound. Default 256.
	SendQueue int
	// SendQueueBytes bounds the bytes of the messages waiting for one
	// connection's writer, whatever their number: a client that does not
	// read while it sends messages the server answers at length (an Error
	// echoing a long topic) is closed (1008) once this much waits. Default
	// 1 MiB.
	SendQueueBytes int64
	// WriteTimeout bounds each write to a client. Default 10s.
	WriteTimeout time.Duration
	// ReadLimit is the largest message accepted, in bytes; a larger one
	// closes the connection with 1009. Default 1 MiB.
	ReadLimit int64
	// PingInterval is how often the server pings the client. Default 30s.
	PingInterval time.Duration
	// IdleTimeout closes (1008) a connection from which nothing (no
	// message, pong or ping) has arrived for this long. Default 60s.
	IdleTimeout time.Duration
	// CloseGrace is how long the server waits for the client's answer to
	// its close frame before it drops the connection. Default 1s.
	CloseGrace time.Duration
}

// Account is a demo trading account, as Trading/QueryAccounts returns it.
type Account struct {
	// ID is the account's identifier, e.g. "TRD-200001".
	ID string
	// Name is the account's display name.
	Name string
	// Currency is the ISO 4217 code of the account, e.g. "AUD".
	Currency string
}

// Subjects of the demo users of examples/users.json (docs/design.md, "The
// demo").
const (
	DemoUserSubject   = "5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10" // "demo"
	DemoTraderSubject = "a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28" // "trader"
	// DemoDeskSubject is the client demo-trading-desk of Caddyfile.example:
	// a client_credentials token's sub is its client's ID.
	DemoDeskSubject = "demo-trading-desk"
)

// DemoAccounts returns the accounts of the demo users: one for "demo"
// (who has no Trading scope, so the gateway never lets the request through
// for them), two for "trader" and one for the demo-trading-desk client. It
// returns a new map each call.
func DemoAccounts() map[string][]Account {
	return map[string][]Account{
		DemoUserSubject: {
			{ID: "DEMO-100001", Name: "Demo User", Currency: "AUD"},
		},
		DemoTraderSubject: {
			{ID: "TRD-200001", Name: "Demo Trader", Currency: "AUD"},
			{ID: "TRD-200002", Name: "Demo Trader (USD)", Currency: "USD"},
		},
		DemoDeskSubject: {
			{ID: "DESK-300001", Name: "Demo Trading Desk", Currency: "AUD"},
		},
	}
}

// withDefaults returns a copy of c with the defaults filled in, or an
// error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.UserIDHeader == "" {
		c.UserIDHeader = DefaultUserIDHeader
	}
	if !isToken(c.UserIDHeader) {
		return c, fmt.Errorf("marketdata: bad user header name %q", c.UserIDHeader)
	}
	if c.Accounts == nil {
		c.Accounts = DemoAccounts()
	} else {
		accounts := make(map[string][]Account, len(c.Accounts))
		for user, list := range c.Accounts {
			accounts[user] = slices.Clone(list)
		}
		c.Accounts = accounts
	}
	if len(c.Subprotocols) == 0 {
		c.Subprotocols = DefaultSubprotocols
	}
	c.Subprotocols = slices.Clone(c.Subprotocols)
	if c.CheckOrigin == nil {
		c.CheckOrigin = func(*http.Request) bool { return true }
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"tick interval", &c.TickInterval, DefaultTickInterval},
		{"write timeout", &c.WriteTimeout, DefaultWriteTimeout},
		{"ping interval", &c.PingInterval, DefaultPingInterval},
		{"idle timeout", &c.IdleTimeout, DefaultIdleTimeout},
		{"close grace", &c.CloseGrace, DefaultCloseGrace},
	}
	for _, d := range durations {
		if *d.v < 0 {
			return c, fmt.Errorf("marketdata: negative %s %v", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.MaxConnections < 0 || c.SendQueue < 0 || c.ReadLimit < 0 {
		return c, errors.New("marketdata: negative max connections, send queue or read limit")
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.SendQueueBytes < 0 {
		return c, errors.New("marketdata: negative send queue bytes")
	}
	if c.SendQueueBytes == 0 {
		c.SendQueueBytes = DefaultSendQueueBytes
	}
	if c.SendQueue == 0 {
		c.SendQueue = DefaultSendQueue
	}
	if c.ReadLimit == 0 {
		c.ReadLimit = DefaultReadLimit
	}
	if c.IdleTimeout <= c.PingInterval {
		return c, fmt.Errorf("marketdata: idle timeout %v must exceed the ping interval %v", c.IdleTimeout, c.PingInterval)
	}
	return c, nil
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2), the form
// of a header name.
func isToken(s string) bool {
	const punct = "!#$%&'*+-.^_`|~"
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || strings.IndexByte(punct, b) >= 0) {
			return false
		}
	}
	return s != ""
}
