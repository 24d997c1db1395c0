package audit_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/audit"
)

// TestVerifyCutTail: a run that crashed mid-write verifies, its last line
// reported as a cut and the records after its last checkpoint as
// unprotected; so does the next run appending its record to the cut line.
// It failed when: a cut line was read as a malformed record (edited), and
// when a line holding a cut and a record was.
func TestVerifyCutTail(t *testing.T) {
	l := buildLog(t, 6, 2, 2, true)
	last := &l.files[len(l.files)-1]
	line := last.lines[len(last.lines)-1]
	cutRun := mustParse(t, line).Run
	last.cut, last.lines = line[:len(line)/2], last.lines[:len(last.lines)-1]
	rep := l.verify(t)
	if !rep.OK() || len(rep.Cuts) != 1 || rep.Cuts[0].Line != len(last.lines)+1 {
		t.Fatalf("report %+v", rep)
	}
	if u := rep.Unprotected; len(u) == 0 || u[len(u)-1].Run != cutRun {
		t.Fatalf("the cut run's tail is not listed as unprotected: %+v", u)
	}

	// The next run appends to the same file: its first line runs on from
	// the cut one.
	var prev *audit.Checkpoint
	for _, cp := range l.expected {
		if cp.Run == cutRun {
			prev = &cp
		}
	}
	var buf bytes.Buffer
	w, _ := audit.NewWriter(audit.Options{Instance: "gw-b", Run: "gw-b-run3", Signer: l.signer, Previous: prev,
		Now: newClock().now, Sink: audit.LineSink{W: &buf}})
	_ = w.Append(audit.KindLapse)
	_ = w.Close()
	next := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	last.lines = append(last.lines, append(last.cut, next[0]...))
	last.lines = append(last.lines, next[1:]...)
	last.cut = nil
	rep = l.verify(t)
	if !rep.OK() || len(rep.Cuts) != 1 || rep.Runs != 5 {
		t.Fatalf("cut, then the next run: %+v", rep)
	}
}

// TestVerifyProblems: one hand-made edit per check, each reported with its
// kind at its record. It failed when: a record's prev was not compared
// with its predecessor's hash (a record rewritten with its hash computed
// again passed); a checkpoint's claims were not compared with its record
// (a JWS moved onto another checkpoint passed); a broken link always named
// the later record (the rewritten one's successor was named).
func TestVerifyProblems(t *testing.T) {
	base := buildLog(t, 7, 1, 2, false)
	run1 := mustParse(t, base.files[0].lines[0]).Run
	for _, tc := range []struct {
		name string
		edit func(l *tlog) (audit.ProblemKind, int) // the kind and line (1-based) in file 0
	}{
		{"a record rewritten with its hash computed again", func(l *tlog) (audit.ProblemKind, int) {
			r := mustParse(t, l.files[0].lines[2])
			r.Attrs = []audit.Attr{audit.String(audit.AttrSubject, "mallory")}
			r.Hash = audit.ComputeHash(r)
			l.files[0].lines[2] = audit.MarshalLine(r)
			return audit.Edited, 3
		}},
		{"a checkpoint's JWS moved onto another checkpoint", func(l *tlog) (audit.ProblemKind, int) {
			var cps []int
			for i, line := range l.files[0].lines {
				if mustParse(t, line).Kind == audit.KindCheckpoint {
					cps = append(cps, i)
				}
			}
			a, b := mustParse(t, l.files[0].lines[cps[0]]), mustParse(t, l.files[0].lines[cps[1]])
			a.JWS = b.JWS
			l.files[0].lines[cps[0]] = audit.MarshalLine(a)
			return audit.ForgedCheckpoint, cps[0] + 1
		}},
		{"a checkpoint without its JWS", func(l *tlog) (audit.ProblemKind, int) {
			n := len(l.files[0].lines)
			r := mustParse(t, l.files[0].lines[n-1])
			r.JWS = ""
			l.files[0].lines[n-1] = audit.MarshalLine(r)
			return audit.ForgedCheckpoint, n
		}},
		{"the store's checkpoint differs", func(l *tlog) (audit.ProblemKind, int) {
			l.expected = append([]audit.Checkpoint(nil), l.expected...)
			l.expected[0].Hash[0] ^= 1
			_, li := l.at(t, run1, l.expected[0].Seq)
			return audit.Edited, li + 1
		}},
		{"a line that is not a record", func(l *tlog) (audit.ProblemKind, int) {
			l.files[0].lines[1] = []byte("hello")
			return audit.Edited, 2
		}},
		{"a line over the size bound", func(l *tlog) (audit.ProblemKind, int) {
			l.files[0].lines[1] = bytes.Repeat([]byte("x"), audit.MaxLine+5)
			return audit.Edited, 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := base.clone()
			kind, line := tc.edit(l)
			p := l.verify(t).First()
			if p == nil || p.Kind != kind || p.File != l.files[0].name || p.Line != line {
				t.Fatalf("first problem %v, want %s at line %d", p, kind, line)
			}
		})
	}
}

// TestVerifyUnprotected: without a final checkpoint the records after the
// last one are unprotected; with no checkpoint at all, every record is.
func TestVerifyUnprotected(t *testing.T) {
	s := testKey(t, "k1", "k1")
	var buf bytes.Buffer
	w, _ := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Sink: audit.LineSink{W: &buf}, Now: newClock().now})
	_ = w.Append(audit.KindQuery)
	rep := logOf(t, s, buf.Bytes())
	if !rep.OK() || len(rep.Unprotected) != 1 || rep.Unprotected[0].From != 1 || rep.Unprotected[0].To != 2 {
		t.Fatalf("report %+v", rep)
	}
	_ = w.Checkpoint()
	_ = w.Append(audit.KindQuery)
	rep = logOf(t, s, buf.Bytes())
	if u := rep.Unprotected; !rep.OK() || len(u) != 1 || u[0].From != 4 || u[0].To != 4 || u[0].Line != 4 {
		t.Fatalf("report %+v", rep)
	}
}

// TestCheckpointSignatures: RS256, ES256 and EdDSA checkpoints verify with
// their key; each refusal below is refused. It failed when: the signature
// was not checked (another key's JWS and an RSA signature under "EdDSA"
// passed), and when typ was not compared (at+jwt and JWT passed).
func TestCheckpointSignatures(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rs, _ := audit.NewKeySigner("rsa", rk)
	es, _ := audit.NewKeySigner("ec", ek)
	ed := testKey(t, "ed", "ed")
	keys := map[string]crypto.PublicKey{"rsa": rs.Public(), "ec": es.Public(), "ed": ed.Public()}
	var good *audit.Record
	for _, s := range []*audit.KeySigner{rs, es, ed} {
		var cp *audit.Record
		w, _ := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Now: newClock().now,
			Sink: sinkFunc(func(r *audit.Record) error { cp = r; return nil })})
		_ = w.Close()
		if got, err := audit.VerifyCheckpoint(cp, keys); err != nil || !got.Final || got.KeyID != s.KeyID() {
			t.Fatalf("%s: %+v %v", s.Algorithm(), got, err)
		}
		good = cp
	}
	claims := fmt.Sprintf(`{"instance":%q,"run":%q,"seq":%d,"hash":"%x","time":%q}`,
		good.Instance, good.Run, good.Seq, good.Hash, good.Time.Format(audit.TimeLayout))
	hdr := func(alg, kid, typ string) string { return fmt.Sprintf(`{"alg":%q,"kid":%q,"typ":%q}`, alg, kid, typ) }
	for _, tc := range []struct{ name, jws string }{
		{"typ at+jwt", signJWS(t, ed, hdr("EdDSA", "ed", "at+jwt"), claims)},
		{"typ JWT", signJWS(t, ed, hdr("EdDSA", "ed", "JWT"), claims)},
		{"alg none", signJWS(t, ed, hdr("none", "ed", audit.CheckpointType), claims)},
		{"RSA key named as EdDSA", signJWS(t, rs, hdr("EdDSA", "rsa", audit.CheckpointType), claims)},
		{"unknown kid", signJWS(t, ed, hdr("EdDSA", "nobody", audit.CheckpointType), claims)},
		{"extra header member", signJWS(t, ed, `{"alg":"EdDSA","kid":"ed","typ":"gatehouse-audit+jwt","jku":"x"}`, claims)},
		{"claims of another seq", signJWS(t, ed, hdr("EdDSA", "ed", audit.CheckpointType), bytes.NewBufferString(claims).String()[:len(claims)-1]+`,"x":1}`)},
		{"another key", signJWS(t, testKey(t, "ed", "evil"), hdr("EdDSA", "ed", audit.CheckpointType), claims)},
		{"not a JWS", "a.b"},
	} {
		r := *good
		r.JWS = tc.jws
		if _, err := audit.VerifyCheckpoint(&r, keys); !errors.Is(err, audit.ErrCheckpoint) {
			t.Errorf("%s: %v, want ErrCheckpoint", tc.name, err)
		}
	}
}

// TestZapSinkLinesVerify: records written through a zap JSON core (as
// Caddy's logging encodes them, envelope first) verify, whatever the
// encoder's own time format.
func TestZapSinkLinesVerify(t *testing.T) {
	s := testKey(t, "k1", "k1")
	var buf bytes.Buffer
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	core := zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.ErrorLevel) // the level must not drop records
	w, _ := audit.NewWriter(audit.Options{Instance: "gw", Signer: s, Now: newClock().now,
		Sink: audit.ZapSink{Core: core, LoggerName: "gatehouse.audit"}})
	_ = w.Append(audit.KindQuery, audit.String(audit.AttrTable, "trades\t\"q\""), audit.Strings(audit.AttrVenues, "ASX", "XLON"),
		audit.Int(audit.AttrRows, -3), audit.Bool("cached", true))
	_ = w.Close()
	rep := logOf(t, s, buf.Bytes())
	if !rep.OK() || rep.Records != 3 || !bytes.HasPrefix(buf.Bytes(), []byte(`{"level":"info"`)) {
		t.Fatalf("report %+v\n%s", rep, buf.Bytes())
	}
	_ = time.Second
}
