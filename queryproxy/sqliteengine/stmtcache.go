package sqliteengine

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStatements bounds the prepared read statements kept. The SQL
// text of a statement holds no value (values are bind arguments), so the
// texts a service sees are few: one per statement shape.
const maxCachedStatements = 256

// stmtCache keeps the readers' prepared statements by SQL text, so that a
// statement shape is parsed and planned by SQLite once per connection
// (database/sql prepares a *sql.Stmt on each connection as it is used, and
// re-prepares it there if the schema changed). When full, it caches no
// more: a service with more shapes than that runs the others unprepared.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// get returns the prepared statement for query, preparing it on db.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.stmts[query]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stmts[query]; ok { // another goroutine prepared it meanwhile
		_ = st.Close()
		return prev, nil
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	if len(c.stmts) >= maxCachedStatements {
		return st, errNotCached
	}
	c.stmts[query] = st
	return st, nil
}

// close closes every cached statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.stmts {
		_ = st.Close()
		delete(c.stmts, q)
	}
}

// errNotCached is get's note that the statement it returns is not cached:
// the caller closes it after use.
var errNotCached = errNotCachedType{}

type errNotCachedType struct{}

func (errNotCachedType) Error() string { return "statement not cached" }
