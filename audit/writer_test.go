package audit_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
)

// logOf verifies one buffer as one file.
func logOf(t *testing.T, s *audit.KeySigner, b []byte, expected ...audit.Checkpoint) *audit.Report {
	t.Helper()
	l := &tlog{signer: s, expected: expected, files: []tfile{{name: "audit.log"}}}
	for line := range bytes.Lines(b) {
		l.files[0].lines = append(l.files[0].lines, bytes.TrimSuffix(line, []byte("\n")))
	}
	return l.verify(t)
}

// TestWriterSequencesConcurrentAppends: appends from many goroutines make
// one valid chain, in the sink's order. It failed when: Append did not
// take the lock (the race detector reported the writer's state).
func TestWriterSequencesConcurrentAppends(t *testing.T) {
	s := testKey(t, "k1", "k1")
	var buf bytes.Buffer
	var mu sync.Mutex
	clk := newClock()
	w, err := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, CheckpointInterval: 50 * time.Second,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clk.now() }, Sink: audit.LineSink{W: &buf}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 50 {
				if err := w.Append(audit.KindQuery, audit.Int(audit.AttrRows, int64(g))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep := logOf(t, s, buf.Bytes())
	if !rep.OK() || rep.Checkpoints < 8 || len(rep.Unprotected) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if want := 1 + 400 + rep.Checkpoints; rep.Records != want {
		t.Fatalf("%d records, want %d", rep.Records, want)
	}
	if err := w.Append(audit.KindQuery); !errors.Is(err, audit.ErrClosed) {
		t.Fatalf("append after Close: %v", err)
	}
}

// TestWriterCheckpoints: a checkpoint once the interval has passed, on
// Append and on Checkpoint (none when nothing is new), a final one at
// Close, each handed to OnCheckpoint; the next run names the last one.
func TestWriterCheckpoints(t *testing.T) {
	s := testKey(t, "k1", "k1")
	var buf bytes.Buffer
	var cps []audit.Checkpoint
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	opts := audit.Options{Instance: "gw", Run: "r1", Signer: s, CheckpointInterval: 5 * time.Second,
		Now:  func() time.Time { return now },
		Sink: audit.LineSink{W: &buf}, OnCheckpoint: func(cp audit.Checkpoint) { cps = append(cps, cp) }}
	w, err := audit.NewWriter(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // seq 2, 3, 4; the third 5 s after the start
		if i == 2 {
			now = now.Add(5 * time.Second)
		}
		if err := w.Append(audit.KindLapse); err != nil {
			t.Fatal(err)
		}
		if len(cps) != i/2 {
			t.Fatalf("after append %d: %+v", i+1, cps)
		}
	}
	if cps[0].Seq != 5 || cps[0].Final || !cps[0].Time.Equal(now) {
		t.Fatalf("checkpoint %+v", cps[0])
	}
	if err := w.Checkpoint(); err != nil || len(cps) != 1 {
		t.Fatalf("a checkpoint with nothing new: %v %+v", err, cps)
	}
	if err := w.Close(); err != nil || len(cps) != 2 || !cps[1].Final || cps[1].Seq != 6 {
		t.Fatalf("Close: %v %+v", err, cps)
	}
	opts.Run, opts.Previous = "r2", &cps[1]
	w2, _ := audit.NewWriter(opts)
	_ = w2.Close()
	rep := logOf(t, s, buf.Bytes(), cps...)
	if !rep.OK() || rep.Runs != 2 {
		t.Fatalf("report %+v", rep)
	}
	start := mustParse(t, bytes.Split(buf.Bytes(), []byte("\n"))[6])
	if v, _ := start.Attr(audit.AttrPrevRun); !v.Equal(audit.String("", "r1").Value) || start.Prev != cps[1].Hash {
		t.Fatalf("the second run's start does not name the first's last checkpoint: %+v", start)
	}
}

// failingSink fails while fail is set.
type failingSink struct {
	buf  bytes.Buffer
	fail bool
}

func (f *failingSink) WriteRecord(r *audit.Record) error {
	if f.fail {
		return errors.New("disk full")
	}
	return audit.LineSink{W: &f.buf}.WriteRecord(r)
}

// TestWriterWriteFailures: a failed write is counted and reported, the
// policy says whether to refuse, and once the sink is back a loss record
// says how many records were lost; the chain stays valid. It failed when:
// a failed record moved the chain on (the verifier reported a removal).
func TestWriterWriteFailures(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		s := testKey(t, "k1", "k1")
		sink := &failingSink{}
		var reported []uint64
		w, _ := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Sink: sink, Now: newClock().now,
			RefuseWhenFailing: refuse, OnWriteFailure: func(_ error, n uint64) { reported = append(reported, n) }})
		_ = w.Append(audit.KindQuery)
		sink.fail = true
		for range 2 {
			if err := w.Append(audit.KindQuery); !errors.Is(err, audit.ErrWrite) {
				t.Fatalf("append to a failing sink: %v", err)
			}
		}
		if w.Failures() != 2 || len(reported) != 2 || reported[1] != 2 || w.Refusing() != refuse {
			t.Fatalf("refuse=%v: failures %d, reported %v, refusing %v", refuse, w.Failures(), reported, w.Refusing())
		}
		sink.fail = false
		if err := w.Append(audit.KindQuery); err != nil || w.Refusing() {
			t.Fatalf("after the sink is back: %v, refusing %v", err, w.Refusing())
		}
		_ = w.Close()
		if rep := logOf(t, s, sink.buf.Bytes()); !rep.OK() {
			t.Fatalf("problems: %v", rep.Problems)
		}
		loss := mustParse(t, bytes.Split(sink.buf.Bytes(), []byte("\n"))[2])
		if v, _ := loss.Attr(audit.AttrLost); loss.Kind != audit.KindLoss || !v.Equal(audit.Int("", 2).Value) {
			t.Fatalf("third line %+v, want a loss of 2", loss)
		}
	}
}

// TestWriterRefusesAttributes: credentials, malformed or repeated keys and
// the writer's own kinds are refused; invalid UTF-8 is replaced before
// hashing, so the line verifies. It failed when: the "_token" suffix was
// not checked ("session_token" passed).
func TestWriterRefusesAttributes(t *testing.T) {
	s := testKey(t, "k1", "k1")
	var buf bytes.Buffer
	w, _ := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Sink: audit.LineSink{W: &buf}, Now: newClock().now})
	for _, tc := range []struct {
		name  string
		kind  audit.Kind
		attrs []audit.Attr
	}{
		{"password", audit.KindAuthentication, []audit.Attr{audit.String("password", "x")}},
		{"a token by its suffix", audit.KindAuthentication, []audit.Attr{audit.String("session_token", "x")}},
		{"a secret by its suffix", audit.KindAuthentication, []audit.Attr{audit.String("api_secret", "x")}},
		{"client secret", audit.KindAuthentication, []audit.Attr{audit.String("client_secret", "x")}},
		{"upper-case key", audit.KindQuery, []audit.Attr{audit.String("Sub", "x")}},
		{"empty key", audit.KindQuery, []audit.Attr{audit.String("", "x")}},
		{"key twice", audit.KindQuery, []audit.Attr{audit.Int("rows", 1), audit.Int("rows", 2)}},
		{"a checkpoint", audit.KindCheckpoint, nil},
		{"a run start", audit.KindRunStart, nil},
		{"no kind", "", nil},
	} {
		if err := w.Append(tc.kind, tc.attrs...); !errors.Is(err, audit.ErrAttr) {
			t.Errorf("%s: %v, want ErrAttr", tc.name, err)
		}
	}
	if err := w.Append(audit.KindUserChange, audit.String(audit.AttrSubject, "bad\xffname")); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	if rep := logOf(t, s, buf.Bytes()); !rep.OK() || rep.Records != 3 {
		t.Fatalf("report %+v", rep)
	}
	if !bytes.Contains(buf.Bytes(), []byte("bad\uFFFDname")) {
		t.Fatal("invalid UTF-8 was not replaced")
	}
}
