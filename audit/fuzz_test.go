package audit_test

import (
	"bytes"
	"crypto"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gatehouse/gatehouse/audit"
)

// FuzzParseLine: a line ParseLine accepts is one record: written back
// with MarshalLine it parses to the same fields, canonical encoding and
// jws, and writing it again gives the same bytes. It failed when:
// MarshalLine wrote integers unsigned (a negative one came back refused).
func FuzzParseLine(f *testing.F) {
	l := buildLog(f, 8, 1, 1, false)
	for _, line := range l.files[0].lines {
		f.Add(line)
	}
	f.Add([]byte(`{"level":"info","ts":1,"instance":"a","run":"b","seq":1,"prev":"` + zeros + `","hash":"` + zeros +
		`","time":"2026-01-01T00:00:00.000000000Z","kind":"x","attrs":{"n":-1,"l":[],"s":"\u00e9\n"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := audit.ParseLine(line)
		if err != nil {
			return
		}
		out := audit.MarshalLine(r)
		r2, err := audit.ParseLine(out)
		if err != nil {
			t.Fatalf("MarshalLine wrote a line ParseLine refuses: %v\n%s", err, out)
		}
		if !bytes.Equal(audit.Canonical(r), audit.Canonical(r2)) || r.Prev != r2.Prev || r.Hash != r2.Hash || r.JWS != r2.JWS {
			t.Fatalf("round trip changed the record:\n%s\n%s", line, out)
		}
		if !slices.Equal(out, audit.MarshalLine(r2)) {
			t.Fatalf("MarshalLine is not stable:\n%s\n%s", out, audit.MarshalLine(r2))
		}
	})
}

// FuzzParseRecords: a line ParseRecords accepts, of either form, holds
// records that, written back as a batch line, parse to the same fields,
// canonical encodings and jws, in the same order, and writing them again
// gives the same bytes. Its seeds are batch lines of both spellings
// (LineSink's and zap's) and record lines. It failed when:
// MarshalBatchLine joined the records without commas (seen on purpose).
func FuzzParseRecords(f *testing.F) {
	l := buildLog(f, 8, 1, 1, false)
	for _, line := range l.files[0].lines[:3] {
		f.Add(line)
	}
	m := modelOf(f, l, rand.New(rand.NewPCG(8, 5)), true)
	for _, line := range m.files[0].lines {
		f.Add(line.bytes(f))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		rs, err := audit.ParseRecords(line)
		if err != nil {
			return
		}
		out := audit.MarshalBatchLine(rs)
		rs2, err := audit.ParseRecords(out)
		if err != nil {
			t.Fatalf("MarshalBatchLine wrote a line ParseRecords refuses: %v\n%s", err, out)
		}
		if len(rs) != len(rs2) {
			t.Fatalf("%d records came back as %d:\n%s\n%s", len(rs), len(rs2), line, out)
		}
		for i, r := range rs {
			r2 := rs2[i]
			if !bytes.Equal(audit.Canonical(r), audit.Canonical(r2)) || r.Prev != r2.Prev || r.Hash != r2.Hash || r.JWS != r2.JWS {
				t.Fatalf("round trip changed record %d:\n%s\n%s", i+1, line, out)
			}
		}
		if !slices.Equal(out, audit.MarshalBatchLine(rs2)) {
			t.Fatalf("MarshalBatchLine is not stable:\n%s\n%s", out, audit.MarshalBatchLine(rs2))
		}
		if len(rs) == 1 && bytes.Contains(line, []byte(`"records"`)) == false {
			if r, err := audit.ParseLine(line); err != nil || r.Hash != rs[0].Hash {
				t.Fatalf("ParseRecords read a record line ParseLine refuses: %v", err)
			}
		}
	})
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"

// FuzzVerifyNoPanic: Verify reads any bytes as a file without panicking
// (its only oracle), with and without a final line break.
func FuzzVerifyNoPanic(f *testing.F) {
	l := buildLog(f, 9, 1, 1, false)
	f.Add(l.files[0].bytes())
	f.Add(l.files[0].bytes()[:100])
	batched, _ := modelOf(f, l, rand.New(rand.NewPCG(9, 5)), true).tlog(f)
	b := batched.files[0].bytes()
	f.Add(b)
	f.Add(b[:len(b)*2/3]) // a batch line cut short
	keys := map[string]crypto.PublicKey{l.signer.KeyID(): l.signer.Public()}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := audit.Verify([]audit.File{{Name: "f", R: bytes.NewReader(b)}}, audit.VerifyOptions{Keys: keys, Expected: l.expected})
		if err != nil {
			t.Fatal(err)
		}
	})
}
