package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The audit file as the crash test reads it: plain JSON, not the audit
// package. A line is one record, or a batch line whose member records
// holds several; verify names a record by its line and, in a batch line,
// its index (file:12[3]).

// chainLine is one record of the audit file as the test reads it.
type chainLine struct {
	Instance string         `json:"instance"`
	Run      string         `json:"run"`
	Seq      uint64         `json:"seq"`
	Kind     string         `json:"kind"`
	Attrs    map[string]any `json:"attrs"`
	JWS      string         `json:"jws"`
	line     int            // from 1, in the file
	index    int            // from 1 in a batch line, 0 for a record line
}

// batchLine is a line of several records.
type batchLine struct {
	Records []chainLine `json:"records"`
}

// pos is where verify names the record: file:line, file:line[index].
func (l chainLine) pos(file string) string {
	if l.index > 0 {
		return fmt.Sprintf("%s:%d[%d]", file, l.line, l.index)
	}
	return fmt.Sprintf("%s:%d", file, l.line)
}

// chainFile is what the test reads of an audit file: its complete lines,
// and whether the last one lacks its line break.
type chainFile struct {
	lines   []chainLine // records, in file order
	batches int         // batch lines
	cut     bool
	raw     []byte
}

// readChain reads the audit file at path from byte offset from on (line
// numbers count the lines before it). Only complete lines are records:
// the process may be writing the last one.
func readChain(t testing.TB, path string, from int) chainFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the audit file: %v", err)
	}
	cf := chainFile{raw: raw}
	n := bytes.Count(raw[:from], []byte("\n"))
	rest := raw[from:]
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			cf.cut = true
			break
		}
		n++
		var l chainLine
		var b batchLine
		if err := json.Unmarshal(rest[:i], &b); err != nil || json.Unmarshal(rest[:i], &l) != nil {
			t.Fatalf("audit file line %d is not JSON: %v: %.200s", n, err, rest[:i])
		}
		for k, r := range b.Records {
			r.line, r.index = n, k+1
			cf.lines = append(cf.lines, r)
		}
		if b.Records == nil {
			l.line = n
			cf.lines = append(cf.lines, l)
		}
		cf.batches += min(len(b.Records), 1)
		rest = rest[i+1:]
	}
	return cf
}

// run returns the lines of run, in file order.
func (cf chainFile) run(run string) []chainLine {
	var out []chainLine
	for _, l := range cf.lines {
		if l.Run == run {
			out = append(out, l)
		}
	}
	return out
}

// runSummary is what verify must say of one run.
type runSummary struct {
	lines       []chainLine
	checkpoints []chainLine
	kinds       map[string]int
}

func summarize(lines []chainLine) runSummary {
	s := runSummary{lines: lines, kinds: map[string]int{}}
	for _, l := range lines {
		s.kinds[l.Kind]++
		if l.Kind == "checkpoint" {
			s.checkpoints = append(s.checkpoints, l)
		}
	}
	return s
}

func (s runSummary) last() chainLine { return s.lines[len(s.lines)-1] }

// lastCheckpoint is the seq of the run's last checkpoint, 0 when none.
func (s runSummary) lastCheckpoint() uint64 {
	if len(s.checkpoints) == 0 {
		return 0
	}
	return s.checkpoints[len(s.checkpoints)-1].Seq
}

// tail is the records after the run's last checkpoint.
func (s runSummary) tail() []chainLine {
	var out []chainLine
	for _, l := range s.lines {
		if l.Seq > s.lastCheckpoint() {
			out = append(out, l)
		}
	}
	return out
}

// unprotectedLine is verify's line for a run's tail (cli/audit.go).
func unprotectedLine(file string, first chainLine, to uint64) string {
	return fmt.Sprintf("unprotected %s: instance %q run %q seq %d to %d: after the run's last checkpoint",
		first.pos(file), first.Instance, first.Run, first.Seq, to)
}

// protectedRecord is an authentication record of the burst with outcome
// ok that a checkpoint after it covers: editing it is a problem, not an
// unprotected record. One inside a batch line when there is one, so that
// the edits below reach into a batch line.
func protectedRecord(s runSummary) (chainLine, bool) {
	var found []chainLine
	for _, l := range s.lines {
		if l.Kind == "authentication" && l.Attrs["outcome"] == "ok" && l.Seq < s.lastCheckpoint() {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		return chainLine{}, false
	}
	if i := slices.IndexFunc(found, func(l chainLine) bool { return l.index > 0 }); i >= 0 {
		return found[i], true
	}
	return found[0], true
}

// editRecord returns line (with its line break) with its record at index
// (0: the line's own) changed by edit, or taken out when edit returns nil
// (a record line then goes whole). A batch line is written again with its
// other records as they were.
func editRecord(t testing.TB, line []byte, index int, edit func([]byte) []byte) []byte {
	t.Helper()
	if index == 0 {
		if r := edit(line); r != nil {
			return r
		}
		return nil
	}
	var m map[string]json.RawMessage
	var recs []json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil || json.Unmarshal(m["records"], &recs) != nil {
		t.Fatalf("not a batch line: %s", line)
	}
	if r := edit(recs[index-1]); r != nil {
		recs[index-1] = r
	} else {
		recs = slices.Delete(recs, index-1, index)
	}
	var err error
	if m["records"], err = json.Marshal(recs); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// payloadFinal reports whether a checkpoint's JWS payload says final.
func payloadFinal(t testing.TB, jws string) bool {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("a checkpoint's jws has %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("a checkpoint's jws payload: %v", err)
	}
	var p struct {
		Final bool `json:"final"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("a checkpoint's jws payload: %v: %s", err, raw)
	}
	return p.Final
}
