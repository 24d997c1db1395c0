package marketdata

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseRequest checks that every message parseRequest accepts is read
// as encoding/json reads it: one valid JSON object whose envelope members
// appear once each, in exact case, with the values parseRequest returns
// (after the defaults).
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":1,"Confirm":true}`,
		`{"Topic":"ServerInfo"}`,
		`{"Contr\u006fller":"Market","Topic":"QueryMarkets","Data":{"a":[1,2]}}`,
		`{"controller":"Market"}`,
		`{"Controller":"Market","Controller":"Trading"}`,
		`{"TransactionID":1.5}`,
		`{} {}`,
		`[]`,
		"{\"Topic\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		req, err := parseRequest(msg)
		if req.Controller == "" || req.Action == "" {
			t.Fatalf("defaults not applied: %+v", req)
		}
		if err != nil {
			return
		}
		if !json.Valid(msg) {
			t.Fatalf("accepted invalid JSON %q", msg)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(msg, &members); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", msg, err)
		}
		for _, name := range topLevelNames(t, msg) {
			if i := envelopeIndex(name); i < 0 && variantOfEnvelopeName(name) {
				t.Fatalf("accepted %q with member %q", msg, name)
			}
		}
		want := request{Controller: defaultController, Action: actionPublish}
		str := func(name string, v *string) {
			if raw, ok := members[name]; ok {
				var s *string
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatalf("accepted %q: %s: %v", msg, name, err)
				}
				if s != nil && *s != "" {
					*v = *s
				}
			}
		}
		str("Controller", &want.Controller)
		str("Topic", &want.Topic)
		str("Action", &want.Action)
		if raw, ok := members["TransactionID"]; ok {
			if err := json.Unmarshal(raw, &want.TransactionID); err != nil {
				t.Fatalf("accepted %q: TransactionID: %v", msg, err)
			}
		}
		if raw, ok := members["Confirm"]; ok {
			var b *bool
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatalf("accepted %q: Confirm: %v", msg, err)
			}
			want.Confirm = b != nil && *b
		}
		if req.Controller != want.Controller || req.Topic != want.Topic || req.Action != want.Action ||
			req.Confirm != want.Confirm || !samePointee(req.TransactionID, want.TransactionID) {
			t.Fatalf("%q: parsed %+v, encoding/json reads %+v", msg, req, want)
		}
	})
}

// topLevelNames returns the member names of the JSON object msg, in
// order, duplicates included, failing on a duplicate envelope name.
func topLevelNames(t *testing.T, msg []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var names []string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		name := tok.(string)
		if envelopeIndex(name) >= 0 && seen[name] {
			t.Fatalf("accepted %q with %q twice", msg, name)
		}
		seen[name] = true
		names = append(names, name)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

func samePointee(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
