package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
)

// TestCanonicalBytes holds Canonical to the table in doc.go, byte by byte,
// built here by hand from that table. It failed when: the domain tag was
// left out of the encoding.
func TestCanonicalBytes(t *testing.T) {
	r := &audit.Record{Instance: "gw", Run: "r1", Seq: 258, Kind: audit.KindQuery,
		Time:  time.Date(2026, 3, 2, 9, 0, 0, 5, time.UTC),
		Attrs: []audit.Attr{audit.Bool("a", true), audit.Int("n", -2), audit.String("s", "é"), audit.Strings("v", "X", "")}}
	var want bytes.Buffer
	str := func(s string) {
		binary.Write(&want, binary.BigEndian, uint32(len(s)))
		want.WriteString(s)
	}
	str("gatehouse-audit/1")
	str("gw")
	str("r1")
	want.Write([]byte{0, 0, 0, 0, 0, 0, 1, 2})
	str("2026-03-02T09:00:00.000000005Z")
	str("query")
	want.Write([]byte{0, 0, 0, 4})
	str("a")
	want.Write([]byte{'b', 1})
	str("n")
	want.Write([]byte{'i', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe})
	str("s")
	want.WriteByte('s')
	str("é")
	str("v")
	want.Write([]byte{'l', 0, 0, 0, 2})
	str("X")
	str("")
	if got := audit.Canonical(r); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("canonical\n got %x\nwant %x", got, want.Bytes())
	}
	r.Prev[0] = 7
	if got, want := audit.ComputeHash(r), sha256.Sum256(append(r.Prev[:], want.Bytes()...)); got != want {
		t.Fatalf("hash %x, want SHA-256(prev ‖ canonical) %x", got, want)
	}
}

// TestHashIsTheEncodersBusinessNot: one record, spelled differently
// (member order, escapes, an envelope), parses to the same hash; a line
// with an attribute key no code knows parses and keeps its hash. It failed
// when: ParseLine left the attributes in the map's order rather than by
// key.
func TestHashIsTheEncodersBusinessNot(t *testing.T) {
	l := buildLog(t, 4, 1, 1, false)
	line := string(l.files[0].lines[1])
	r := mustParse(t, []byte(line))
	if audit.ComputeHash(r) != r.Hash {
		t.Fatal("a written line does not hash to its hash")
	}
	_, attrs, _ := strings.Cut(line, `"attrs":`)
	head, _, _ := strings.Cut(line, `,"attrs":`)
	respelled := `{"level":"info","ts":1.5,"attrs":` + strings.TrimSuffix(attrs, "}") + "," + strings.TrimPrefix(head, "{") + "}"
	// The kind's first letter as a JSON escape.
	respelled = strings.Replace(respelled, `"kind":"`+string(r.Kind[0]), fmt.Sprintf(`"kind":"\u%04x`, r.Kind[0]), 1)
	r2, err := audit.ParseLine([]byte(respelled))
	if err != nil {
		t.Fatalf("%v: %s", err, respelled)
	}
	if audit.ComputeHash(r2) != r.Hash {
		t.Fatalf("respelled line hashes differently: %s", respelled)
	}
	future := strings.Replace(line, `"attrs":{`, `"attrs":{"zz_future":["a","b"],`, 1)
	r3 := mustParse(t, []byte(future))
	r3.Hash = audit.ComputeHash(r3)
	if r4 := mustParse(t, audit.MarshalLine(r3)); audit.ComputeHash(r4) != r3.Hash {
		t.Fatal("an unknown attribute key does not survive a round trip")
	}
}
