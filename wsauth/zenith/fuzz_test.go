package zenith

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzScan: scanFast, when it takes a message, gives what the decoder
// does (checkScanFast). Whatever Scan accepts, every reference parser below (exact,
// case-insensitive as encoding/json, case-, '_'- and '-'-insensitive as
// encoding/json/v2's nocase, or comparing names undecoded; each with the
// first or the last duplicate winning) sees exactly the Controller, Topic
// and Action Scan reported, with the Zenith defaults; and an exact parser
// sees the same TransactionID and Data bytes. A refused message is refused
// for invalid UTF-8 exactly when it is not UTF-8.
func FuzzScan(f *testing.F) {
	for _, c := range scanAccepts {
		f.Add([]byte(c.msg))
	}
	for _, c := range scanRefusals {
		f.Add([]byte(c.msg))
	}
	f.Add([]byte(`{"Controller":"Market","Topic":"Depth!BHP.ASX","Action":"Sub","TransactionID":3,"Confirm":false,"Data":{"Controller":"Auth"}}`))
	f.Add([]byte(`{"Controller":"Trading","Topic":"PlaceOrder","TransactionID":1,"Data":{"Account":"1\u0000","Side":"Buy","Controller":[{"a":null}]}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		checkScanFast(t, msg)
		env, err := Scan(msg)
		if err != nil {
			se, ok := errors.AsType[*ScanError](err)
			switch {
			case !ok:
				t.Fatalf("untyped error %v", err)
			case errors.Is(err, ErrInvalidUTF8) == utf8.Valid(msg):
				t.Fatalf("error %v for a message whose UTF-8 validity is %v", err, utf8.Valid(msg))
			case se.Echo.Data != nil || env.Present != 0:
				t.Fatalf("a refused message gave Data %q or an envelope %+v", se.Echo.Data, env)
			}
			return
		}
		if !utf8.Valid(msg) || !json.Valid(msg) {
			t.Fatalf("accepted a message encoding/json finds invalid")
		}
		if d := jsonNesting(msg); d > MaxDepth {
			t.Fatalf("accepted a message nested %d deep, which System.Text.Json refuses", d)
		}
		if env.TransactionID > MaxTransactionID || env.TransactionID < -MaxTransactionID {
			t.Fatalf("accepted TransactionID %d, which a double does not hold exactly", env.TransactionID)
		}
		var exact map[string]json.RawMessage // the plainest parser: exact names, last wins
		if err := json.Unmarshal(msg, &exact); err != nil {
			t.Fatalf("accepted a message that is not one JSON object: %v", err)
		}
		ms := topLevelMembers(t, msg)
		for _, m := range ms {
			for _, c := range []byte(m.name) {
				if c < 0x20 || c > 0x7e {
					t.Fatalf("accepted the member name %q", m.name)
				}
			}
		}
		for _, p := range refParsers {
			for _, firstWins := range []bool{true, false} {
				seen := p.read(t, ms, firstWins)
				if seen.controller != env.Controller || seen.topic != env.Topic || seen.action != env.Action {
					t.Fatalf("parser %s (first wins %v) sees %q/%q/%q, Scan reported %q/%q/%q",
						p.name, firstWins, seen.controller, seen.topic, seen.action, env.Controller, env.Topic, env.Action)
				}
			}
		}
		for i, name := range envelopeNames {
			raw, present := exact[name]
			if present != (env.Present&(1<<i) != 0) {
				t.Fatalf("%s present %v, Scan's Present %b", name, present, env.Present)
			}
			switch name {
			case "TransactionID":
				if !bytes.Equal(raw, env.TransactionIDText) {
					t.Fatalf("TransactionID %q, Scan's text %q", raw, env.TransactionIDText)
				}
				if present {
					if n, err := strconv.ParseInt(string(raw), 10, 64); err != nil || n != env.TransactionID {
						t.Fatalf("TransactionID %q, Scan's %d (%v)", raw, env.TransactionID, err)
					}
				}
			case "Data":
				if !bytes.Equal(raw, env.Data) {
					t.Fatalf("Data %q, Scan's %q", raw, env.Data)
				}
			case "Confirm":
				var b bool
				if present && (json.Unmarshal(raw, &b) != nil || b != env.Confirm) {
					t.Fatalf("Confirm %s, Scan's %v", raw, env.Confirm)
				}
			}
		}
	})
}

// member is one top-level member: its name as written (quotes included),
// the name as encoding/json decodes it, and its value.
type member struct {
	raw   string
	name  string
	value json.RawMessage
}

// topLevelMembers lists msg's top-level members in order, duplicates kept:
// encoding/json's token stream gives the decoded names and the values; a
// lenient jsontext decoder (duplicates allowed) gives the names as written.
func topLevelMembers(t *testing.T, msg []byte) []member {
	t.Helper()
	var ms []member
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, member{name: tok.(string), value: v})
	}
	raw := jsontext.NewDecoder(bytes.NewReader(msg), jsontext.AllowDuplicateNames(true))
	if _, err := raw.ReadToken(); err != nil {
		t.Fatal(err)
	}
	for i := 0; raw.PeekKind() != '}'; i++ {
		name, err := raw.ReadValue()
		if err != nil || i >= len(ms) {
			t.Fatalf("member %d: %v", i, err)
		}
		ms[i].raw = string(name)
		if err := raw.SkipValue(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.ReadToken(); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ReadToken(); err != io.EOF {
		t.Fatalf("after the object: %v", err)
	}
	return ms
}

// refParser is how one backend might find an envelope member.
type refParser struct {
	name  string
	match func(m member, want string) bool
}

var refParsers = []refParser{
	{"exact", func(m member, want string) bool { return m.name == want }},
	{"case-insensitive", func(m member, want string) bool { return strings.EqualFold(m.name, want) }},
	{"nocase (v2)", func(m member, want string) bool { return strings.EqualFold(dropDashes(m.name), want) }},
	{"undecoded names", func(m member, want string) bool { return m.raw == `"`+want+`"` }},
	{"undecoded, case-insensitive", func(m member, want string) bool { return strings.EqualFold(m.raw, `"`+want+`"`) }},
}

func dropDashes(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(s)
}

type seen struct{ controller, topic, action string }

// read is what the parser sees, the Zenith defaults applied; a member it
// takes for Controller, Topic or Action that is not a string fails the
// test, since Scan accepted the message.
func (p refParser) read(t *testing.T, ms []member, firstWins bool) seen {
	t.Helper()
	get := func(want, def string) string {
		var found *member
		for i := range ms {
			if p.match(ms[i], want) && (found == nil || !firstWins) {
				found = &ms[i]
			}
		}
		if found == nil {
			return def
		}
		var s string
		if err := json.Unmarshal(found.value, &s); err != nil {
			t.Fatalf("parser %s (first wins %v) reads %s from %s: %v", p.name, firstWins, want, found.value, err)
		}
		return s
	}
	return seen{get("Controller", DefaultController), get("Topic", ""), get("Action", DefaultAction)}
}

// ownerSeeds are AuthOwner Data values: accepted, refused and tricky.
var ownerSeeds = []string{
	`{"Username":"trader","Password":"trader"}`,
	`{"ClientID":"demo-app","ClientSecret":"s","Username":"trader","Password":"trader","Remember":true}`,
	`{"Us\u0065rname":"trader","Password":"p\u00e4ss"}`,
	`{"Username":"trader","Password":"trader","Username":"demo"}`,
	`{"Username":"trader","Us\u0065rname":"demo","Password":"x"}`,
	`{"username":"trader","Password":"x"}`,
	`{"Username":"trader","Password":1}`,
	`{"Username":"","Password":"x"}`,
	`{"Username":"trader","Password":"x"} `,
	`{"Username":"trader","Password":"x"}{}`,
	`{"Username":"tr\ud800der","Password":"x"}`,
	"{\"Username\":\"tr\xffder\",\"Password\":\"x\"}",
	`{"Other":{"Username":"x"},"Username":"a","Password":"b"}`,
	`[]`, `null`, `"x"`, ``,
}

// FuzzOwnerData checks ParseAuthOwner against a reference: encoding/json v2
// (go-json-experiment), which matches names exactly after decoding their
// escapes, refuses invalid UTF-8 and ignores unknown members, with
// duplicate names allowed (ParseAuthOwner leaves other members' duplicates
// alone), plus a count of the four names at the top level (ParseAuthOwner
// refuses any of them twice). Whatever one accepts the other must, with
// the same strings.
func FuzzOwnerData(f *testing.F) {
	for _, s := range ownerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := ParseAuthOwner(data)
		var want struct {
			ClientID     string `json:"ClientID"`
			ClientSecret string `json:"ClientSecret"`
			Username     string `json:"Username"`
			Password     string `json:"Password"`
		}
		err := jsonv2.Unmarshal(data, &want, jsontext.AllowDuplicateNames(true))
		wantOK := err == nil && want.Username != "" && want.Password != "" && !ownerNameTwice(data)
		if ok != wantOK {
			t.Fatalf("ParseAuthOwner(%q) ok=%v; reference ok=%v (%v)", data, ok, wantOK, err)
		}
		if ok && (got.ClientID != want.ClientID || got.ClientSecret != want.ClientSecret ||
			got.Username != want.Username || got.Password != want.Password) {
			t.Fatalf("ParseAuthOwner(%q) = %+v; reference %+v", data, got, want)
		}
	})
}

// ownerNameTwice reports whether one of AuthOwner's four names appears
// twice among the top-level members of data, a valid JSON object.
func ownerNameTwice(data []byte) bool {
	d := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	count := map[string]int{}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return false
		}
		n := tok.String()
		if d.SkipValue() != nil {
			return false
		}
		switch n {
		case "ClientID", "ClientSecret", "Username", "Password":
			if count[n]++; count[n] > 1 {
				return true
			}
		}
	}
	return false
}

// checkScanFast fails t unless scanFast, when it takes msg, returns what
// the decoder does (scanDecoder), and takes every ASCII message without
// an escape, nested at most fastDepth deep, that the decoder accepts.
func checkScanFast(t *testing.T, msg []byte) {
	t.Helper()
	fast, ok := scanFast(msg, nil)
	slow, err := scanDecoder(msg)
	if ok {
		if err != nil {
			t.Fatalf("scanFast took %q, which the decoder refuses: %v", msg, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("scanFast read %q as %+v, the decoder as %+v", msg, fast, slow)
		}
		return
	}
	if err == nil && !bytes.ContainsAny(msg, "\\") && asciiOnly(msg) && depth(msg) <= fastDepth {
		t.Fatalf("scanFast left %q, which it could read, to the decoder", msg)
	}
}

func asciiOnly(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// jsonNesting is the deepest nesting of msg, a valid JSON text, read with
// encoding/json's decoder (not tooDeep's byte scan).
func jsonNesting(msg []byte) int {
	d := json.NewDecoder(bytes.NewReader(msg))
	level, deepest := 0, 0
	for {
		tok, err := d.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			level++
			deepest = max(deepest, level)
		case json.Delim('}'), json.Delim(']'):
			level--
		}
	}
}

// depth is the deepest nesting of brackets in msg, counting those in
// strings too (an upper bound).
func depth(msg []byte) int {
	d, deepest := 0, 0
	for _, c := range msg {
		switch c {
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d--
		}
	}
	return deepest
}
