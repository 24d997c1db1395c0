package audit_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
)

// day1 is the first day of the scripted days.
var day1 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// scribe writes a script of several instances' runs through audit
// Writers, each run into its own buffer, at the times the script sets.
type scribe struct {
	t       testing.TB
	now     time.Time
	signer  *audit.KeySigner
	writers map[string]*audit.Writer // each instance's current run
	prev    map[string]*audit.Checkpoint
	runs    map[string]int
	files   []audit.File
	bufs    []*bytes.Buffer
}

func newScribe(t testing.TB) *scribe {
	return &scribe{t: t, now: day1, signer: testKey(t, "audit-1", "audit key"),
		writers: map[string]*audit.Writer{}, prev: map[string]*audit.Checkpoint{}, runs: map[string]int{}}
}

// at sets the clock to day (1 is day1) at hh:mm.
func (s *scribe) at(day, hh, mm int) *scribe {
	s.now = day1.Add(time.Duration(day-1)*audit.Day + time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute)
	return s
}

// writer is inst's current run, started now when it has none.
func (s *scribe) writer(inst string) *audit.Writer {
	if w := s.writers[inst]; w != nil {
		return w
	}
	s.runs[inst]++
	buf := new(bytes.Buffer)
	s.bufs = append(s.bufs, buf)
	s.files = append(s.files, audit.File{Name: fmt.Sprintf("%s-run%d.log", inst, s.runs[inst])})
	w, err := audit.NewWriter(audit.Options{Instance: inst, Run: fmt.Sprintf("%s-run%d", inst, s.runs[inst]),
		Sink: audit.LineSink{W: buf}, Signer: s.signer, Previous: s.prev[inst],
		CheckpointInterval: time.Hour, Now: func() time.Time { return s.now },
		OnCheckpoint: func(cp audit.Checkpoint) { s.prev[inst] = &cp }})
	if err != nil {
		s.t.Fatal(err)
	}
	s.writers[inst] = w
	return w
}

func (s *scribe) add(inst string, kind audit.Kind, attrs ...audit.Attr) *scribe {
	if err := s.writer(inst).Append(kind, attrs...); err != nil {
		s.t.Fatal(err)
	}
	return s
}

// end ends inst's run: with its final checkpoint, or, crashed, without.
func (s *scribe) end(inst string, crashed bool) *scribe {
	if !crashed {
		if err := s.writer(inst).Close(); err != nil {
			s.t.Fatal(err)
		}
	}
	delete(s.writers, inst)
	return s
}

func (s *scribe) snapshot(inst, sub string, pairs ...string) *scribe {
	return s.add(inst, audit.KindEntitlementSnapshot, audit.String(audit.AttrSubject, sub), audit.Strings(audit.AttrEntitlements, pairs...))
}

func (s *scribe) change(inst, sub string, pairs ...string) *scribe {
	return s.add(inst, audit.KindEntitlementChange, audit.String(audit.AttrSubject, sub), audit.Strings(audit.AttrEntitlements, pairs...))
}

func (s *scribe) subscribe(inst, sub, session, venue, feed string, start bool) *scribe {
	kind := audit.KindSubscriptionEnd
	if start {
		kind = audit.KindSubscriptionStart
	}
	return s.add(inst, kind, audit.String(audit.AttrSubject, sub), audit.String(audit.AttrSession, session),
		audit.String(audit.AttrVenue, venue), audit.String(audit.AttrFeed, feed))
}

func (s *scribe) query(inst, sub, outcome string, rows int64, venues ...string) *scribe {
	return s.add(inst, audit.KindQuery, audit.String(audit.AttrSubject, sub), audit.String(audit.AttrTable, "Security"),
		audit.String("statement", "select"), audit.String(audit.AttrFeed, "quotes"), audit.Strings(audit.AttrVenues, venues...),
		audit.Int(audit.AttrRows, rows), audit.String(audit.AttrOutcome, outcome))
}

// finish closes the runs still open and returns the files written.
func (s *scribe) finish() []audit.File {
	for inst := range s.writers {
		s.end(inst, false)
	}
	out := make([]audit.File, len(s.files))
	for i, f := range s.files {
		out[i] = audit.File{Name: f.Name, R: bytes.NewReader(s.bufs[i].Bytes())}
	}
	return out
}

// records closes the runs still open and reads the records written back
// from their lines.
func (s *scribe) records() []*audit.Record {
	recs, err := audit.ReadRecords(s.finish())
	if err != nil {
		s.t.Fatal(err)
	}
	return recs
}
