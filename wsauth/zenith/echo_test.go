package zenith

import (
	"cmp"
	"errors"
	"strings"
	"testing"
)

// TestScanErrorEcho: a refused message's Error reply may echo what was read
// before the fault, never Data, and the error text quotes nothing of the
// message.
func TestScanErrorEcho(t *testing.T) {
	msg := `{"Controller":"Market","Topic":"Depth!SECRET","TransactionID":42,"Data":{"AccessToken":"SECRET"},"topic":"x"}`
	_, err := Scan([]byte(msg))
	se, ok := errors.AsType[*ScanError](err)
	if !ok {
		t.Fatalf("error %v", err)
	}
	// "topic" makes Topic ambiguous (a lenient parser reads "x"): not
	// echoed; Controller and TransactionID are.
	if se.Echo.Controller != "Market" || se.Echo.Present&HasTopic != 0 || string(se.Echo.TransactionIDText) != "42" ||
		se.Echo.Data != nil || se.Echo.Present&HasData != 0 {
		t.Errorf("echo %+v", se.Echo)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error text quotes the message: %v", err)
	}
	_, err = Scan([]byte(`{"Topic":"Feeds","Data":{"AccessToken":"SECRET\ud800"}}`))
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error text quotes the message: %v", err)
	}
	_, err = Scan([]byte(`{"Topic":"x"`))
	se, _ = errors.AsType[*ScanError](err)
	if se == nil || se.Echo.Controller != DefaultController || se.Echo.Topic != "x" {
		t.Errorf("echo of a truncated message: %+v", se)
	}
}

// TestScanErrorEchoesWhatIsUnambiguous: a refused message's reply echoes
// Controller, Topic and TransactionID whenever the whole message gives
// each unambiguously (exactly once, a valid value, no variant of its name
// anywhere, after the fault too), and never one it gives ambiguously.
// It failed when: the echo held only what was read before the fault, so
// a TransactionID after a variant of Controller was lost and the client
// waited for its timeout.
func TestScanErrorEchoesWhatIsUnambiguous(t *testing.T) {
	for _, tt := range []struct {
		msg         string
		controller  string // "" when the default
		topic, txid string // "" when not echoed
	}{
		{`{"Controller":"Market","controller":"Trading","Topic":"QueryAccounts","TransactionID":44}`, "", "QueryAccounts", "44"},
		{`{"Controller":"Market","Controller":"Trading","Topic":"QueryAccounts","TransactionID":44}`, "", "QueryAccounts", "44"},
		{`{"Topic":"A","Topic":"B","TransactionID":45}`, "", "", "45"},
		{`{"Controller":"Market","Topic":"Depth","TransactionID":46,"transaction_id":47}`, "Market", "Depth", ""},
		{`{"Controller":"Market","TransactionID":48,"Transacti\u006fnID":49}`, "Market", "", ""},
		{`{"Controller":"Market","TransactionID":50,"Topic":7}`, "Market", "", "50"},
		{`{"Controller":"Market","TransactionID":"51","Action":"Nope"}`, "Market", "", ""},
		{"{\"Controller\":\"Market\",\"TransactionID\":52,\"Top\u0131c\":\"x\",\"Action\":1}", "", "", ""},
	} {
		_, err := Scan([]byte(tt.msg))
		se, ok := errors.AsType[*ScanError](err)
		if !ok {
			t.Fatalf("%s: error %v", tt.msg, err)
		}
		e := se.Echo
		wantCtl := cmp.Or(tt.controller, DefaultController)
		gotTopic := ""
		if e.Present&HasTopic != 0 {
			gotTopic = e.Topic
		}
		if e.Controller != wantCtl || gotTopic != tt.topic || string(e.TransactionIDText) != tt.txid {
			t.Errorf("%s: echo Controller %q Topic %q TransactionID %q, want %q %q %q", tt.msg, e.Controller, gotTopic, e.TransactionIDText, wantCtl, tt.topic, tt.txid)
		}
	}
}
