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

// Position is a line of a file and, in a batch line, a record of it:
// Line counts from 1, and so does Index, which is 0 for a record line
// (or a whole line).
type Position struct {
	File  string
	Line  int
	Index int
}

// String is file:line, and file:line[index] for a record of a batch line.
func (p Position) String() string {
	if p.Index > 0 {
		return fmt.Sprintf("%s:%d[%d]", p.File, p.Line, p.Index)
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// entry is one record read (a line's, or one of a batch line's), or why
// it is not one. A cut line carries neither.
type entry struct {
	Position
	ord int // the line's place in all the files read, for ordering
	rec *Record
	err error
	cut bool
}

// readLines reads f's lines as entries, one per record (a batch line
// gives one per record, at its index). A last line without its line
// break that is the beginning of a JSON value (a write a crash cut short,
// a whole batch) is a cut, not a malformed record; so is such a beginning
// followed, on the same line, by a whole line (the next run appending to
// the file).
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
		pos := Position{File: f.Name, Line: n}
		switch {
		case tooLong:
			add(entry{Position: pos, err: errors.New("line over the size bound")})
		case !complete && truncatedJSON(line):
			add(entry{Position: pos, cut: true})
		default:
			recs, errs, batch, err := lineRecords(line)
			if err != nil {
				if rest := appendedRecords(line); rest != nil {
					add(entry{Position: pos, cut: true})
					recs, errs, batch, err = rest, make([]error, len(rest)), len(rest) > 1, nil
				}
			}
			if err != nil {
				add(entry{Position: pos, err: err})
				break
			}
			for i, rec := range recs {
				p := pos
				if batch {
					p.Index = i + 1
				}
				add(entry{Position: p, rec: rec, err: errs[i]})
			}
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

// appendedRecords finds, in a line that is not a record line or a batch
// line, a whole line's records after a cut one: the last place where the
// line's own opening (up to its first colon, as every line of one encoder
// begins) starts again and what follows is a line, while what precedes is
// a value cut short.
func appendedRecords(line []byte) []*Record {
	colon := bytes.IndexByte(line, ':')
	if colon < 2 || line[0] != '{' {
		return nil
	}
	i := bytes.LastIndex(line, line[:colon+1])
	if i <= 0 || !truncatedJSON(line[:i]) {
		return nil
	}
	recs, err := ParseRecords(line[i:])
	if err != nil {
		return nil
	}
	return recs
}

// ReadRecords reads the records of files in order (those of a batch line
// in its order), for Usage: lines a crash cut short are skipped, and a
// line or batch member that is not a record is an error (verify the files
// first: it says which).
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
				return nil, fmt.Errorf("%s: %w", e.Position, e.err)
			}
			if e.rec != nil {
				out = append(out, e.rec)
			}
		}
	}
	return out, nil
}
