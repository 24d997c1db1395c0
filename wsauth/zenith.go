package wsauth

import (
	"encoding/base64"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Error codes: the Data of an Error message (docs/protocol.md, "Message
// container").
const (
	// CodeAuthority: the session may not send this message (a policy
	// denial, or anything but Auth before authentication).
	CodeAuthority = "Authority"
	// CodeDeserialise: the message could not be read (ErrMalformed).
	CodeDeserialise = "Data.Deserialise"
)

// AppendError appends to dst the Error message answering env:
//
//	{"Controller":…,"Topic":…,"Action":"Error","TransactionID":…,"Data":code}
//
// echoing env's Controller (after its default), its Topic with any "!"
// arguments, and the exact text of its TransactionID. Topic and
// TransactionID are left out when the request had none. env may be a
// ScanError's Echo.
func AppendError(dst []byte, env *Envelope, code string) []byte {
	// Room for it at once: an echoed topic may be near a megabyte, and
	// growing by appends would leave as much garbage, and a buffer of up
	// to twice its size queued.
	dst = slices.Grow(dst, errorReplyRoom(env, code))
	dst = append(dst, `{"Controller":`...)
	dst = appendString(dst, env.Controller)
	if env.Present&HasTopic != 0 {
		dst = append(dst, `,"Topic":`...)
		dst = appendString(dst, env.Topic)
	}
	dst = append(dst, `,"Action":"Error"`...)
	dst = appendTransactionID(dst, env.TransactionIDText)
	dst = append(dst, `,"Data":`...)
	dst = appendString(dst, code)
	return append(dst, '}')
}

// Results of an Identify reply. Reject is the documented failure
// (docs/service-interface.md §2.5); the motif-core client spells it Rejected.
const (
	ResultSuccess  = "Success"
	ResultReject   = "Reject"
	ResultRejected = "Rejected"
)

// DefaultVendor is the <vendor> of Scope entries when a Profile names none.
const DefaultVendor = "Gatehouse"

// Profile is how the gateway spells its Auth replies for a client.
type Profile struct {
	// Vendor is the first part of each Scope entry of an Identify reply,
	// "<Vendor>.Service.<Area>". Default DefaultVendor.
	Vendor string `json:"vendor,omitempty"`
	// Motif spells the replies as the motif-core client expects
	// (docs/protocol.md, "The real client"): the AuthToken reply has
	// Topic AuthToken instead of Identify, a failure is Result
	// "Rejected", and a success carries ExpiresIn, a TimeSpan, next to
	// ExpiryDate. Default false: the documented form. motif-core also
	// stops unless a success carries AccessToken: the caller fills
	// Identify.AccessToken for it.
	Motif bool `json:"motif,omitempty"`
}

// AuthTokenReplyTopic is the Topic of the reply to an AuthToken message:
// Identify (docs/service-interface.md §4.4), or AuthToken for motif-core.
func (p Profile) AuthTokenReplyTopic() string {
	if p.Motif {
		return "AuthToken"
	}
	return "Identify"
}

// Identify is what an Identify reply tells the client (docs/service-interface.md §2.5).
type Identify struct {
	// Success: the authentication was accepted. Without it the reply's
	// Data is the failure Result alone, whatever the other fields hold.
	Success bool
	// AccessToken is the token itself, sent Base-64 encoded; "" leaves
	// AccessToken out (the client's configuration does not allow it).
	AccessToken string
	// DisplayName is the user's friendly name; "" leaves it out.
	DisplayName string
	// UserID is the internal user name; "" leaves it out.
	UserID string
	// Expiry is when the authentication expires; zero leaves ExpiryDate
	// (and ExpiresIn) out.
	Expiry time.Time
	// Scopes are the granted OAuth scopes; each Service/<Area> becomes a
	// Scope entry <vendor>.Service.<Area>, the others are not listed.
	Scopes []string
}

// AppendIdentifyData appends the Data of an Identify, QueryIdentify or
// AuthToken reply, written by hand in the order of docs/service-interface.md §2.5:
//
//	{"Result":"Success","AccessToken":…,"DisplayName":…,"UserID":…,
//	 "ExpiryDate":"20261121T103000Z","ExpiresIn":"00:59:59.0000000",
//	 "Scope":["Gatehouse.Service.Market"]}
//
// ExpiresIn (Motif only) is Expiry less now, never below zero, in the
// original client's TimeSpan form (AppendTicksTimeSpan).
func AppendIdentifyData(dst []byte, id *Identify, p Profile, now time.Time) []byte {
	if !id.Success {
		if p.Motif {
			return append(dst, `{"Result":"Rejected"}`...)
		}
		return append(dst, `{"Result":"Reject"}`...)
	}
	dst = append(dst, `{"Result":"Success"`...)
	if id.AccessToken != "" {
		dst = append(dst, `,"AccessToken":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, []byte(id.AccessToken))
		dst = append(dst, '"')
	}
	if id.DisplayName != "" {
		dst = append(dst, `,"DisplayName":`...)
		dst = appendString(dst, id.DisplayName)
	}
	if id.UserID != "" {
		dst = append(dst, `,"UserID":`...)
		dst = appendString(dst, id.UserID)
	}
	if !id.Expiry.IsZero() {
		dst = append(dst, `,"ExpiryDate":"`...)
		dst = AppendDateTime(dst, id.Expiry)
		dst = append(dst, '"')
		if p.Motif {
			dst = append(dst, `,"ExpiresIn":"`...)
			dst = AppendTicksTimeSpan(dst, max(id.Expiry.Sub(now), 0))
			dst = append(dst, '"')
		}
	}
	vendor := p.Vendor
	if vendor == "" {
		vendor = DefaultVendor
	}
	dst = append(dst, `,"Scope":[`...)
	first := true
	for _, s := range id.Scopes {
		area, ok := strings.CutPrefix(s, "Service/")
		if !ok || area == "" || strings.Contains(area, "/") {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, vendor+".Service."+area)
	}
	return append(dst, "]}"...)
}

// AppendAuthReply appends a whole Auth reply: Controller Auth, the given
// Topic (Identify or AuthToken for an AuthToken request, see
// Profile.AuthTokenReplyTopic; QueryIdentify for a QueryIdentify), Action
// Publish, the request's TransactionID text (left out when nil) and Data
// from AppendIdentifyData.
func AppendAuthReply(dst []byte, topic string, transactionID []byte, id *Identify, p Profile, now time.Time) []byte {
	return AppendAuthMessage(dst, topic, ActionPublish, transactionID, false, id, p, now)
}

// AppendAuthMessage appends an Auth message carrying an identity:
//
//	{"Controller":"Auth","Topic":…,"Action":…,"TransactionID":…,"Confirm":true,"Data":…}
//
// with the TransactionID text left out when nil, Confirm only when
// confirm, and Data from AppendIdentifyData. The gateway sends it as the
// reply to an Identify Sub (Action Sub, Confirm), as the Identify push
// after a re-authentication (Publish, no TransactionID) and, with a
// failure Identify, when a session's token is revoked.
func AppendAuthMessage(dst []byte, topic, action string, transactionID []byte, confirm bool, id *Identify, p Profile, now time.Time) []byte {
	dst = append(dst, `{"Controller":"Auth","Topic":`...)
	dst = appendString(dst, topic)
	dst = append(dst, `,"Action":`...)
	dst = appendString(dst, action)
	dst = appendTransactionID(dst, transactionID)
	if confirm {
		dst = append(dst, `,"Confirm":true`...)
	}
	dst = append(dst, `,"Data":`...)
	dst = AppendIdentifyData(dst, id, p, now)
	return append(dst, '}')
}

// AppendUnsub appends an Unsub of a subscription:
//
//	{"Controller":…,"Topic":…,"Action":"Unsub","TransactionID":…,"Confirm":true}
//
// with the TransactionID text left out when nil and Confirm only when
// confirm: a server-initiated Unsub, to the client, carries Confirm true
// (docs/protocol.md, "Message container"); the gateway's own Unsub to
// the backend carries none.
func AppendUnsub(dst []byte, controller, topic string, transactionID []byte, confirm bool) []byte {
	dst = append(dst, `{"Controller":`...)
	dst = appendString(dst, controller)
	dst = append(dst, `,"Topic":`...)
	dst = appendString(dst, topic)
	dst = append(dst, `,"Action":"Unsub"`...)
	dst = appendTransactionID(dst, transactionID)
	if confirm {
		dst = append(dst, `,"Confirm":true`...)
	}
	return append(dst, '}')
}

func appendTransactionID(dst, text []byte) []byte {
	if text == nil {
		return dst
	}
	dst = append(dst, `,"TransactionID":`...)
	return append(dst, text...)
}

// appendString appends s as a JSON string. Invalid UTF-8 (which no scanned
// message holds) becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst, _ = jsontext.AppendQuote(dst, s)
	return dst
}

// AppendDateTime appends t as a Zenith DateTime: ISO 8601 basic form in
// UTC, to the second (20261121T103000Z).
func AppendDateTime(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, "20060102T150405Z")
}

// AppendTimeSpan appends d as a Zenith TimeSpan in its documented form
// (docs/protocol.md, "Data types"), [-][days.]hh:mm:ss.fff
// (00:59:59.000, 1.02:03:04.005), truncated to the millisecond.
func AppendTimeSpan(dst []byte, d time.Duration) []byte {
	return appendSpan(dst, d, time.Millisecond, 3)
}

// AppendTicksTimeSpan appends d as the original web client reads a
// TimeSpan (.NET's TimeSpan "c" form, its fraction always written):
// [-][days.]hh:mm:ss.fffffff (00:59:59.5000000, 1.02:03:04.0050000),
// truncated to the .NET tick, 100 ns.
func AppendTicksTimeSpan(dst []byte, d time.Duration) []byte {
	return appendSpan(dst, d, 100*time.Nanosecond, 7)
}

// appendSpan appends d as [-][days.]hh:mm:ss.f…, in whole units with
// digits fractional digits (unit is 10^-digits s).
func appendSpan(dst []byte, d, unit time.Duration, digits int) []byte {
	n := d / unit
	u := uint64(n)
	if n < 0 {
		dst = append(dst, '-')
		u = -u
	}
	perSec := uint64(time.Second / unit)
	secs, frac := u/perSec, u%perSec
	days, rest := secs/86_400, secs%86_400
	if days > 0 {
		dst = strconv.AppendUint(dst, days, 10)
		dst = append(dst, '.')
	}
	dst = append2(dst, rest/3600)
	dst = append(dst, ':')
	dst = append2(dst, rest/60%60)
	dst = append(dst, ':')
	dst = append2(dst, rest%60)
	dst = append(dst, '.')
	start := len(dst)
	for range digits {
		dst = append(dst, '0')
	}
	for i := len(dst) - 1; i >= start; i-- {
		dst[i] = byte('0' + frac%10)
		frac /= 10
	}
	return dst
}

func append2(dst []byte, n uint64) []byte {
	return append(dst, byte('0'+n/10), byte('0'+n%10))
}

// DefaultMaxTokenBytes bounds an AuthToken request's access token.
const DefaultMaxTokenBytes = 8 << 10

// AuthTokenRequest is the Data of an AuthToken message (docs/service-interface.md §2.4).
type AuthTokenRequest struct {
	// Provider is the provider as sent; the caller accepts only Bearer.
	Provider string
	// AccessToken is the token after the Base-64 rule.
	AccessToken string
}

// ParseAuthToken reads data, an AuthToken message's raw Data, as
// {"Provider":…,"AccessToken":…}: one object with both members once, as
// strings, names exact (an escaped spelling is another member), other
// members ignored. The
// AccessToken is decoded by the Base-64 rule of docs/service-interface.md §2.4: when it
// is valid standard Base-64 (padded) the decoded bytes are the token,
// otherwise the text itself is (a JWT, with its dots, never decodes).
//
// maxToken bounds the token (0 means DefaultMaxTokenBytes): its text may
// be no longer than the Base-64 encoding of maxToken bytes and the token
// no longer than maxToken, else the error wraps ErrTokenTooLarge. Other
// faults wrap ErrMalformed. The error never quotes data.
func ParseAuthToken(data []byte, maxToken int) (AuthTokenRequest, error) {
	if maxToken <= 0 {
		maxToken = DefaultMaxTokenBytes
	}
	maxText := base64.StdEncoding.EncodedLen(maxToken)
	var req AuthTokenRequest
	s := getScanState(data)
	defer s.release()
	d := &s.dec
	tok, err := d.ReadToken()
	if err != nil {
		return req, s.syntaxError(err)
	}
	if tok.Kind() != '{' {
		return req, s.fault("AuthToken Data not a JSON object")
	}
	var text []byte
	var haveProvider, haveToken bool
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return req, s.syntaxError(err)
		}
		v, err := d.ReadValue()
		if err != nil {
			return req, s.syntaxError(err)
		}
		switch string(name) {
		case `"Provider"`:
			if haveProvider {
				return req, s.fault("duplicate member")
			}
			if v[0] != '"' {
				return req, s.fault("Provider not a string")
			}
			req.Provider, haveProvider = s.str(v), true
		case `"AccessToken"`:
			if haveToken {
				return req, s.fault("duplicate member")
			}
			if v[0] != '"' {
				return req, s.fault("AccessToken not a string")
			}
			if len(v) > 6*maxText+2 { // over the bound even if every character were a \uXXXX escape
				return req, tooLarge(d.InputOffset())
			}
			if text, err = jsontext.AppendUnquote(nil, v); err != nil {
				return req, s.fault("AccessToken not a string")
			}
			haveToken = true
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return req, s.syntaxError(err)
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			return req, s.fault("data after the object")
		}
		return req, s.syntaxError(err)
	}
	switch {
	case !haveProvider:
		return req, s.fault("no Provider")
	case !haveToken || len(text) == 0:
		return req, s.fault("no AccessToken")
	case len(text) > maxText:
		return req, tooLarge(d.InputOffset())
	}
	if raw, err := base64.StdEncoding.Strict().AppendDecode(nil, text); err == nil {
		text = raw
	}
	if len(text) > maxToken {
		return req, tooLarge(d.InputOffset())
	}
	req.AccessToken = string(text)
	return req, nil
}

func tooLarge(offset int64) *ScanError {
	return &ScanError{Err: ErrTokenTooLarge, Reason: "access token over the bound", Offset: offset}
}

// errorReplyRoom is the room AppendError needs for env's reply with code,
// its fields unescaped: the fixed text is under 128 bytes.
func errorReplyRoom(env *Envelope, code string) int {
	return 128 + len(env.Controller) + len(env.Topic) + len(env.TransactionIDText) + len(code)
}
