package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// prepared holds the statements of the token endpoint's hot paths, prepared
// once at Open so that a request does not parse SQL. Those on the readers
// are used directly: database/sql prepares each on a reader connection the
// first time it runs there. Those on the writer are used inside a write
// transaction through tx.StmtContext, which reuses what was prepared on the
// one writer connection. (Preparing on the writer's pool from inside a
// transaction would wait for the connection that transaction holds.)
type prepared struct {
	// on the readers
	family        *sql.Stmt // familyQuery
	refreshState  *sql.Stmt // refreshStateQuery
	legacyToken   *sql.Stmt // legacyTokenQuery
	user          *sql.Stmt // userQuery
	userBySubject *sql.Stmt // userBySubjectQuery
	tokenRevoked  *sql.Stmt // tokenRevokedQuery

	// on the writer
	savepoint, release, rollbackTo *sql.Stmt // around each write of a batch

	rotateFamily *sql.Stmt // rotateFamilyQuery

	all []*sql.Stmt
}

// prepare prepares the statements of p on r (the readers) and w (the
// writer). It is called once the schema is up to date.
func (p *prepared) prepare(ctx context.Context, r, w *sql.DB) error {
	for _, st := range []struct {
		dst   **sql.Stmt
		db    *sql.DB
		query string
	}{
		{&p.family, r, familyQuery},
		{&p.refreshState, r, refreshStateQuery},
		{&p.legacyToken, r, legacyTokenQuery},
		{&p.user, r, userQuery},
		{&p.userBySubject, r, userBySubjectQuery},
		{&p.tokenRevoked, r, tokenRevokedQuery},
		{&p.savepoint, w, `SAVEPOINT write`},
		{&p.release, w, `RELEASE write`},
		{&p.rollbackTo, w, `ROLLBACK TO write`},
		{&p.rotateFamily, w, rotateFamilyQuery},
	} {
		stmt, err := st.db.PrepareContext(ctx, st.query)
		if err != nil {
			return fmt.Errorf("preparing %q: %w", st.query, err)
		}
		*st.dst = stmt
		p.all = append(p.all, stmt)
	}
	return nil
}

// close closes the statements; it must run before the pools are closed.
func (p *prepared) close() error {
	var errs []error
	for _, stmt := range p.all {
		errs = append(errs, stmt.Close())
	}
	p.all = nil
	return errors.Join(errs...)
}
