package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxLine bounds one line of an audit file in bytes; a longer line is
// malformed.
const MaxLine = 1 << 20

// File is one audit file to verify: its name, for the report, and its
// content.
type File struct {
	Name string
	R    io.Reader
}

// Position is a line of a file; Line counts from 1.
type Position struct {
	File string
	Line int
}

// entry is one line read: a record, or why it is not one. A cut line
// carries neither.
type entry struct {
	Position
	ord int // the line's place in all the files read, for ordering
	rec *Record
	err error
	cut bool
}

// readLines reads f's lines as entries. A last line without its line
// break that is the beginning of a JSON value (a write a crash cut short)
// is a cut, not a malformed record; so is such a beginning followed, on
// the same line, by a whole record (the next run appending to the file).
func readLines(f File, ord *int) ([]entry, error) {
	br := bufio.NewReaderSize(f.R, 64<<10)
	var out []entry
	add := func(e entry) {
		e.ord = *ord
		*ord += 2 // leaves room for a problem placed after a line
		out = append(out, e)
	}
	for n := 1; ; n++ {
		line, complete, tooLong, err := readLine(br)
		if err != nil {
			return nil, err
		}
		if line == nil && !tooLong {
			return out, nil
		}
		pos := Position{f.Name, n}
		switch {
		case tooLong:
			add(entry{Position: pos, err: errors.New("line over the size bound")})
		case !complete && truncatedJSON(line):
			add(entry{Position: pos, cut: true})
		default:
			rec, err := ParseLine(line)
			if err != nil {
				if rest := appendedRecord(line); rest != nil {
					add(entry{Position: pos, cut: true})
					rec, err = rest, nil
				}
			}
			add(entry{Position: pos, rec: rec, err: err})
		}
		if !complete {
			return out, nil
		}
	}
}

// readLine returns the next line without its line break, whether the
// break was there, and whether the line was over MaxLine (then its bytes
// are dropped). It returns a nil line at the end of the input.
func readLine(br *bufio.Reader) (line []byte, complete, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxLine+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			return line[:max(len(line)-1, 0)], true, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return nil, false, tooLong, nil
			}
			return line, false, tooLong, nil
		default:
			return nil, false, false, err
		}
	}
}

// truncatedJSON reports whether b is a JSON value cut short: what a write
// interrupted by a crash leaves.
func truncatedJSON(b []byte) bool {
	if len(bytes.TrimSpace(b)) == 0 {
		return len(b) > 0
	}
	_, err := jsontext.NewDecoder(bytes.NewReader(b)).ReadValue()
	return errors.Is(err, io.ErrUnexpectedEOF)
}

// appendedRecord finds, in a line that is not a record, a whole record
// after a cut one: the last place where the line's own opening (up to its
// first colon, as every line of one encoder begins) starts again and what
// follows is a record, while what precedes is a value cut short.
func appendedRecord(line []byte) *Record {
	colon := bytes.IndexByte(line, ':')
	if colon < 2 || line[0] != '{' {
		return nil
	}
	i := bytes.LastIndex(line, line[:colon+1])
	if i <= 0 || !truncatedJSON(line[:i]) {
		return nil
	}
	rec, err := ParseLine(line[i:])
	if err != nil {
		return nil
	}
	return rec
}

// ReadRecords reads the records of files in order, for Usage: lines a
// crash cut short are skipped, and a line that is not a record is an
// error (verify the files first: it says which).
func ReadRecords(files []File) ([]*Record, error) {
	var out []*Record
	ord := 0
	for _, f := range files {
		entries, err := readLines(f, &ord)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.Name, err)
		}
		for _, e := range entries {
			if e.err != nil {
				return nil, fmt.Errorf("%s:%d: %w", e.File, e.Line, e.err)
			}
			if e.rec != nil {
				out = append(out, e.rec)
			}
		}
	}
	return out, nil
}
