package zenith

import (
	"encoding/base64"
	"slices"
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
	dst = slices.Grow(dst, ErrorReplyRoom(env, code))
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
// (docs/api-surface.md §2.5); the motif-core client spells it Rejected.
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
// Identify (docs/api-surface.md §4.4), or AuthToken for motif-core.
func (p Profile) AuthTokenReplyTopic() string {
	if p.Motif {
		return "AuthToken"
	}
	return "Identify"
}

// Identify is what an Identify reply tells the client (docs/api-surface.md §2.5).
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
	// Entitlements are the market-data pairs the session holds, as
	// VENUE:feed, listed as "Entitlements" after Scope; nil leaves it out
	// (the gateway does not check entitlements), empty lists none.
	Entitlements []string
}

// AppendIdentifyData appends the Data of an Identify, QueryIdentify or
// AuthToken reply, written by hand in the order of docs/api-surface.md §2.5:
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
	dst = append(dst, ']')
	if id.Entitlements != nil {
		dst = append(dst, `,"Entitlements":[`...)
		for i, e := range id.Entitlements {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, e)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
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

// ErrorReplyRoom is the room AppendError needs for env's reply with code,
// its fields unescaped: the fixed text is under 128 bytes.
func ErrorReplyRoom(env *Envelope, code string) int {
	return 128 + len(env.Controller) + len(env.Topic) + len(env.TransactionIDText) + len(code)
}
