package audit_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/audit"
)

// want is what Verify must report first after an edit: the kind (any kind
// when empty) and either the line (file and 1-based line) or the run and
// seq of the first bad record.
type want struct {
	kind    audit.ProblemKind
	file    string
	line    int
	run     string
	seq     uint64
	byPlace bool // compare file and line, else run and seq
}

// edit changes l and says what Verify must report.
type edit func(t *testing.T, rng *rand.Rand, l *tlog) want

var edits = map[string]edit{
	"change a byte":                    editByte,
	"drop a record":                    dropRecord,
	"swap two records":                 swapRecords,
	"insert a copy":                    insertCopy,
	"insert a record made to fit":      insertFitted,
	"drop the tail after a checkpoint": dropTail,
	"drop a whole run's file":          dropRun,
	"forge a checkpoint":               forgeCheckpoint,
}

// TestPropertyEveryEditIsCaught: over many random edits of a valid log of
// two instances, three runs each (one rolled over two files), Verify
// reports a problem, and its first problem names the first bad record and
// what happened. It failed when: a record's own hash was not checked (a
// changed byte was named one record late); a copy placed before a run's
// first record was named reordered; the final checkpoint was ignored (a
// record made to fit after it passed); the store's checkpoints were not
// compared (a tail dropped after a checkpoint passed); the signature was
// not checked (a forged checkpoint passed); of two records with one
// predecessor, the later was always named (a record made to fit named its
// successor).
func TestPropertyEveryEditIsCaught(t *testing.T) {
	bases := []*tlog{buildLog(t, 1, 2, 3, false), buildLog(t, 2, 2, 3, false), buildLog(t, 3, 2, 3, false)}
	names := make([]string, 0, len(edits))
	for name := range edits {
		names = append(names, name)
	}
	slices.Sort(names)
	iterations := 600
	if testing.Short() {
		iterations = 120
	}
	for i := range iterations {
		rng := rand.New(rand.NewPCG(uint64(i), 99))
		name := names[i%len(names)]
		l := bases[i%len(bases)].clone()
		w := edits[name](t, rng, l)
		rep := l.verify(t)
		first := rep.First()
		if first == nil {
			t.Fatalf("%s (iteration %d): not caught", name, i)
		}
		ok := w.kind == "" || first.Kind == w.kind
		if w.byPlace {
			ok = ok && first.File == w.file && first.Line == w.line
		} else {
			ok = ok && first.Run == w.run && first.Seq == w.seq
		}
		if !ok {
			t.Fatalf("%s (iteration %d): first problem %v; want %+v", name, i, first, w)
		}
	}
}

// pickLine picks a file with records and one of its lines.
func pickLine(rng *rand.Rand, l *tlog) (int, int) {
	for {
		fi := rng.IntN(len(l.files))
		if n := len(l.files[fi].lines); n > 0 {
			return fi, rng.IntN(n)
		}
	}
}

func editByte(t *testing.T, rng *rand.Rand, l *tlog) want {
	fi, li := pickLine(rng, l)
	line := l.files[fi].lines[li]
	j := rng.IntN(len(line))
	b := byte(rng.IntN(256))
	for b == line[j] {
		b = byte(rng.IntN(256))
	}
	line[j] = b
	// A line break put into the line splits it: its first part is at
	// the same line, and is not a record.
	return want{file: l.files[fi].name, line: li + 1, byPlace: true}
}

func dropRecord(t *testing.T, rng *rand.Rand, l *tlog) want {
	fi, li := pickLine(rng, l)
	r := mustParse(t, l.files[fi].lines[li])
	l.files[fi].lines = slices.Delete(l.files[fi].lines, li, li+1)
	return want{kind: audit.Removed, run: r.Run, seq: r.Seq}
}

func swapRecords(t *testing.T, rng *rand.Rand, l *tlog) want {
	for {
		fi, i := pickLine(rng, l)
		lines := l.files[fi].lines
		j := rng.IntN(len(lines))
		if i == j {
			continue
		}
		i, j = min(i, j), max(i, j)
		lines[i], lines[j] = lines[j], lines[i]
		r := mustParse(t, lines[i])
		return want{kind: audit.Reordered, file: l.files[fi].name, line: i + 1, seq: r.Seq, byPlace: true}
	}
}

func insertCopy(t *testing.T, rng *rand.Rand, l *tlog) want {
	fi, src := pickLine(rng, l)
	lines := l.files[fi].lines
	at := rng.IntN(len(lines) + 1)
	l.files[fi].lines = slices.Insert(lines, at, slices.Clone(lines[src]))
	if at == src {
		// Just before its original: the two are one record twice, and
		// the chain is whole up to the second.
		return want{kind: audit.Inserted, file: l.files[fi].name, line: at + 2, byPlace: true}
	}
	return want{kind: audit.Inserted, file: l.files[fi].name, line: at + 1, byPlace: true}
}

// insertFitted inserts a record made to fit after its predecessor: the
// right seq and prev, its hash computed, as one who knows the format
// would.
func insertFitted(t *testing.T, rng *rand.Rand, l *tlog) want {
	for {
		fi, li := pickLine(rng, l)
		at := li + 1 // after line li, its predecessor
		pred := mustParse(t, l.files[fi].lines[li])
		f := &audit.Record{Instance: pred.Instance, Run: pred.Run, Seq: pred.Seq + 1, Prev: pred.Hash, Time: pred.Time,
			Kind: audit.KindQuery, Attrs: []audit.Attr{audit.Int(audit.AttrRows, 1), audit.String(audit.AttrSubject, "mallory")}}
		f.Hash = audit.ComputeHash(f)
		lines := l.files[fi].lines
		if at == len(lines) && pred.Kind != audit.KindCheckpoint && fi+1 < len(l.files) {
			continue // a rolled file's end: its successor is in the next file
		}
		l.files[fi].lines = slices.Insert(lines, at, audit.MarshalLine(f))
		return want{kind: audit.Inserted, file: l.files[fi].name, line: at + 1, byPlace: true}
	}
}

func dropTail(t *testing.T, rng *rand.Rand, l *tlog) want {
	for {
		fi, li := pickLine(rng, l)
		lines := l.files[fi].lines
		r := mustParse(t, lines[li])
		if r.Kind != audit.KindCheckpoint || li == len(lines)-1 {
			continue
		}
		l.files[fi].lines = lines[:li+1]
		// A rolled run continues in the next file: drop that too.
		if fi+1 < len(l.files) && strings.HasPrefix(l.files[fi+1].name, r.Run+".") {
			l.files = slices.Delete(l.files, fi+1, fi+2)
		}
		return want{kind: audit.Removed, run: r.Run, seq: r.Seq + 1}
	}
}

func dropRun(t *testing.T, rng *rand.Rand, l *tlog) want {
	fi, _ := pickLine(rng, l)
	run := mustParse(t, l.files[fi].lines[0]).Run
	l.files = slices.DeleteFunc(l.files, func(f tfile) bool { return strings.HasPrefix(f.name, run+".") })
	return want{kind: audit.MissingRun, run: run, seq: mustSeqOfFirstExpected(l, run)}
}

// mustSeqOfFirstExpected is the seq Verify names for a missing run: that
// of the checkpoint that names it first (the next run's link names the
// last checkpoint, the store its first).
func mustSeqOfFirstExpected(l *tlog, run string) uint64 {
	for _, f := range l.files {
		for _, line := range f.lines {
			if strings.Contains(string(line), `"prev_run":"`+run+`"`) {
				r, _ := audit.ParseLine(line)
				v, _ := r.Attr(audit.AttrPrevSeq)
				n, _ := v.Int64()
				return uint64(n)
			}
		}
	}
	for _, cp := range l.expected {
		if cp.Run == run {
			return cp.Seq
		}
	}
	return 0
}

// forgeCheckpoint signs a checkpoint again with another key: under the
// audit key's kid, or under a kid of its own.
func forgeCheckpoint(t *testing.T, rng *rand.Rand, l *tlog) want {
	for {
		fi, li := pickLine(rng, l)
		r := mustParse(t, l.files[fi].lines[li])
		if r.Kind != audit.KindCheckpoint {
			continue
		}
		kid := l.signer.KeyID()
		if rng.IntN(2) == 0 {
			kid = "attacker"
		}
		evil := testKey(t, kid, fmt.Sprintf("evil %d", rng.IntN(1000)))
		r.JWS = resign(t, evil, r)
		l.files[fi].lines[li] = audit.MarshalLine(r)
		return want{kind: audit.ForgedCheckpoint, file: l.files[fi].name, line: li + 1, byPlace: true}
	}
}

// resign signs r's claims with s, as a writer holding s would.
func resign(t *testing.T, s audit.Signer, r *audit.Record) string {
	t.Helper()
	header := fmt.Sprintf(`{"alg":%q,"kid":%q,"typ":"gatehouse-audit+jwt"}`, s.Algorithm(), s.KeyID())
	claims := fmt.Sprintf(`{"instance":%q,"run":%q,"seq":%d,"hash":"%x","time":%q}`,
		r.Instance, r.Run, r.Seq, r.Hash, r.Time.Format(audit.TimeLayout))
	return signJWS(t, s, header, claims)
}

// signJWS makes a compact JWS of header and claims (JSON text) with s.
func signJWS(t testing.TB, s audit.Signer, header, claims string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	input := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	sig, err := s.Sign(input)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc.EncodeToString(sig)
}
