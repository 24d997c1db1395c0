package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind says what a record records. The verifier accepts any kind (the
// hash covers it); the writer's callers use the constants below.
type Kind string

// The kinds of record.
const (
	KindRunStart            Kind = "run_start"            // first record of a run; names the previous run's last checkpoint
	KindCheckpoint          Kind = "checkpoint"           // a signed checkpoint (the line's jws)
	KindLoss                Kind = "loss"                 // records the sink failed to write since the last one written
	KindAuthentication      Kind = "authentication"       // a socket or token-endpoint authentication
	KindReauthentication    Kind = "reauthentication"     // a live session's token renewed
	KindLapse               Kind = "lapse"                // a session's token lapsed
	KindRevocation          Kind = "revocation"           // a revocation applied to a live session
	KindSubscriptionStart   Kind = "subscription_start"   // venue and feed
	KindSubscriptionEnd     Kind = "subscription_end"     // venue and feed
	KindDenial              Kind = "denial"               // a refused request, subscription or message
	KindOrder               Kind = "order"                // an order message (the Trading controller's writes)
	KindQuery               Kind = "query"                // table, venues, row count, outcome; reads included
	KindEntitlementChange   Kind = "entitlement_change"   // a user's or client's entitlements changed
	KindUserChange          Kind = "user_change"          // a user added, changed or removed
	KindKeyRotation         Kind = "key_rotation"         // a signing or audit key announced, retired or removed
	KindEntitlementSnapshot Kind = "entitlement_snapshot" // the daily snapshot of one user's or client's entitlements
)

// Attribute keys the gateway's records use. Other keys are allowed (the
// schema grows by keys; a verifier that does not know a key still checks
// its hash).
const (
	AttrSubject      = "sub"          // the user (or the client, for client credentials)
	AttrClient       = "client_id"    // the OAuth client
	AttrSession      = "session"      // the gateway's session id
	AttrTransport    = "transport"    // "socket" or "token"
	AttrVenue        = "venue"        // one venue
	AttrFeed         = "feed"         // one feed
	AttrVenues       = "venues"       // the venues a query read
	AttrTable        = "table"        // the query's table
	AttrRows         = "rows"         // rows read or written
	AttrOutcome      = "outcome"      // "ok" or a public error code
	AttrReason       = "reason"       // why: a denial's or lapse's public reason
	AttrController   = "controller"   // a message's controller
	AttrTopic        = "topic"        // a message's topic
	AttrEntitlements = "entitlements" // entitlements in their text form ("ASX:quotes")
	AttrUsername     = "username"     // a user's username (its sub is the stable id)
	AttrKeyID        = "kid"          // a key's id
	AttrPrevRun      = "prev_run"     // run_start: the previous run
	AttrPrevSeq      = "prev_seq"     // run_start: the seq of the previous run's last checkpoint
	AttrLost         = "lost"         // loss: how many records were not written
)

// MaxAttrs bounds the attributes of one record.
const MaxAttrs = 64

// Value is an attribute's typed value: a string, an integer, a boolean or
// a list of strings. The zero Value is the empty string.
type Value struct {
	typ  byte // one of the type bytes of the canonical encoding
	s    string
	n    int64
	list []string
}

// The value types, as the canonical encoding writes them.
const (
	typeString  = 's'
	typeInt     = 'i'
	typeBool    = 'b'
	typeStrings = 'l'
)

// Attr is one attribute of a record.
type Attr struct {
	Key   string
	Value Value
}

// String is a string attribute.
func String(key, v string) Attr { return Attr{key, Value{typ: typeString, s: v}} }

// Int is an integer attribute.
func Int(key string, v int64) Attr { return Attr{key, Value{typ: typeInt, n: v}} }

// Bool is a boolean attribute.
func Bool(key string, v bool) Attr {
	var n int64
	if v {
		n = 1
	}
	return Attr{key, Value{typ: typeBool, n: n}}
}

// Strings is a list-of-strings attribute.
func Strings(key string, v ...string) Attr {
	return Attr{key, Value{typ: typeStrings, list: slices.Clone(v)}}
}

func (v Value) kind() byte {
	if v.typ == 0 {
		return typeString
	}
	return v.typ
}

// Str returns a string value, and whether v is one.
func (v Value) Str() (string, bool) { return v.s, v.kind() == typeString }

// Int64 returns an integer value, and whether v is one.
func (v Value) Int64() (int64, bool) { return v.n, v.typ == typeInt }

// Bool returns a boolean value, and whether v is one.
func (v Value) Bool() (bool, bool) { return v.n == 1, v.typ == typeBool }

// List returns a list value, and whether v is one.
func (v Value) List() ([]string, bool) { return slices.Clone(v.list), v.typ == typeStrings }

// Equal reports whether v and w are the same type and value.
func (v Value) Equal(w Value) bool {
	return v.kind() == w.kind() && v.s == w.s && v.n == w.n && slices.Equal(v.list, w.list)
}

// Record is one entry of the chain. Writer fills Instance, Run, Seq,
// Prev, Hash, Time and, for checkpoints, JWS; callers give Kind and Attrs.
type Record struct {
	Instance string    // the instance that wrote it
	Run      string    // the process run (random per start)
	Seq      uint64    // 1 for a run's first record, then one more per record
	Prev     [32]byte  // the previous record's hash; zero for an instance's first run
	Hash     [32]byte  // SHA-256 over Prev and the canonical encoding (Canonical)
	Time     time.Time // when it was written, UTC, nanoseconds
	Kind     Kind
	Attrs    []Attr // sorted by key, keys unique
	JWS      string // a checkpoint's signature (outside the hash; it signs the hash)
}

// Attr returns the value of the attribute key.
func (r *Record) Attr(key string) (Value, bool) {
	i, ok := slices.BinarySearchFunc(r.Attrs, key, func(a Attr, k string) int { return strings.Compare(a.Key, k) })
	if !ok {
		return Value{}, false
	}
	return r.Attrs[i].Value, true
}

// TimeLayout is the one text form of a record's time, in lines and in the
// canonical encoding: RFC 3339 in UTC with nine fractional digits.
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

// secretKey reports whether an attribute key names a credential: the
// writer refuses them, so that a token, secret or password never reaches
// the audit by a careless caller. A switch, not a list searched: every
// key of every record passes here.
func secretKey(k string) bool {
	switch k {
	case "token", "access_token", "refresh_token", "id_token", "password", "secret",
		"client_secret", "code", "authorization", "cookie", "assertion":
		return true
	}
	return strings.HasSuffix(k, "_token") || strings.HasSuffix(k, "_secret")
}

// prepareAttrs checks a caller's attributes and returns them sorted, with
// invalid UTF-8 replaced (every log encoder would replace it, and the hash
// must be over what the line says).
func prepareAttrs(attrs []Attr) ([]Attr, error) {
	if len(attrs) > MaxAttrs {
		return nil, fmt.Errorf("%d attributes: %w", len(attrs), ErrAttr)
	}
	// Sorted by index, then copied once in order: an Attr is large and
	// holds pointers, and moving it about in a sort cost more than the
	// rest of the checks (write barriers while the collector runs).
	var order [MaxAttrs]uint8
	ix := order[:len(attrs)]
	for i := range ix {
		ix[i] = uint8(i)
		for j := i; j > 0 && attrs[ix[j]].Key < attrs[ix[j-1]].Key; j-- {
			ix[j], ix[j-1] = ix[j-1], ix[j]
		}
	}
	out := make([]Attr, len(attrs))
	for i, k := range ix {
		a := attrs[k]
		if !validKey(a.Key) {
			return nil, fmt.Errorf("attribute key %q: %w", a.Key, ErrAttr)
		}
		if secretKey(a.Key) {
			return nil, fmt.Errorf("attribute key %q names a credential: %w", a.Key, ErrAttr)
		}
		v := a.Value
		v.typ = v.kind()
		v.s = validUTF8(v.s)
		// A list is the caller's only through Strings, which copied it;
		// it is copied again only to be mended.
		if slices.ContainsFunc(v.list, func(s string) bool { return !utf8.ValidString(s) }) {
			v.list = slices.Clone(v.list)
			for j, s := range v.list {
				v.list[j] = validUTF8(s)
			}
		}
		out[i] = Attr{a.Key, v}
	}
	for i := 1; i < len(out); i++ {
		if out[i].Key == out[i-1].Key {
			return nil, fmt.Errorf("attribute key %q given twice: %w", out[i].Key, ErrAttr)
		}
	}
	return out, nil
}

// validKey: 1 to 64 of a-z, 0-9 and _, starting with a letter.
func validKey(k string) bool {
	if k == "" || len(k) > 64 || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
