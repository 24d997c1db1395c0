package audit_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gatehouse/gatehouse/audit"
)

// want is what Verify must report first after an edit: the kind (any kind
// when empty) and either the place (file, line and, in a batch line, the
// record's index) or the run and seq of the first bad record.
type want struct {
	kind    audit.ProblemKind
	at      audit.Position
	orLine  bool // byPlace: the whole line (index 0) will do too
	run     string
	seq     uint64
	byPlace bool // compare the place, else run and seq
}

// edit changes m, writes it, and says what Verify must report.
type edit func(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want)

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
// two instances, three runs each (one rolled over two files), most of its
// records in batch lines (LineSink's and zap's), Verify reports a problem,
// and its first problem names the first bad record (its line and, inside
// a batch line, its index) and what happened. It failed when: a record's
// own hash was not checked (a changed byte was named one record late); a
// copy placed before a run's first record was named reordered; the final
// checkpoint was ignored (a record made to fit after it passed); the
// store's checkpoints were not compared (a tail dropped after a checkpoint
// passed); the signature was not checked (a forged checkpoint passed); of
// two records with one predecessor, the later was always named (a record
// made to fit named its successor); a batch line's records were all given
// index 1 (a copy inserted into a batch line was named at the wrong
// record); the reader took only a batch line's first record, or the walk
// skipped the own-hash check inside batch lines (seen on purpose).
func TestPropertyEveryEditIsCaught(t *testing.T) {
	var bases []*blog
	for seed := range uint64(4) {
		// The first base has no batch line: the record lines of old logs.
		bases = append(bases, modelOf(t, buildLog(t, seed+1, 2, 3, false), rand.New(rand.NewPCG(seed, 5)), seed > 0))
	}
	names := make([]string, 0, len(edits))
	for name := range edits {
		names = append(names, name)
	}
	slices.Sort(names)
	iterations := 800
	if testing.Short() {
		iterations = 160
	}
	for i := range iterations {
		rng := rand.New(rand.NewPCG(uint64(i), 99))
		name := names[i%len(names)]
		m := bases[i/len(names)%len(bases)].clone() // every edit on every base
		l, w := edits[name](t, rng, m)
		rep := l.verify(t)
		first := rep.First()
		if first == nil {
			t.Fatalf("%s (iteration %d): not caught", name, i)
		}
		ok := w.kind == "" || first.Kind == w.kind
		if w.byPlace {
			line := w.at
			line.Index = 0
			ok = ok && (first.Position == w.at || w.orLine && first.Position == line)
		} else {
			ok = ok && first.Run == w.run && first.Seq == w.seq
		}
		if !ok {
			t.Fatalf("%s (iteration %d): first problem %v; want %+v", name, i, first, w)
		}
	}
}

// editByte changes one byte of a line. In a batch line of zap's, the byte
// is in the records (the envelope is not protected: an edit of it passes).
// A line that stays JSON names the record the byte is in; one that does
// not is named as a whole, as is a line a line break put in splits (its
// first part is at the same line, and is not a record).
func editByte(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want) {
	s := m.pickSlot(rng)
	l, _ := m.tlog(t)
	line := l.files[s.fi].lines[s.li]
	batch := m.files[s.fi].lines[s.li].batch
	lo, hi := 0, len(line)
	var spans [][2]int
	if batch {
		var array [2]int
		array, spans = recordSpans(t, line)
		if m.files[s.fi].lines[s.li].zap {
			lo, hi = array[0], array[1]
		}
	}
	j := lo + rng.IntN(hi-lo)
	b := byte(rng.IntN(256))
	for b == line[j] {
		b = byte(rng.IntN(256))
	}
	line[j] = b
	w := want{at: audit.Position{File: m.files[s.fi].name, Line: s.li + 1}, byPlace: true}
	if b != '\n' && jsontext.Value(line).IsValid() {
		for k, sp := range spans {
			if j >= sp[0] && j < sp[1] {
				w.at.Index = k + 1
			}
		}
	}
	return l, w
}

func dropRecord(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want) {
	s := m.pickSlot(rng)
	r := m.rec(s)
	m.remove(s)
	l, _ := m.tlog(t)
	return l, want{kind: audit.Removed, run: r.Run, seq: r.Seq}
}

func swapRecords(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want) {
	for {
		s := m.pickSlot(rng)
		slots := m.slots(s.fi)
		o := slots[rng.IntN(len(slots))]
		if o == s {
			continue
		}
		a, b := m.rec(s), m.rec(o)
		m.files[s.fi].lines[s.li].recs[s.ri], m.files[o.fi].lines[o.li].recs[o.ri] = b, a
		l, pos := m.tlog(t)
		first := pos[a] // the earlier place, now holding the later record
		if pos[b].Line < first.Line || pos[b].Line == first.Line && pos[b].Index < first.Index {
			first = pos[b]
		}
		return l, want{kind: audit.Reordered, at: first, byPlace: true}
	}
}

// insertCopy puts a copy of a record at a random place: into a batch line
// or as a record line of its own.
func insertCopy(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want) {
	src := m.pickSlot(rng)
	orig := m.rec(src)
	cp := *orig
	f := m.files[src.fi]
	at := slot{fi: src.fi, li: rng.IntN(len(f.lines) + 1)}
	if at.li < len(f.lines) {
		at.ri = rng.IntN(len(f.lines[at.li].recs) + 1)
	}
	m.insert(at, &cp)
	l, pos := m.tlog(t)
	if m.next(src.fi, &cp) == orig {
		// Just before its original: the two are one record twice, and
		// the chain is whole up to the second.
		return l, want{kind: audit.Inserted, at: pos[orig], byPlace: true}
	}
	return l, want{kind: audit.Inserted, at: pos[&cp], byPlace: true}
}

// insertFitted inserts a record made to fit after its predecessor: the
// right seq and prev, its hash computed, as one who knows the format
// would; inside the predecessor's batch line, or as a line after its line.
func insertFitted(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want) {
	for {
		s := m.pickSlot(rng)
		pred := m.rec(s)
		f := &audit.Record{Instance: pred.Instance, Run: pred.Run, Seq: pred.Seq + 1, Prev: pred.Hash, Time: pred.Time,
			Kind: audit.KindQuery, Attrs: []audit.Attr{audit.Int(audit.AttrRows, 1), audit.String(audit.AttrSubject, "mallory")}}
		f.Hash = audit.ComputeHash(f)
		if m.next(s.fi, pred) == nil && pred.Kind != audit.KindCheckpoint && s.fi+1 < len(m.files) {
			continue // a rolled file's end: its successor is in the next file
		}
		line := m.files[s.fi].lines[s.li]
		if line.batch && (s.ri+1 < len(line.recs) || rng.IntN(2) == 0) {
			m.insert(slot{s.fi, s.li, s.ri + 1}, f)
		} else {
			m.files[s.fi].lines = slices.Insert(m.files[s.fi].lines, s.li+1, bline{recs: []*audit.Record{f}})
		}
		l, pos := m.tlog(t)
		return l, want{kind: audit.Inserted, at: pos[f], byPlace: true}
	}
}

func dropTail(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want) {
	for {
		s := m.pickSlot(rng)
		r := m.rec(s)
		if r.Kind != audit.KindCheckpoint || m.next(s.fi, r) == nil {
			continue
		}
		f := &m.files[s.fi]
		f.lines[s.li].recs = f.lines[s.li].recs[:s.ri+1]
		f.lines = f.lines[:s.li+1]
		// A rolled run continues in the next file: drop that too.
		if s.fi+1 < len(m.files) && strings.HasPrefix(m.files[s.fi+1].name, r.Run+".") {
			m.files = slices.Delete(m.files, s.fi+1, s.fi+2)
		}
		l, _ := m.tlog(t)
		return l, want{kind: audit.Removed, run: r.Run, seq: r.Seq + 1}
	}
}

func dropRun(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want) {
	run := m.rec(m.pickSlot(rng)).Run
	m.files = slices.DeleteFunc(m.files, func(f bfile) bool { return strings.HasPrefix(f.name, run+".") })
	l, _ := m.tlog(t)
	return l, want{kind: audit.MissingRun, run: run, seq: seqOfFirstExpected(m, run)}
}

// seqOfFirstExpected is the seq Verify names for a missing run: that of
// the checkpoint that names it first (the next run's link names the last
// checkpoint, the store its first).
func seqOfFirstExpected(m *blog, run string) uint64 {
	for _, f := range m.files {
		for _, line := range f.lines {
			for _, r := range line.recs {
				if v, ok := r.Attr(audit.AttrPrevRun); ok && v.Equal(audit.String("", run).Value) {
					v, _ := r.Attr(audit.AttrPrevSeq)
					n, _ := v.Int64()
					return uint64(n)
				}
			}
		}
	}
	for _, cp := range m.expected {
		if cp.Run == run {
			return cp.Seq
		}
	}
	return 0
}

// forgeCheckpoint signs a checkpoint again with another key: under the
// audit key's kid, or under a kid of its own.
func forgeCheckpoint(t *testing.T, rng *rand.Rand, m *blog) (*tlog, want) {
	for {
		s := m.pickSlot(rng)
		r := m.rec(s)
		if r.Kind != audit.KindCheckpoint {
			continue
		}
		kid := m.signer.KeyID()
		if rng.IntN(2) == 0 {
			kid = "attacker"
		}
		evil := testKey(t, kid, fmt.Sprintf("evil %d", rng.IntN(1000)))
		r.JWS = resign(t, evil, r)
		l, pos := m.tlog(t)
		return l, want{kind: audit.ForgedCheckpoint, at: pos[r], byPlace: true}
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
