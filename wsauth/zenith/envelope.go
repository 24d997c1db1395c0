package zenith

import "strings"

// Actions of the Zenith envelope (docs/protocol.md, "Message container").
const (
	ActionPublish = "Publish"
	ActionSub     = "Sub"
	ActionUnsub   = "Unsub"
	ActionCancel  = "Cancel"
	ActionError   = "Error"
)

// The Zenith defaults for a member the message leaves out. Scan applies
// them, so the policy sees what the backend will act on.
const (
	DefaultController = "Zenith"
	DefaultAction     = ActionPublish
)

// Controllers are the protocol's controllers (docs/protocol.md, "Message
// container"). The gateway's metrics count these by name and every other
// controller as "other", so a client cannot grow the label set.
var Controllers = [...]string{"Zenith", "Auth", "Market", "News", "Trading", "Watchlist", "Notify", "Channel", "Fragments"}

// Fields is a set of envelope members, as found in a message.
type Fields uint8

// The envelope members.
const (
	HasController Fields = 1 << iota
	HasTopic
	HasAction
	HasTransactionID
	HasConfirm
	HasData
)

// Envelope is one client->backend message as Scan read it. Its byte slices
// alias the scanned message: the caller keeps that message unchanged while
// it uses them.
type Envelope struct {
	// Controller is the handling area, "Zenith" when the message has none.
	Controller string
	// Topic is the operation or subscription, with any "!" arguments; ""
	// when the message has none.
	Topic string
	// Action is one of the Action constants, "Publish" when the message
	// has none.
	Action string
	// TransactionID is the client's integer, 0 when the message has none.
	TransactionID int64
	// TransactionIDText is the exact JSON text of TransactionID, for the
	// echo in replies; nil when the message has none.
	TransactionIDText []byte
	// Confirm is the message's Confirm, false when it has none.
	Confirm bool
	// Data is the raw JSON value of Data, exactly as sent and not decoded
	// (its syntax and UTF-8 checked); nil when the message has none.
	Data []byte
	// Present says which envelope members the message carried.
	Present Fields
}

// TopicBase is the envelope's topic before any "!" argument: what the
// policy matches.
func (e *Envelope) TopicBase() string { return TopicBase(e.Topic) }

// TopicBase is topic before its first "!" ("Security!BHP.ASX" gives
// "Security"), or all of it when it has none.
func TopicBase(topic string) string {
	base, _, _ := strings.Cut(topic, "!")
	return base
}

// Scan reads msg, the payload of one client text frame, as a Zenith
// envelope, strictly: whatever JSON parser the backend uses (case
// sensitive or not, first or last duplicate wins, decoding escapes in
// names or not) sees exactly the Controller, Topic and Action Scan
// reports. msg must be:
//
//   - valid UTF-8, else the error wraps ErrInvalidUTF8 (close 1007);
//   - one JSON object (RFC 8259, with no escaped lone surrogates and
//     nesting no deeper than MaxDepth) with only whitespace around it;
//   - top-level member names in printable ASCII;
//   - no envelope member (Controller, Topic, Action, TransactionID,
//     Confirm, Data) twice, in any spelling: a name whose ASCII letters and
//     digits match one of them ignoring case ("controller", "CONTROLLER",
//     "Control_ler") is refused, and so is an envelope name spelled with an
//     escape ("Contr\u006fller" is Controller once decoded, but a parser
//     that does not decode names would miss it), so the envelope names
//     left are exact and counted once;
//   - Controller, Topic and Action strings, Action one of the Action
//     constants exactly; TransactionID an integer within
//     ±MaxTransactionID, with no fraction or exponent; Confirm a boolean.
//     Data may be any value.
//
// Otherwise the error is a *ScanError wrapping ErrMalformed. Other members
// and Data are checked for syntax and UTF-8 only: duplicate names there are
// the backend's business (only the backend reads them), and finding them
// would cost memory out of proportion (see strict). Scan applies
// the Zenith defaults (DefaultController, DefaultAction). It never copies
// msg: Data and TransactionIDText alias it. Beyond msg it allocates the
// decoded Controller and Topic and, for an escaped one, a transient buffer
// as long as its JSON text: memory does not grow with the rest of the
// message (its names, nesting or Data). A size limit is the caller's.
// Scan is safe for concurrent use. The common message (ASCII, no escape)
// is read without the decoder (scanFast), to the same result.
func Scan(msg []byte) (Envelope, error) { return ScanReusing(msg, nil) }

// ScanReusing is Scan; when topic is not nil, a Topic equal to *topic is
// *topic, without a new string, and *topic becomes the Topic read (a
// session reads the same topics again and again). *topic is read and
// written without a lock: it belongs to the goroutine that scans.
func ScanReusing(msg []byte, topic *string) (Envelope, error) {
	if env, ok := scanFast(msg, topic); ok {
		return env, nil
	}
	return scanDecoder(msg)
}

// MaxDepth bounds a message's nesting, the envelope object's being 1:
// the default of System.Text.Json and Newtonsoft.Json (MaxDepth 64), which
// refuse a deeper message whole. The gateway refuses what the backend
// would: a message the backend drops while the gateway acts on it (an
// Unsub it tracks) would part the two.
const MaxDepth = 64

// MaxTransactionID bounds a client's TransactionID either way: 2^53 - 1,
// the largest integer a double holds exactly (the web client's numbers
// are doubles, as a backend in JavaScript reads them). A backend that
// rounds a larger one could echo it into the reserved range, where the
// gateway drops it as the answer to its own message.
const MaxTransactionID = 1<<53 - 1
