// Package audittest holds a fake audit writer for the services' tests:
// it records what they append, each record written as one line a test
// can compare.
package audittest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gatehouse/gatehouse/audit"
)

// Recorder records each record appended as its kind and its attributes
// written "key=value" (a list as "[a b]"), sorted by key, separated by
// spaces. It is safe for concurrent use; its zero value is ready.
type Recorder struct {
	mu       sync.Mutex
	recs     []string
	refusing atomic.Bool
}

// Append records one record.
func (r *Recorder) Append(kind audit.Kind, attrs ...audit.Attr) error {
	line := Format(kind, attrs)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, line)
	return nil
}

// Refusing is what Refuse set last.
func (r *Recorder) Refusing() bool { return r.refusing.Load() }

// Refuse makes Refusing answer on.
func (r *Recorder) Refuse(on bool) { r.refusing.Store(on) }

// Records are the records so far.
func (r *Recorder) Records() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// Take returns the records so far and forgets them.
func (r *Recorder) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.recs
	r.recs = nil
	return out
}

// Format writes a record as Recorder records it.
func Format(kind audit.Kind, attrs []audit.Attr) string {
	f := make([]string, 0, len(attrs))
	for _, a := range attrs {
		var s string
		if n, ok := a.Value.Int64(); ok {
			s = fmt.Sprint(n)
		} else if b, ok := a.Value.Bool(); ok {
			s = fmt.Sprint(b)
		} else if l, ok := a.Value.List(); ok {
			s = "[" + strings.Join(l, " ") + "]"
		} else {
			s, _ = a.Value.Str()
		}
		f = append(f, a.Key+"="+s)
	}
	slices.Sort(f)
	return string(kind) + " " + strings.Join(f, " ")
}
