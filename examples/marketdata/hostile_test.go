package marketdata

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestMalformedMessages sends messages that are not well-formed message
// containers: each gets Error "Data.Deserialise" echoing what could be
// read of Controller, Topic and TransactionID, and the connection stays
// open.
func TestMalformedMessages(t *testing.T) {
	_, srv := start(t, testConfig())
	c := dial(t, srv, "")
	tests := []struct {
		name, msg  string
		controller string
		topic      string
		id         *int64
	}{
		{"not JSON", `not json`, "Zenith", "", nil},
		{"empty", ``, "Zenith", "", nil},
		{"truncated", `{"Controller":"Market","Topic":"QueryMarkets"`, "Market", "QueryMarkets", nil},
		{"array", `[{"Controller":"Market","Topic":"QueryMarkets"}]`, "Zenith", "", nil},
		{"string", `"Controller"`, "Zenith", "", nil},
		{"null", `null`, "Zenith", "", nil},
		{"trailing object", `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":1} {}`, "Market", "QueryMarkets", int64p(1)},
		{"trailing bytes", `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":1}x`, "Market", "QueryMarkets", int64p(1)},
		{"duplicate controller", `{"Controller":"Market","Topic":"QueryMarkets","Controller":"Trading","TransactionID":2}`, "Market", "QueryMarkets", nil},
		{"duplicate topic", `{"Topic":"ServerInfo","Topic":"Feeds"}`, "Zenith", "ServerInfo", nil},
		{"controller in another case", `{"controller":"Trading","Controller":"Market","Topic":"QueryMarkets"}`, "Zenith", "", nil},
		{"topic in upper case", `{"Controller":"Market","TOPIC":"QueryMarkets"}`, "Market", "", nil},
		{"non-ASCII case variant", `{"Controller":"Market","Topic":"QueryMarkets","Tran\u017factionID":3}`, "Market", "QueryMarkets", nil},
		{"transaction id string", `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":"7"}`, "Market", "QueryMarkets", nil},
		{"transaction id fraction", `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":1.5}`, "Market", "QueryMarkets", nil},
		{"transaction id exponent", `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":1e3}`, "Market", "QueryMarkets", nil},
		{"transaction id too big", `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":9223372036854775808}`, "Market", "QueryMarkets", nil},
		{"controller number", `{"Controller":5,"Topic":"QueryMarkets"}`, "Zenith", "", nil},
		{"topic object", `{"Controller":"Market","Topic":{"a":1},"TransactionID":4}`, "Market", "", nil},
		{"confirm string", `{"TransactionID":5,"Topic":"Feeds","Action":"Sub","Confirm":"yes"}`, "Zenith", "Feeds", int64p(5)},
		{"malformed data", `{"TransactionID":6,"Topic":"ServerInfo","Data":{"a":}}`, "Zenith", "ServerInfo", int64p(6)},
		{"too deep", `{"TransactionID":7,"Data":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, "Zenith", "", int64p(7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			c.send(tt.msg)
			m := c.next()
			if code := m.errorCode(t); code != errDeserialise {
				t.Errorf("code %q, want %q", code, errDeserialise)
			}
			if m.Controller != tt.controller || m.Topic != tt.topic || !reflect.DeepEqual(m.TransactionID, tt.id) {
				t.Errorf("got %s, want Controller %q, Topic %q, TransactionID %v", m.raw, tt.controller, tt.topic, tt.id)
			}
		})
	}

	// Well-formed after all: names are compared once their escapes are
	// decoded, other members are ignored, null is an absent value.
	valid := []string{
		`{"Contr\u006fller":"Market","Topic":"QueryMarkets","TransactionID":8}`,
		`{"Controller":"Market","Topic":"QueryMarkets","Extra":[1,{"a":null}],"TransactionID":8}`,
		` {"Controller":"Market","Topic":"QueryMarkets","TransactionID":8,"Data":null,"Action":null} ` + "\n",
	}
	for _, msg := range valid {
		t.Run("valid "+msg, func(t *testing.T) {
			c.t = t
			c.send(msg)
			if m := c.next(); m.Action != actionPublish || m.Topic != "QueryMarkets" || *m.TransactionID != 8 {
				t.Fatalf("got %s", m.raw)
			}
		})
	}
}

// TestCaseVariantIsRefused checks every envelope name: a member whose
// name differs from one only in case makes the message malformed.
func TestCaseVariantIsRefused(t *testing.T) {
	for _, name := range []string{"controller", "TOPIC", "action", "transactionid", "data", "CONFIRM"} {
		if _, err := parseRequest([]byte(`{"` + name + `":1}`)); err == nil {
			t.Errorf("member %q accepted", name)
		}
	}
}

// TestClosingFrames sends frames the server closes the connection for.
func TestClosingFrames(t *testing.T) {
	_, srv := start(t, testConfig())
	tests := []struct {
		name string
		kind int
		msg  []byte
		code int
	}{
		{"binary", websocket.BinaryMessage, []byte(`{"Topic":"ServerInfo"}`), websocket.CloseUnsupportedData},
		{"invalid UTF-8", websocket.TextMessage, []byte("{\"Topic\":\"\xff\"}"), websocket.CloseInvalidFramePayloadData},
		{"oversized", websocket.TextMessage, paddedRequest(DefaultReadLimit + 1), websocket.CloseMessageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, srv, "")
			_ = c.ws.SetWriteDeadline(time.Now().Add(wait))
			// The server may close before it has read all of an
			// oversized message: the write may fail, the close frame is
			// read anyway.
			_ = c.ws.WriteMessage(tt.kind, tt.msg)
			if code := c.closed(); code != tt.code {
				t.Errorf("close code %d, want %d", code, tt.code)
			}
		})
	}

	t.Run("largest message", func(t *testing.T) {
		c := dial(t, srv, "")
		c.send(string(paddedRequest(DefaultReadLimit)))
		if m := c.next(); m.Topic != "ServerInfo" || m.Action != actionPublish {
			t.Fatalf("got %s", m.raw)
		}
	})
}

// paddedRequest is a ServerInfo request of exactly size bytes.
func paddedRequest(size int) []byte {
	head := []byte(`{"Topic":"ServerInfo","Data":"`)
	msg := append(head, bytes.Repeat([]byte("x"), size-len(head)-2)...)
	return append(msg, `"}`...)
}

// TestRefusedUpgrades checks the HTTP refusals before the upgrade.
func TestRefusedUpgrades(t *testing.T) {
	_, srv := start(t, testConfig())
	tests := []struct {
		name   string
		query  string
		header http.Header
		protos []string
		want   int
	}{
		{"malformed version", "?version=1.1;drop", nil, nil, http.StatusBadRequest},
		{"empty version", "?version=", nil, nil, http.StatusBadRequest},
		{"two versions", "?version=1.1&version=2.0", nil, nil, http.StatusBadRequest},
		{"repeated user header", "", http.Header{DefaultUserIDHeader: {"a", "b"}}, nil, http.StatusBadRequest},
		{"unsupported sub-protocol", "", nil, []string{"ServiceBson"}, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := websocket.Dialer{Subprotocols: tt.protos, HandshakeTimeout: wait}
			ws, resp, err := d.Dial(wsURL(srv, tt.query), tt.header)
			if err == nil {
				_ = ws.Close()
				t.Fatal("upgraded")
			}
			if resp == nil || resp.StatusCode != tt.want {
				t.Fatalf("got %v, %v; want HTTP %d", resp, err, tt.want)
			}
		})
	}
	t.Run("not a WebSocket", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/ws")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("HTTP %d, want 400", resp.StatusCode)
		}
	})
	t.Run("one of the offered sub-protocols", func(t *testing.T) {
		c := dialWith(t, wsURL(srv, ""), nil, &websocket.Dialer{Subprotocols: []string{"ServiceBson", SubprotocolZenith, SubprotocolService}})
		if got := c.ws.Subprotocol(); got != SubprotocolService {
			t.Errorf("sub-protocol %q, want the server's first choice %q", got, SubprotocolService)
		}
	})
}
