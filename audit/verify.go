package audit

import (
	"crypto"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
)

// VerifyOptions are what Verify checks the files against.
type VerifyOptions struct {
	// Keys are the audit public keys by kid: every one the instances ever
	// signed with (audit keys stay in the store for good).
	Keys map[string]crypto.PublicKey
	// Expected are the checkpoints the store holds: each must be in the
	// files, so a run or a tail missing from them is reported.
	Expected []Checkpoint
}

// ProblemKind says what happened to the first bad record of a run.
type ProblemKind string

// What Verify reports.
const (
	// Edited: a line that is not a record, or a record whose content is
	// not what its hash says, or whose hash is not what its successor
	// chained to.
	Edited ProblemKind = "edited"
	// Inserted: a record that is not part of the chain: a copy, or one
	// made to fit whose successor chains to another, or one after the
	// run's final checkpoint.
	Inserted ProblemKind = "inserted"
	// Removed: a gap in seq, or a tail the store's checkpoints or the next
	// run say was there.
	Removed ProblemKind = "removed"
	// Reordered: a record ahead of its place, which the files hold later.
	Reordered ProblemKind = "reordered"
	// ForgedCheckpoint: a checkpoint whose JWS does not verify with the
	// audit keys, or signs another record.
	ForgedCheckpoint ProblemKind = "forged_checkpoint"
	// MissingRun: a run the store's checkpoints or the next run name that
	// none of the files holds.
	MissingRun ProblemKind = "missing_run"
)

// Problem is the first bad record of one run (or one line that is not a
// record).
type Problem struct {
	Kind ProblemKind
	// Position is where it shows: the bad record (its line and, in a
	// batch line, its index) or a line that is not one, or, for a tail
	// removed, the line after the run's last one. Empty for a missing run that only
	// the store names.
	Position
	Instance, Run string
	// Seq is the first bad record's: the edited, inserted or misplaced
	// one, or the first one missing.
	Seq    uint64
	Detail string

	ord int
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s: instance %q run %q seq %d: %s", p.Position, p.Kind, p.Instance, p.Run, p.Seq, p.Detail)
}

// Span is a run's records from seq From to To, the first at Position.
type Span struct {
	Instance, Run string
	From, To      uint64
	Position
}

// Report is what Verify found.
type Report struct {
	Records     int       // records read
	Runs        int       // runs seen
	Checkpoints int       // checkpoints verified
	Problems    []Problem // in file order; at most one per run
	// Unprotected are the records after each sound run's last checkpoint:
	// nothing signed vouches for them.
	Unprotected []Span
	// Cuts are lines a crash cut short: not records, not tampering.
	Cuts []Position
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// First is the first problem in file order, nil when none.
func (r *Report) First() *Problem {
	if len(r.Problems) == 0 {
		return nil
	}
	return &r.Problems[0]
}

// VerifyFiles verifies the files at paths, in that order (a rolled
// chain's oldest first).
func VerifyFiles(paths []string, opts VerifyOptions) (*Report, error) {
	files := make([]File, 0, len(paths))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("opening audit file: %w", err)
		}
		defer f.Close()
		files = append(files, File{Name: p, R: f})
	}
	return Verify(files, opts)
}

// Verify reads files in order (each run's records in chain order across
// them) and checks every chain: each record's hash, its link to the one
// before, seq without gaps, every checkpoint's signature and that it signs
// its own record, each run's link to the previous run's last checkpoint,
// and opts.Expected. The error is for reading only; what is wrong with the
// content is in the report.
func Verify(files []File, opts VerifyOptions) (*Report, error) {
	rep := &Report{}
	v := &verifier{opts: opts, rep: rep, runs: map[runKey]*chain{}}
	ord := 0
	for _, f := range files {
		entries, err := readLines(f, &ord)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.Name, err)
		}
		for i := range entries {
			v.add(&entries[i])
		}
	}
	v.end = ord
	v.index()
	for _, c := range v.order {
		v.walk(c)
	}
	v.links()
	v.expected()
	v.finish()
	return rep, nil
}

type runKey struct{ instance, run string }

// chain is one run's records in file order, and what the walk found.
type chain struct {
	key      runKey
	entries  []*entry
	bySeq    map[uint64][]int
	linked   map[[32]byte]bool // hashes some record of the run names as prev
	accepted int               // entries accepted in order
	lastCkpt uint64            // seq of the last verified checkpoint
	final    bool              // the last verified checkpoint closed the run
	bad      bool              // a problem was reported
}

func (c *chain) last() *entry {
	if c.accepted == 0 {
		return nil
	}
	return c.entries[c.accepted-1]
}

// after is the position just after the run's last line.
func (c *chain) after() (Position, int) {
	e := c.entries[len(c.entries)-1]
	return Position{File: e.File, Line: e.Line + 1}, e.ord + 1
}

type verifier struct {
	opts     VerifyOptions
	rep      *Report
	runs     map[runKey]*chain
	order    []*chain
	vouched  map[[32]byte]bool // hashes the store or a next run names
	problems []Problem
	end      int
}

func (v *verifier) add(e *entry) {
	switch {
	case e.cut:
		v.rep.Cuts = append(v.rep.Cuts, e.Position)
		if e.rec == nil {
			return
		}
	case e.rec == nil:
		v.report(Problem{Kind: Edited, Position: e.Position, Detail: e.err.Error(), ord: e.ord})
		return
	}
	v.rep.Records++
	k := runKey{e.rec.Instance, e.rec.Run}
	c := v.runs[k]
	if c == nil {
		c = &chain{key: k, bySeq: map[uint64][]int{}, linked: map[[32]byte]bool{}}
		v.runs[k] = c
		v.order = append(v.order, c)
	}
	c.bySeq[e.rec.Seq] = append(c.bySeq[e.rec.Seq], len(c.entries))
	c.linked[e.rec.Prev] = true
	c.entries = append(c.entries, e)
}

// index notes the hashes vouched for from outside a run: the store's
// checkpoints and each run's first record's link.
func (v *verifier) index() {
	v.rep.Runs = len(v.order)
	v.vouched = map[[32]byte]bool{}
	for _, cp := range v.opts.Expected {
		v.vouched[cp.Hash] = true
	}
	for _, c := range v.order {
		if r := c.entries[0].rec; r.Kind == KindRunStart {
			v.vouched[r.Prev] = true
		}
	}
}

func (v *verifier) report(p Problem) { v.problems = append(v.problems, p) }

func (v *verifier) fail(c *chain, kind ProblemKind, e *entry, seq uint64, format string, args ...any) {
	c.bad = true
	v.report(Problem{Kind: kind, Position: e.Position, Instance: c.key.instance, Run: c.key.run, Seq: seq,
		Detail: fmt.Sprintf(format, args...), ord: e.ord})
}

// finish orders the problems, keeps the first of each run, and lists the
// unprotected records of the sound runs.
func (v *verifier) finish() {
	slices.SortStableFunc(v.problems, func(a, b Problem) int { return a.ord - b.ord })
	seen := map[runKey]bool{}
	for _, p := range v.problems {
		k := runKey{p.Instance, p.Run}
		if p.Run != "" && seen[k] {
			continue
		}
		seen[k] = true
		v.rep.Problems = append(v.rep.Problems, p)
	}
	for _, c := range v.order {
		if seen[c.key] || c.accepted == 0 {
			continue
		}
		if last := c.last(); last.rec.Seq > c.lastCkpt {
			first := c.entries[0]
			if i, ok := c.bySeq[c.lastCkpt+1]; ok {
				first = c.entries[i[0]]
			}
			v.rep.Unprotected = append(v.rep.Unprotected, Span{c.key.instance, c.key.run, c.lastCkpt + 1, last.rec.Seq, first.Position})
		}
	}
}

// expected checks the store's checkpoints against the files.
func (v *verifier) expected() {
	for _, cp := range v.opts.Expected {
		c := v.runs[runKey{cp.Instance, cp.Run}]
		switch {
		case c == nil:
			v.report(Problem{Kind: MissingRun, Instance: cp.Instance, Run: cp.Run, Seq: cp.Seq,
				Detail: "the store holds a checkpoint of a run no file holds", ord: v.end})
		case c.bad:
		case len(c.bySeq[cp.Seq]) == 0:
			pos, ord := c.after()
			c.bad = true
			v.report(Problem{Kind: Removed, Position: pos, Instance: cp.Instance, Run: cp.Run, Seq: v.firstMissing(c),
				Detail: fmt.Sprintf("the store holds checkpoint seq %d past the run's end", cp.Seq), ord: ord})
		default:
			e := c.entries[c.bySeq[cp.Seq][0]]
			if e.rec.Hash != cp.Hash || e.rec.Kind != KindCheckpoint {
				v.fail(c, Edited, e, cp.Seq, "not the checkpoint the store holds")
			}
		}
	}
}

// firstMissing is the seq after the run's highest.
func (v *verifier) firstMissing(c *chain) uint64 {
	var top uint64
	for s := range c.bySeq {
		top = max(top, s)
	}
	return top + 1
}

// links checks each run's first record against the previous run's last
// checkpoint that it names.
func (v *verifier) links() {
	for _, c := range v.order {
		e := c.entries[0]
		r := e.rec
		if c.bad || r.Kind != KindRunStart || r.Prev == ([32]byte{}) {
			continue
		}
		prevRun, _ := r.Attr(AttrPrevRun)
		prevSeq, _ := r.Attr(AttrPrevSeq)
		run, _ := prevRun.Str()
		seq, _ := prevSeq.Int64()
		p := v.runs[runKey{c.key.instance, run}]
		switch {
		case p == nil:
			v.report(Problem{Kind: MissingRun, Position: e.Position, Instance: c.key.instance, Run: run, Seq: uint64(seq),
				Detail: fmt.Sprintf("run %q names it as its previous run", c.key.run), ord: e.ord})
		case p.bad:
		case len(p.bySeq[uint64(seq)]) == 0:
			pos, ord := p.after()
			p.bad = true
			v.report(Problem{Kind: Removed, Position: pos, Instance: c.key.instance, Run: run, Seq: v.firstMissing(p),
				Detail: fmt.Sprintf("run %q names checkpoint seq %d past this run's end", c.key.run, seq), ord: ord})
		default:
			if pe := p.entries[p.bySeq[uint64(seq)][0]]; pe.rec.Hash != r.Prev || pe.rec.Kind != KindCheckpoint {
				v.fail(p, Edited, pe, uint64(seq), "not the checkpoint run %q names", c.key.run)
			}
		}
	}
}

// hexShort is the first bytes of a hash, for details.
func hexShort(h [32]byte) string { return hex.EncodeToString(h[:6]) }
