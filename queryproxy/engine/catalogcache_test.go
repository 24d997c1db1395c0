package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// source is a schema whose version the test sets, the reads made of it, and what the
// cache logged.
type source struct {
	mu      sync.Mutex
	now     time.Time
	version int
	fail    error
	checks  int
	reads   int
	logged  []string
	block   chan struct{} // when set, a check waits for it to close
	started chan struct{} // when set, a check closes it on starting
}

func (s *source) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *source) set(f func(s *source)) {
	s.mu.Lock()
	f(s)
	s.mu.Unlock()
}

func (s *source) read(ctx context.Context, prev *engine.CatalogSnapshot[int]) (*engine.CatalogSnapshot[int], error) {
	s.mu.Lock()
	block, started := s.block, s.started
	s.mu.Unlock()
	if started != nil {
		close(started)
	}
	if block != nil {
		<-block
	}
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("a check without a time limit")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks++
	if s.fail != nil {
		return nil, s.fail
	}
	next := &engine.CatalogSnapshot[int]{Version: s.version, Checked: s.now}
	if prev != nil && prev.Version == s.version {
		next.Catalog = prev.Catalog
		return next, nil
	}
	s.reads++
	next.Catalog = sqlgen.Catalog{Tables: []sqlgen.Table{{Name: fmt.Sprint("v", s.version)}}}
	return next, nil
}

func (s *source) log(next *engine.CatalogSnapshot[int], err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.logged = append(s.logged, "failed: "+err.Error())
		return
	}
	s.logged = append(s.logged, fmt.Sprint("read ", next.Version))
}

func (s *source) counts() (checks, reads int, logged []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checks, s.reads, s.logged
}

// errBoom is a failed check; classify marks it as an engine's classify would.
var errBoom = errors.New("boom")

func classify(_, _ context.Context, err error) error {
	return fmt.Errorf("%w: %w", engine.ErrTimeout, err)
}

// newCache is a cache over s with a check interval of a minute, open.
func newCache(s *source) (*engine.CatalogCache[int], *atomic.Bool) {
	closed := new(atomic.Bool)
	return &engine.CatalogCache[int]{Interval: time.Minute, Now: s.Now, Timeout: time.Second, Read: s.read,
		Classify: classify, Closed: closed, ErrClosed: errors.New("closed"), Log: s.log}, closed
}

// name is the catalog's first table's name: its version.
func name(cat sqlgen.Catalog, err error) string {
	if err != nil {
		return err.Error()
	}
	return cat.Tables[0].Name
}

// TestCatalogCache: a catalog is served unchecked for Interval, then checked, and read
// again only when the version changed; MarkStale checks at the next call; a failed check
// serves the catalog read last (or fails, classified, when there is none), and the next
// call checks again; a closed engine's due check fails with ErrUnavailable. Each new
// version read and each failure served over is logged.
func TestCatalogCache(t *testing.T) {
	s := &source{now: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), version: 1}
	c, closed := newCache(s)
	ctx := context.Background()

	s.set(func(s *source) { s.fail = errBoom })
	if _, err := c.Catalog(ctx); !errors.Is(err, errBoom) || !errors.Is(err, engine.ErrTimeout) ||
		err.Error() != "reading catalog: statement time limit exceeded: boom" {
		t.Fatalf("first check failing: %v", err)
	}
	s.set(func(s *source) { s.fail = nil })
	for _, step := range []struct {
		name          string
		change        func(s *source)
		want          string
		checks, reads int
	}{
		{"first", func(*source) {}, "v1", 2, 1},
		{"within the interval", func(s *source) { s.now = s.now.Add(59 * time.Second); s.version = 2 }, "v1", 2, 1},
		{"after it, changed", func(s *source) { s.now = s.now.Add(2 * time.Second) }, "v2", 3, 2},
		{"after it, unchanged", func(s *source) { s.now = s.now.Add(time.Minute) }, "v2", 4, 2},
		{"stale", func(*source) { c.MarkStale() }, "v2", 5, 2},
		{"fresh again", func(*source) {}, "v2", 5, 2},
		{"a check failing", func(s *source) { s.now = s.now.Add(time.Minute); s.version = 3; s.fail = errBoom }, "v2", 6, 2},
		{"checked again at once", func(s *source) { s.fail = nil }, "v3", 7, 3},
		{"closed, fresh", func(*source) { closed.Store(true) }, "v3", 7, 3},
		{"closed, due", func(s *source) { s.now = s.now.Add(time.Minute) }, "reading catalog: query engine unavailable: closed", 7, 3},
	} {
		step.change(s)
		got := name(c.Catalog(ctx))
		checks, reads, _ := s.counts()
		if got != step.want || checks != step.checks || reads != step.reads {
			t.Fatalf("%s: %q, %d checks, %d reads; want %q, %d checks, %d reads",
				step.name, got, checks, reads, step.want, step.checks, step.reads)
		}
	}
	want := "[read 1 read 2 failed: statement time limit exceeded: boom read 3]"
	if _, _, logged := s.counts(); fmt.Sprint(logged) != want {
		t.Fatalf("logged %v, want %s", logged, want)
	}
}

// TestCatalogCacheOneChecker: while one goroutine checks, the others get the catalog
// read last at once, without a check of their own.
func TestCatalogCacheOneChecker(t *testing.T) {
	s := &source{now: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), version: 1}
	c, _ := newCache(s)
	ctx := context.Background()
	if _, err := c.Catalog(ctx); err != nil {
		t.Fatal(err)
	}
	block, started := make(chan struct{}), make(chan struct{})
	s.set(func(s *source) {
		s.now = s.now.Add(2 * time.Minute)
		s.version = 2
		s.block, s.started = block, started
	})
	done := make(chan string)
	go func() { done <- name(c.Catalog(ctx)) }()
	<-started
	for range 3 {
		if got := name(c.Catalog(ctx)); got != "v1" {
			t.Fatalf("during the check: %q", got)
		}
	}
	close(block)
	if got := <-done; got != "v2" {
		t.Fatalf("the checker got %q", got)
	}
	if checks, _, _ := s.counts(); checks != 2 {
		t.Fatalf("%d checks, want 2", checks)
	}
}
