package sqliteengine

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// maxCachedStatements bounds the prepared statements each reader connection keeps. The
// SQL text of a statement holds no value (values are bind arguments), so the texts a
// service sees are few: one per statement shape.
const maxCachedStatements = 256

// readers is the pool of read-only connections queries run on. It holds the driver's
// connections itself rather than through database/sql, whose per-query work (a goroutine
// watching the context of each Rows, the pool's locks, Scan's conversions and copies) was
// a fifth of the engine's time on a point select. A connection runs one query at a time:
// it is taken for a query and given back when its rows are closed.
type readers struct {
	connect func(context.Context) (driver.Conn, error)
	slots   chan struct{} // a token per open connection, idle or taken: at most cap
	idle    chan *reader  // the open connections not taken
	done    chan struct{} // closed by close

	// maxIdle is how long a connection stays open unused (maxReaderIdle): then it is
	// closed, with its statements and its page cache. The idle connections are taken
	// oldest first, so under a steady load they take turns and stay open; an engine
	// quiet for maxIdle holds none.
	maxIdle time.Duration
	now     func() time.Time // time.Now; a test's clock

	mu     sync.Mutex
	closed bool
	expiry *time.Timer // runs expire while connections are idle; nil when none are
}

// maxReaderIdle is how long a read-only connection stays open unused, as database/sql's
// ConnMaxIdleTime was set before the engine held its connections itself.
const maxReaderIdle = 5 * time.Minute

// reader is one read-only connection and the statements prepared on it, least recently
// used last.
type reader struct {
	conn      driver.Conn
	idleSince time.Time // when it was last given back
	stmts     map[string]*cachedStmt
	lru       cachedStmt // the list's sentinel: lru.next is the most recently used
}

// cachedStmt is a statement prepared on a reader, in its list of statements.
type cachedStmt struct {
	query      string
	st         driver.Stmt
	prev, next *cachedStmt
}

func newReaders(max int, connect func(context.Context) (driver.Conn, error)) *readers {
	return &readers{connect: connect, slots: make(chan struct{}, max),
		idle: make(chan *reader, max), done: make(chan struct{}), maxIdle: maxReaderIdle, now: time.Now}
}

// busy reports whether every connection is open and in use: a readiness probe then
// counts the engine as serving rather than wait for one.
func (p *readers) busy() bool { return len(p.idle) == 0 && len(p.slots) == cap(p.slots) }

// get takes an idle connection, or opens one if fewer than the bound are open, or waits
// for one to be given back, until ctx ends.
func (p *readers) get(ctx context.Context) (*reader, error) {
	select {
	case r := <-p.idle:
		return r, nil
	default:
	}
	select {
	case r := <-p.idle:
		return r, nil
	case p.slots <- struct{}{}:
		conn, err := p.connect(ctx)
		if err != nil {
			<-p.slots
			return nil, err
		}
		r := newReader(conn)
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			p.discard(r)
			return nil, errClosed
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.done:
		return nil, errClosed
	}
}

// put gives r back: to the idle connections, or, if it is broken or the pool closed,
// closes it.
func (p *readers) put(r *reader, broken bool) {
	p.mu.Lock()
	closed := p.closed
	if !closed && !broken {
		r.idleSince = p.now()
		p.idle <- r // never blocks: one place per slot
		if p.expiry == nil {
			p.expiry = contain.AfterFunc(nil, "query.sqlite", p.maxIdle, p.expire)
		}
	}
	p.mu.Unlock()
	if closed || broken {
		p.discard(r)
	}
}

// expire closes the connections idle for maxIdle, and runs again when the oldest of the
// others will have been, while there are any.
func (p *readers) expire() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	now := p.now()
	var old, keep []*reader
drain:
	for range len(p.idle) {
		select {
		case r := <-p.idle:
			if now.Sub(r.idleSince) >= p.maxIdle {
				old = append(old, r)
			} else {
				keep = append(keep, r)
			}
		default:
			break drain // taken meanwhile
		}
	}
	for _, r := range keep {
		p.idle <- r // in the same order; their places are free (put waits for p.mu)
	}
	if len(keep) == 0 {
		p.expiry = nil
	} else {
		p.expiry.Reset(max(p.maxIdle-now.Sub(keep[0].idleSince), p.maxIdle/64))
	}
	p.mu.Unlock()
	for _, r := range old {
		p.discard(r)
	}
}

// discard closes r and frees its slot.
func (p *readers) discard(r *reader) {
	r.close()
	<-p.slots
}

// close closes the idle connections and, as they are given back, the taken ones.
func (p *readers) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	if p.expiry != nil {
		p.expiry.Stop()
	}
	p.mu.Unlock()
	for {
		select {
		case r := <-p.idle:
			p.discard(r)
		default:
			return
		}
	}
}

func newReader(conn driver.Conn) *reader {
	r := &reader{conn: conn, stmts: map[string]*cachedStmt{}}
	r.lru.next, r.lru.prev = &r.lru, &r.lru
	return r
}

// prepare returns the statement for query prepared on r. At the bound the least recently
// used statement is closed: a service's common shapes stay prepared, whatever other texts
// come and go.
func (r *reader) prepare(ctx context.Context, query string) (driver.Stmt, error) {
	if c, ok := r.stmts[query]; ok {
		if r.lru.next != c {
			c.unlink()
			r.pushFront(c)
		}
		return c.st, nil
	}
	st, err := r.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if len(r.stmts) >= maxCachedStatements {
		old := r.lru.prev
		old.unlink()
		delete(r.stmts, old.query)
		_ = old.st.Close()
	}
	c := &cachedStmt{query: query, st: st}
	r.stmts[query] = c
	r.pushFront(c)
	return st, nil
}

func (r *reader) pushFront(c *cachedStmt) {
	c.prev, c.next = &r.lru, r.lru.next
	r.lru.next.prev = c
	r.lru.next = c
}

func (c *cachedStmt) unlink() {
	c.prev.next, c.next.prev = c.next, c.prev
	c.prev, c.next = nil, nil
}

func (r *reader) close() {
	for q, c := range r.stmts {
		_ = c.st.Close()
		delete(r.stmts, q)
	}
	_ = r.conn.Close()
}

// namedArgs are args, converted by bindArgs, as the driver takes them.
func namedArgs(args []any) ([]driver.NamedValue, error) {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range bindArgs(args) {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv, nil
}

// isBroken reports whether err, from a statement on a connection, leaves that connection
// unfit to run another.
func isBroken(err error) bool {
	return errors.Is(err, driver.ErrBadConn)
}
