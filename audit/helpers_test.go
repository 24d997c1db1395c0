package audit_test

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
)

// testKey is an Ed25519 audit key made from seed, so tests need no
// randomness and sign fast.
func testKey(t testing.TB, kid, seed string) *audit.KeySigner {
	t.Helper()
	sum := sha256.Sum256([]byte(seed))
	s, err := audit.NewKeySigner(kid, ed25519.NewKeyFromSeed(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// clock advances a second at each reading.
type clock struct{ t time.Time }

func newClock() *clock { return &clock{time.Date(2026, 3, 2, 9, 0, 0, 123456789, time.UTC)} }

func (c *clock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

// tfile is an audit file as lines without their line breaks.
type tfile struct {
	name  string
	lines [][]byte
	cut   []byte // a last line without its line break
}

func (f tfile) bytes() []byte {
	var b bytes.Buffer
	for _, l := range f.lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	b.Write(f.cut)
	return b.Bytes()
}

// tlog is a log of several instances and runs, the store's checkpoints,
// and the key that signed them.
type tlog struct {
	files    []tfile
	expected []audit.Checkpoint
	signer   *audit.KeySigner
}

func (l *tlog) clone() *tlog {
	c := &tlog{expected: l.expected, signer: l.signer}
	for _, f := range l.files {
		g := tfile{name: f.name, cut: f.cut}
		for _, line := range f.lines {
			g.lines = append(g.lines, bytes.Clone(line))
		}
		c.files = append(c.files, g)
	}
	return c
}

func (l *tlog) verify(t testing.TB) *audit.Report {
	t.Helper()
	var files []audit.File
	for _, f := range l.files {
		files = append(files, audit.File{Name: f.name, R: bytes.NewReader(f.bytes())})
	}
	rep, err := audit.Verify(files, audit.VerifyOptions{
		Keys:     map[string]crypto.PublicKey{l.signer.KeyID(): l.signer.Public()},
		Expected: l.expected,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// sinkFunc adapts a function to a Sink.
type sinkFunc func(*audit.Record) error

func (f sinkFunc) WriteRecord(r *audit.Record) error { return f(r) }

// buildLog writes runs per instance, each run to its own file (one run
// rolled over into two files), with checkpoints every ten seconds of a
// clock that ticks a second a reading. With crash, each instance's last
// run ends without Close.
func buildLog(t testing.TB, seed uint64, instances, runs int, crash bool) *tlog {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	l := &tlog{signer: testKey(t, "audit-1", "audit key")}
	clk := newClock()
	for i := range instances {
		inst := fmt.Sprintf("gw-%c", 'a'+i)
		var prev *audit.Checkpoint
		for r := range runs {
			var buf bytes.Buffer
			var files []*bytes.Buffer
			files = append(files, &buf)
			var lastCP audit.Checkpoint
			w, err := audit.NewWriter(audit.Options{
				Instance: inst, Run: fmt.Sprintf("%s-run%d", inst, r+1), Signer: l.signer, Previous: prev,
				CheckpointInterval: 10 * time.Second, Now: clk.now,
				Sink: sinkFunc(func(rec *audit.Record) error {
					return audit.LineSink{W: files[len(files)-1]}.WriteRecord(rec)
				}),
				OnCheckpoint: func(cp audit.Checkpoint) { lastCP = cp; l.expected = append(l.expected, cp) },
			})
			if err != nil {
				t.Fatal(err)
			}
			n := 8 + rng.IntN(20)
			for k := range n {
				if i == 0 && r == 1 && k == n/2 {
					files = append(files, new(bytes.Buffer)) // the log rolls over
				}
				if err := w.Append(randomEvent(rng)); err != nil {
					t.Fatal(err)
				}
			}
			if !crash || r < runs-1 {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			c := lastCP
			prev = &c
			for k, b := range files {
				f := tfile{name: fmt.Sprintf("%s-run%d.%d.log", inst, r+1, k)}
				for line := range bytes.Lines(b.Bytes()) {
					f.lines = append(f.lines, bytes.TrimSuffix(line, []byte("\n")))
				}
				l.files = append(l.files, f)
			}
		}
	}
	return l
}

func randomEvent(rng *rand.Rand) (audit.Kind, audit.Attr, audit.Attr, audit.Attr) {
	users := []string{"alice", "bob", "carol"}
	venues := []string{"ASX", "XNYS", "XLON"}
	sub := audit.String(audit.AttrSubject, users[rng.IntN(len(users))])
	switch rng.IntN(4) {
	case 0:
		return audit.KindSubscriptionStart, sub, audit.String(audit.AttrVenue, venues[rng.IntN(3)]), audit.String(audit.AttrFeed, "quotes")
	case 1:
		return audit.KindQuery, sub, audit.Strings(audit.AttrVenues, venues[:1+rng.IntN(3)]...), audit.Int(audit.AttrRows, rng.Int64N(1000))
	case 2:
		return audit.KindDenial, sub, audit.String(audit.AttrReason, "not_entitled"), audit.Bool("socket", rng.IntN(2) == 0)
	}
	return audit.KindAuthentication, sub, audit.String(audit.AttrTransport, "socket"), audit.String(audit.AttrClient, "web")
}

// at finds the record of run with seq in l: its file index and line index.
func (l *tlog) at(t testing.TB, run string, seq uint64) (int, int) {
	t.Helper()
	for fi, f := range l.files {
		for li, line := range f.lines {
			r, err := audit.ParseLine(line)
			if err != nil {
				t.Fatal(err)
			}
			if r.Run == run && r.Seq == seq {
				return fi, li
			}
		}
	}
	t.Fatalf("no record %s/%d", run, seq)
	return 0, 0
}

func mustParse(t testing.TB, line []byte) *audit.Record {
	t.Helper()
	r, err := audit.ParseLine(line)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
