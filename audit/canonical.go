package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// domain opens every canonical encoding: it names the format and its
// version, so that no other SHA-256 input of ours can collide with a
// record's.
const domain = "gatehouse-audit/1"

// Canonical returns the canonical encoding of r's hashed fields (doc.go
// gives it byte by byte): instance, run, seq, time, kind and the
// attributes sorted by key. Prev, Hash and JWS are not in it. Attributes
// must be sorted with unique keys, as the writer and ParseLine leave them.
func Canonical(r *Record) []byte { return appendCanonical(make([]byte, 0, 128+32*len(r.Attrs)), r) }

func appendCanonical(b []byte, r *Record) []byte {
	b = appendStr(b, domain)
	b = appendStr(b, r.Instance)
	b = appendStr(b, r.Run)
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = appendTime(b, r.Time)
	b = appendStr(b, string(r.Kind))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Attrs)))
	for _, a := range r.Attrs {
		b = appendStr(b, a.Key)
		v := a.Value
		b = append(b, v.kind())
		switch v.kind() {
		case typeString:
			b = appendStr(b, v.s)
		case typeInt:
			b = binary.BigEndian.AppendUint64(b, uint64(v.n))
		case typeBool:
			b = append(b, byte(v.n))
		case typeStrings:
			b = binary.BigEndian.AppendUint32(b, uint32(len(v.list)))
			for _, s := range v.list {
				b = appendStr(b, s)
			}
		}
	}
	return b
}

// appendStr appends s with its length: a 4-byte big-endian byte count,
// then its bytes.
func appendStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// appendTime appends str(t in TimeLayout), formatting in place.
func appendTime(b []byte, t time.Time) []byte {
	n := len(b)
	b = t.UTC().AppendFormat(append(b, 0, 0, 0, 0), TimeLayout)
	binary.BigEndian.PutUint32(b[n:], uint32(len(b)-n-4))
	return b
}

// ComputeHash is SHA-256 over r.Prev followed by Canonical(r). The writer
// hashes every record in its flush: the input is built on the stack
// (a query's record fits), not allocated.
func ComputeHash(r *Record) [32]byte {
	var buf [1024]byte
	return sha256.Sum256(appendCanonical(append(buf[:0], r.Prev[:]...), r))
}
