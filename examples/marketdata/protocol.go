package marketdata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Actions of the message container (docs/protocol.md, "Message
// container").
const (
	actionPublish = "Publish"
	actionSub     = "Sub"
	actionUnsub   = "Unsub"
	actionCancel  = "Cancel"
	actionError   = "Error"
)

// defaultController is the Controller of a message that names none.
const defaultController = "Zenith"

// Error codes, the Data of an Error message.
const (
	errAuthority   = "Authority"         // not permitted (here: no user named by the gateway)
	errController  = "Controller"        // no such controller
	errUnknown     = "Operation.Unknown" // no such topic, or not with this action
	errNoResult    = "Operation.NoResult"
	errDeserialise = "Data.Deserialise" // the message is not a well-formed container
)

// envelopeNames are the member names of the message container. They are
// case-sensitive; a case variant is a malformed message, not an unknown
// member, so that no parser downstream reads it differently.
var envelopeNames = []string{"Controller", "Topic", "Action", "TransactionID", "Data", "Confirm"}

// request is a message from the client, with the defaults applied by
// parseRequest (Controller "Zenith", Action "Publish").
type request struct {
	Controller    string
	Topic         string
	Action        string
	TransactionID *int64
	Confirm       bool
}

// errMalformed wraps every reason parseRequest refuses a message.
var errMalformed = errors.New("malformed message")

// parseRequest reads one message container: exactly one JSON object,
// nothing after it; envelope names in exact case, each at most once;
// Controller, Topic and Action strings, TransactionID an integer, Confirm a
// boolean; other members (Data included) are skipped. On error, the
// returned request holds the members read before the fault, so that the
// Error reply can echo them; the defaults are applied either way.
//
// It streams the object with a json.Decoder rather than decoding it into
// a map: at any time it holds the message and one member's value, never
// every member of a message of many small ones.
func parseRequest(msg []byte) (request, error) {
	var req request
	err := decodeRequest(msg, &req)
	if req.Controller == "" {
		req.Controller = defaultController
	}
	if req.Action == "" {
		req.Action = actionPublish
	}
	if err != nil {
		return req, fmt.Errorf("%w: %w", errMalformed, err)
	}
	return req, nil
}

func decodeRequest(msg []byte, req *request) error {
	dec := json.NewDecoder(bytes.NewReader(msg))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	var seen [6]bool // indexed like envelopeNames
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string) // dec.Token only returns strings as keys
		i := envelopeIndex(name)
		if i < 0 {
			if variantOfEnvelopeName(name) {
				return fmt.Errorf("member %q is a case variant of an envelope name", name)
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
			continue
		}
		if seen[i] {
			return fmt.Errorf("duplicate member %q", name)
		}
		seen[i] = true
		switch name {
		case "Controller":
			err = decodeString(dec, &req.Controller)
		case "Topic":
			err = decodeString(dec, &req.Topic)
		case "Action":
			err = decodeString(dec, &req.Action)
		case "TransactionID":
			var id *int64
			if err = dec.Decode(&id); err == nil {
				req.TransactionID = id
			}
		case "Confirm":
			var b *bool
			if err = dec.Decode(&b); err == nil && b != nil {
				req.Confirm = *b
			}
		default: // Data: no topic of this server reads it
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return fmt.Errorf("member %q: %w", name, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// decodeString decodes a string or null (left empty) into *s.
func decodeString(dec *json.Decoder, s *string) error {
	var p *string
	if err := dec.Decode(&p); err != nil {
		return err
	}
	if p != nil {
		*s = *p
	}
	return nil
}

func envelopeIndex(name string) int {
	for i, n := range envelopeNames {
		if n == name {
			return i
		}
	}
	return -1
}

func variantOfEnvelopeName(name string) bool {
	for _, n := range envelopeNames {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// reply is a message to the client. Data is omitted when nil.
type reply struct {
	Controller    string `json:"Controller"`
	Topic         string `json:"Topic,omitempty"`
	Action        string `json:"Action"`
	TransactionID *int64 `json:"TransactionID,omitempty"`
	Confirm       bool   `json:"Confirm,omitempty"`
	Data          any    `json:"Data,omitempty"`
}

// encode marshals a reply. The values given to it are this package's own
// types, which always marshal: a failure is a bug, and panics.
func encode(r reply) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("marketdata: encoding a reply: %v", err))
	}
	return b
}

// errorReply is the Error message answering req with code.
func errorReply(req request, code string) []byte {
	return encode(reply{Controller: req.Controller, Topic: req.Topic, Action: actionError,
		TransactionID: req.TransactionID, Data: code})
}
