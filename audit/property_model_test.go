package audit_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/audit"
)

// blog is a log of records by line, for the property test to edit records
// inside batch lines: a line of one record is a record line unless batch
// is set; a batch line is in LineSink's spelling or, with zap, in a zap
// JSON core's, with the envelope Caddy's logging writes.
type blog struct {
	files    []bfile
	expected []audit.Checkpoint
	signer   *audit.KeySigner
}

type bfile struct {
	name  string
	lines []bline
}

type bline struct {
	recs  []*audit.Record
	batch bool
	zap   bool
}

// slot is a record's place in a blog: file, line and index in the line.
type slot struct{ fi, li, ri int }

// modelOf reads l's record lines into a blog; with batch, runs of 2 to 5
// consecutive records of a file become batch lines, half of them zap's.
func modelOf(t testing.TB, l *tlog, rng *rand.Rand, batch bool) *blog {
	t.Helper()
	m := &blog{expected: l.expected, signer: l.signer}
	for _, f := range l.files {
		bf := bfile{name: f.name}
		for i := 0; i < len(f.lines); {
			n := 1
			if batch && rng.IntN(3) > 0 {
				n = min(2+rng.IntN(4), len(f.lines)-i)
			}
			line := bline{batch: n > 1, zap: n > 1 && rng.IntN(2) == 0}
			for _, raw := range f.lines[i : i+n] {
				line.recs = append(line.recs, mustParse(t, raw))
			}
			bf.lines = append(bf.lines, line)
			i += n
		}
		m.files = append(m.files, bf)
	}
	return m
}

func (m *blog) clone() *blog {
	c := &blog{expected: m.expected, signer: m.signer}
	for _, f := range m.files {
		g := bfile{name: f.name}
		for _, line := range f.lines {
			nl := bline{batch: line.batch, zap: line.zap}
			for _, r := range line.recs {
				cp := *r
				nl.recs = append(nl.recs, &cp)
			}
			g.lines = append(g.lines, nl)
		}
		c.files = append(c.files, g)
	}
	return c
}

// tlog writes m's lines, and says where each record is, as Verify names it.
func (m *blog) tlog(t testing.TB) (*tlog, map[*audit.Record]audit.Position) {
	t.Helper()
	l := &tlog{expected: m.expected, signer: m.signer}
	pos := map[*audit.Record]audit.Position{}
	for _, f := range m.files {
		tf := tfile{name: f.name}
		for li, line := range f.lines {
			tf.lines = append(tf.lines, line.bytes(t))
			for ri, r := range line.recs {
				p := audit.Position{File: f.name, Line: li + 1}
				if line.batch {
					p.Index = ri + 1
				}
				pos[r] = p
			}
		}
		l.files = append(l.files, tf)
	}
	return l, pos
}

func (line bline) bytes(t testing.TB) []byte {
	t.Helper()
	switch {
	case !line.batch:
		return audit.MarshalLine(line.recs[0])
	case !line.zap:
		return audit.MarshalBatchLine(line.recs)
	}
	var buf bytes.Buffer
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{TimeKey: "ts", LevelKey: "level", NameKey: "logger",
		MessageKey: "msg", EncodeTime: zapcore.EpochTimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder})
	core := zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.InfoLevel)
	if err := (audit.ZapSink{Core: core, LoggerName: "gatehouse.audit.chain"}).WriteRecords(line.recs); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// slots are the places of m's records, in file order.
func (m *blog) slots(fi int) []slot {
	var out []slot
	for li, line := range m.files[fi].lines {
		for ri := range line.recs {
			out = append(out, slot{fi, li, ri})
		}
	}
	return out
}

// pickSlot picks a file with records and one of its records.
func (m *blog) pickSlot(rng *rand.Rand) slot {
	for {
		fi := rng.IntN(len(m.files))
		if s := m.slots(fi); len(s) > 0 {
			return s[rng.IntN(len(s))]
		}
	}
}

func (m *blog) rec(s slot) *audit.Record { return m.files[s.fi].lines[s.li].recs[s.ri] }

// remove takes the record at s out of its line, and the line out of its
// file when nothing is left of it.
func (m *blog) remove(s slot) {
	f := &m.files[s.fi]
	line := &f.lines[s.li]
	line.recs = slices.Delete(line.recs, s.ri, s.ri+1)
	if len(line.recs) == 0 {
		f.lines = slices.Delete(f.lines, s.li, s.li+1)
	}
}

// insert puts r at s: into the batch line s names, at its index, or, when
// the line there is a record line (or s is past the file's last line), as
// a record line of its own before it.
func (m *blog) insert(s slot, r *audit.Record) {
	f := &m.files[s.fi]
	if s.li < len(f.lines) && f.lines[s.li].batch {
		f.lines[s.li].recs = slices.Insert(f.lines[s.li].recs, s.ri, r)
		return
	}
	f.lines = slices.Insert(f.lines, s.li, bline{recs: []*audit.Record{r}})
}

// next is the record after r in its file, nil at the end.
func (m *blog) next(fi int, r *audit.Record) *audit.Record {
	s := m.slots(fi)
	for i, x := range s {
		if m.rec(x) == r && i+1 < len(s) {
			return m.rec(s[i+1])
		}
	}
	return nil
}

// recordSpans returns where the records of a batch line are, each object
// from its opening to its closing brace, and where the records member's
// array is; nil for a record line.
func recordSpans(t testing.TB, line []byte) (array [2]int, spans [][2]int) {
	t.Helper()
	dec := jsontext.NewDecoder(bytes.NewReader(line))
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := dec.ReadToken()
	must(err)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		must(err)
		if name.String() != "records" {
			must(dec.SkipValue())
			continue
		}
		array[0] = int(dec.InputOffset())
		_, err = dec.ReadToken()
		must(err)
		for dec.PeekKind() != ']' {
			start := int(dec.InputOffset())
			must(dec.SkipValue())
			if line[start] == ',' {
				start++
			}
			spans = append(spans, [2]int{start, int(dec.InputOffset())})
		}
		_, err = dec.ReadToken()
		must(err)
		array[1] = int(dec.InputOffset())
	}
	return array, spans
}
