package wsauth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Backend is the backend leg: where it is, how long it may take to open,
// what it may send, and its TransactionID type.
type Backend struct {
	// Upstreams are the backend's WebSocket URLs (ws:// or wss://), tried
	// in order until one accepts (failover). Required. The client's
	// ?version= is added to the URL's query.
	Upstreams []string
	// DialTimeout bounds one attempt to open the backend leg. Default
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxMessageBytes bounds one backend message; a larger one closes both
	// legs (the client gets 1011). Default DefaultMaxBackendMessageBytes.
	MaxMessageBytes int64
	// MessageTimeout bounds the time one backend message may take to
	// arrive, from its first frame to its last: a backend that stalls
	// mid-message (its pongs still coming) holds the message's buffer, up
	// to MaxMessageBytes, no longer; its client is closed with 1011.
	// Default DefaultBackendMessageTimeout.
	MessageTimeout time.Duration
	// TransactionIDs is the backend's TransactionID type: what a client
	// may send, and where the gateway's own messages take theirs (a
	// reserved range clients may not use). TransactionIDsInt53 (the
	// default): the integers a double holds exactly, ±(2^53 - 1), as
	// JavaScript and the web client have them; the gateway's from
	// 9007199254000000. TransactionIDsInt32, for a backend that reads a
	// 32-bit int: -2^31 to 2^31 - 1; the gateway's from -2^31 to
	// -2147400000. A backend that cannot read the gateway's own Unsub
	// would keep the subscription open after the session lost the right
	// to it.
	TransactionIDs string
	// Compression offers permessage-deflate (RFC 7692) to the backend, with
	// server_no_context_takeover and client_no_context_takeover: a backend
	// that accepts may compress each message alone. The gateway reads each
	// compressed message decompressed (MaxMessageBytes bounds it so, a
	// decompression bomb included) and checks it as any other; to a client
	// that negotiated permessage-deflate it passes the message on as the
	// backend compressed it, without compressing it again, when the
	// client's window (server_max_window_bits) holds the backend's; other
	// clients get it decompressed. A backend's answer that drops
	// server_no_context_takeover, or names a parameter not offered, fails
	// the dial. The gateway never compresses what it sends the backend.
	// Default false: the backend leg offers no extension, and a compressed
	// frame from the backend ends it (1002; the client gets 1011).
	Compression bool
}

// The values of Backend.TransactionIDs.
const (
	TransactionIDsInt53 = "int53"
	TransactionIDsInt32 = "int32"
)

// Validate checks b and changes nothing.
func (b *Backend) Validate() error {
	var errs []error
	if len(b.Upstreams) == 0 {
		errs = append(errs, errors.New("no upstream"))
	}
	for i, u := range b.Upstreams {
		// The errors quote the URL without its user info, query and
		// fragment (shownURL), or not at all when it does not parse.
		p, err := url.Parse(u)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("upstream %d is not a URL", i))
		case p.User != nil:
			errs = append(errs, fmt.Errorf("upstream %d (%q): user info in the URL", i, shownURL(p)))
		case p.Scheme != "ws" && p.Scheme != "wss":
			errs = append(errs, fmt.Errorf("upstream %d (%q): scheme must be ws or wss", i, shownURL(p)))
		case p.Host == "":
			errs = append(errs, fmt.Errorf("upstream %d (%q): no host", i, shownURL(p)))
		case p.Query().Has("version"):
			errs = append(errs, fmt.Errorf("upstream %d (%q): the client's version is added to the query, the URL may not hold one", i, shownURL(p)))
		}
	}
	errs = append(errs,
		negative("max_backend_message_bytes", b.MaxMessageBytes),
		negative("backend_message_timeout", b.MessageTimeout),
		negative("dial_timeout", b.DialTimeout))
	switch b.TransactionIDs {
	case "", TransactionIDsInt53, TransactionIDsInt32:
	default:
		errs = append(errs, fmt.Errorf("transaction_ids %q is neither %s nor %s", b.TransactionIDs, TransactionIDsInt53, TransactionIDsInt32))
	}
	return errors.Join(errs...)
}

// Transport is the client's socket: the upgrade's terms, the bound of a
// message, the send queue, the close; and the timers of both legs (pings,
// idleness, writes).
type Transport struct {
	// Subprotocols are the sub-protocols the gateway accepts, in order of
	// preference; the one negotiated is asked of the backend too. Default
	// [DefaultSubprotocol]. A client that offers sub-protocols, none of
	// them listed, gets HTTP 400; one that offers none is accepted.
	Subprotocols []string
	// AllowedOrigins are the Origin values (scheme://host[:port]) whose
	// browsers may open a socket, compared exactly; "*" allows every
	// origin (risk: any web page may then use a visitor's cookies-free
	// socket, and with header auth nothing else stops it). Empty: only the
	// request's own host. A request without Origin (not a browser) is
	// always allowed.
	AllowedOrigins []string
	// DisableCompression turns off permessage-deflate on the client leg.
	// Default false (accepted when the client offers it, and each message
	// to the client compressed only where that pays: compress.go).
	DisableCompression bool
	// MaxMessageBytes bounds one client message after decompression; a
	// larger one closes the socket with 1009. Default
	// DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// PingInterval is the keep-alive ping period, on both legs: the
	// gateway pings the client and the backend this often. Default
	// DefaultPingInterval.
	PingInterval time.Duration
	// IdleTimeout closes (1008) a client that sent nothing, pongs
	// included, for this long, and one that has left a ping unanswered
	// this long (it does not read, whatever it sends; counted as a slow
	// client); a backend leg silent this long (its pongs included) is
	// lost, and its client closed with 1011. Default DefaultIdleTimeout; it
	// must exceed PingInterval.
	IdleTimeout time.Duration
	// WriteTimeout bounds one write to either leg; a client write that
	// times out closes the client (1008, counted as a slow client).
	// Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// SendQueue and SendQueueBytes bound the messages and bytes waiting
	// for the client; past either the client is closed with 1008 and
	// counted as a slow client. Defaults DefaultSendQueue and
	// DefaultSendQueueBytes.
	SendQueue      int
	SendQueueBytes int64
	// CloseGrace is how long the gateway waits for the client to answer
	// its close frame. Default DefaultCloseGrace.
	CloseGrace time.Duration
	// CloseLinger is how long, after CloseGrace, the socket of a client that
	// has not answered stays open with its write side shut and its input
	// read and discarded (MaxMessageBytes at most), so that a client still
	// reading a backlog reaches the close frame instead of a reset; the
	// session's resources are released already. Negative: closed at once.
	// Default the larger of DefaultCloseLinger and IdleTimeout + PingInterval
	// (a client that has not answered a ping for IdleTimeout is closed, so a
	// client still open is at most that far behind).
	CloseLinger time.Duration
}

// Fixed is t without what only an upgrade reads (AllowedOrigins,
// Subprotocols, DisableCompression): what a live socket depends on. Two
// configurations whose Backend and Fixed Transport are equal can be put
// in force on the same live sessions (Gateway.Reconfigure).
func (t Transport) Fixed() Transport {
	t.AllowedOrigins, t.Subprotocols, t.DisableCompression = nil, nil, false
	return t
}

// Validate checks t and changes nothing.
func (t *Transport) Validate() error {
	var errs []error
	for _, p := range t.Subprotocols {
		if p == "" || strings.ContainsFunc(p, isSpaceOrControl) || strings.ContainsAny(p, `,;"`) {
			errs = append(errs, fmt.Errorf("subprotocol %q is not a token", p))
		}
	}
	for _, o := range t.AllowedOrigins {
		if o == "*" {
			continue
		}
		p, err := url.Parse(o)
		if err != nil || p.Scheme == "" || p.Host == "" || (p.Path != "" && p.Path != "/") || p.RawQuery != "" {
			errs = append(errs, fmt.Errorf("allowed origin %q is not scheme://host[:port]", o))
		}
	}
	errs = append(errs,
		negative("max_message_bytes", t.MaxMessageBytes),
		negative("send_queue", t.SendQueue),
		negative("send_queue_bytes", t.SendQueueBytes),
		negative("ping_interval", t.PingInterval),
		negative("idle_timeout", t.IdleTimeout),
		negative("write_timeout", t.WriteTimeout),
		negative("close_grace", t.CloseGrace))
	ping, idle := or(t.PingInterval, DefaultPingInterval), or(t.IdleTimeout, DefaultIdleTimeout)
	if idle <= ping {
		errs = append(errs, fmt.Errorf("idle_timeout %v must exceed ping_interval %v", idle, ping))
	}
	return errors.Join(errs...)
}

func (b Backend) withDefaults() Backend {
	b.DialTimeout = or(b.DialTimeout, DefaultDialTimeout)
	b.MaxMessageBytes = or(b.MaxMessageBytes, DefaultMaxBackendMessageBytes)
	b.MessageTimeout = or(b.MessageTimeout, DefaultBackendMessageTimeout)
	return b
}

func (t Transport) withDefaults() Transport {
	if len(t.Subprotocols) == 0 {
		t.Subprotocols = []string{DefaultSubprotocol}
	}
	t.MaxMessageBytes = or(t.MaxMessageBytes, DefaultMaxMessageBytes)
	t.PingInterval = or(t.PingInterval, DefaultPingInterval)
	t.IdleTimeout = or(t.IdleTimeout, DefaultIdleTimeout)
	t.WriteTimeout = or(t.WriteTimeout, DefaultWriteTimeout)
	t.SendQueue = or(t.SendQueue, DefaultSendQueue)
	t.SendQueueBytes = or(t.SendQueueBytes, DefaultSendQueueBytes)
	t.CloseGrace = or(t.CloseGrace, DefaultCloseGrace)
	t.CloseLinger = or(t.CloseLinger, max(DefaultCloseLinger, t.IdleTimeout+t.PingInterval))
	return t
}
