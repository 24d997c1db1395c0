package pgengine

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// A read is one round trip. The engine sends, in one pipeline of the extended protocol
// (the four statements, then one Sync), on a connection of the pool:
//
//	BEGIN READ ONLY
//	SELECT set_config('statement_timeout', ..., true), set_config('search_path', ..., true)
//	the statement, its values bound
//	ROLLBACK
//
// and reads the answers in order, the statement's rows as they come. Each of the four is
// a statement prepared once per connection (the connection keeps the most recently used
// maxPrepared of them), so a read sends only Bind and Execute messages. A statement is
// prepared inside the same transaction, with the same search path, as it runs, so
// PostgreSQL resolves its names (tables, functions, operators) once, as it would at run
// time, and never re-parses it.
//
// The guarantees are those of a transaction of its own (doc.go): the statement runs after
// BEGIN READ ONLY and after the SELECT that took the transaction's snapshot (so it cannot
// make it read-write), under the time limit; and a statement that would end the
// transaction (COMMIT sent as the statement) is refused: the statement's command tag must
// be a SELECT's, and the connection must be idle once the pipeline is read. When anything
// fails, PostgreSQL skips what follows in the pipeline up to the Sync; the engine then
// rolls back the transaction the BEGIN opened, and a connection it cannot bring back to
// idle is closed, never returned to the pool in a transaction.

// maxPrepared bounds the statements prepared on one connection for reads; the least
// recently used one is deallocated when another is prepared beyond it.
const maxPrepared = 256

// preparedKey is the key of a connection's prepared statements in its CustomData.
const preparedKey = "gatehouse.pgengine.prepared"

// prepared is the statements prepared on one connection, most recently used first. A
// connection is used by one goroutine at a time (the one that acquired it from the pool),
// so it needs no lock.
type prepared struct {
	bySQL map[string]*list.Element // of *pgconn.StatementDescription
	lru   list.List
	next  uint64   // the number of the next statement's name
	stale []string // names evicted or failed, deallocated with the next preparation
}

func preparedOf(pc *pgconn.PgConn) *prepared {
	data := pc.CustomData()
	ps, _ := data[preparedKey].(*prepared)
	if ps == nil {
		ps = &prepared{bySQL: map[string]*list.Element{}}
		data[preparedKey] = ps
	}
	return ps
}

// forget drops a statement (one whose run failed: its plan may be stale), to be
// deallocated with the next preparation.
func (ps *prepared) forget(sql string) {
	if el, ok := ps.bySQL[sql]; ok {
		ps.stale = append(ps.stale, el.Value.(*pgconn.StatementDescription).Name)
		ps.lru.Remove(el)
		delete(ps.bySQL, sql)
	}
}

// statements returns the descriptions of sqls prepared on pc, preparing those that are
// not, in one round trip, inside a read-only transaction set up by begin and limits (run
// unprepared) and rolled back.
func (ps *prepared) statements(ctx context.Context, pc *pgconn.PgConn, begin, limits string, sqls ...string) ([]*pgconn.StatementDescription, error) {
	out := make([]*pgconn.StatementDescription, len(sqls))
	var missing []int
	for i, sql := range sqls {
		if el, ok := ps.bySQL[sql]; ok {
			ps.lru.MoveToFront(el)
			out[i] = el.Value.(*pgconn.StatementDescription)
		} else if !slices.Contains(sqls[:i], sql) {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	for len(ps.bySQL)+len(missing) > maxPrepared && ps.lru.Len() > 0 {
		ps.forget(ps.lru.Back().Value.(*pgconn.StatementDescription).SQL)
	}
	p := pc.StartPipeline(ctx)
	for _, name := range ps.stale {
		p.SendDeallocate(name)
	}
	p.SendQueryParams(begin, nil, nil, nil, nil)
	p.SendQueryParams(limits, nil, nil, nil, nil)
	names := make([]string, len(missing))
	for k, i := range missing {
		ps.next++
		names[k] = "gatehouse_read_" + strconv.FormatUint(ps.next, 10)
		p.SendPrepare(names[k], sqls[i], nil)
	}
	p.SendQueryParams("ROLLBACK", nil, nil, nil, nil)
	if err := p.Sync(); err != nil {
		p.Close()
		return nil, err
	}
	err := func() error {
		for range ps.stale {
			if _, err := p.GetResults(); err != nil {
				return err
			}
		}
		ps.stale = ps.stale[:0]
		for range 2 {
			if err := discard(p); err != nil {
				return err
			}
		}
		for k, i := range missing {
			res, err := p.GetResults()
			if err != nil {
				return err
			}
			sd, ok := res.(*pgconn.StatementDescription)
			if !ok {
				return fmt.Errorf("preparing a statement: unexpected %T", res)
			}
			sd.Name, sd.SQL = names[k], sqls[i]
			ps.bySQL[sd.SQL] = ps.lru.PushFront(sd)
		}
		return discard(p)
	}()
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	for i, sql := range sqls {
		if out[i] == nil {
			out[i] = ps.bySQL[sql].Value.(*pgconn.StatementDescription)
		}
	}
	return out, nil
}

// discard reads the next result of a pipeline, which must be a statement's, and drops
// its rows.
func discard(p *pgconn.Pipeline) error {
	res, err := p.GetResults()
	if err != nil {
		return err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("unexpected %T in the pipeline", res)
	}
	_, err = rr.Close()
	return err
}

// The statements around each read; limits is the Engine's (its time limit and search
// path come from the configuration).
const (
	beginReadSQL = "BEGIN READ ONLY"
	rollbackSQL  = "ROLLBACK"
)

// startRead sends the pipeline of a read of st on a connection of the pool and reads it up
// to the statement's rows, which the returned reading holds with the connection.
func (e *Engine) startRead(qctx context.Context, st sqlgen.Statement) (*reading, error) {
	c, err := e.pool.Acquire(qctx)
	if err != nil {
		return nil, err
	}
	pc := c.Conn().PgConn()
	ps := preparedOf(pc)
	sds, err := ps.statements(qctx, pc, beginReadSQL, e.limitsSQL, beginReadSQL, e.limitsSQL, st.SQL, rollbackSQL)
	if err != nil {
		ps.forget(st.SQL)
		e.release(qctx, c)
		return nil, err
	}
	var b pgx.ExtendedQueryBuilder
	if err := b.Build(c.Conn().TypeMap(), sds[2], bindArgs(st.Args)); err != nil {
		e.release(qctx, c)
		return nil, fmt.Errorf("binding the statement's values: %w", err)
	}
	fields := sds[2].Fields
	formats := make([]int16, len(fields))
	for i, f := range fields {
		formats[i] = resultFormats[f.DataTypeOID] // text (0) when not listed
	}
	p := pc.StartPipeline(qctx)
	p.SendQueryPrepared(sds[0].Name, nil, nil, nil)
	p.SendQueryPrepared(sds[1].Name, nil, nil, nil)
	p.SendQueryPrepared(sds[2].Name, b.ParamValues, b.ParamFormats, formats)
	p.SendQueryPrepared(sds[3].Name, nil, nil, nil)
	rd := &reading{e: e, conn: c, p: p, sql: st.SQL}
	if err := p.Sync(); err != nil {
		return nil, rd.end(qctx, err)
	}
	for range 2 {
		if err := discard(p); err != nil {
			return nil, rd.end(qctx, err)
		}
	}
	res, err := p.GetResults()
	if err != nil {
		return nil, rd.end(qctx, err)
	}
	var ok bool
	if rd.rr, ok = res.(*pgconn.ResultReader); !ok {
		return nil, rd.end(qctx, fmt.Errorf("unexpected %T in the pipeline", res))
	}
	return rd, nil
}

// reading is a read under way: its connection, its pipeline, and the statement's result.
type reading struct {
	e    *Engine
	conn *pgxpool.Conn
	p    *pgconn.Pipeline
	rr   *pgconn.ResultReader
	sql  string
	done bool
	err  error // the outcome, once done
}

// finish reads the rest of the pipeline after the statement's rows were read (or
// abandoned): the statement's command tag, which must be a SELECT's, the ROLLBACK and the
// Sync. It returns the first error and frees the connection.
func (rd *reading) finish(ctx context.Context) error {
	if rd.done {
		return rd.err
	}
	tag, err := rd.rr.Close()
	if err == nil && !tag.Select() {
		err = errEndedTx
	}
	if err == nil {
		err = discard(rd.p)
	}
	if err == nil {
		var res any
		if res, err = rd.p.GetResults(); err == nil {
			if _, ok := res.(*pgconn.PipelineSync); !ok {
				err = fmt.Errorf("unexpected %T in the pipeline", res)
			}
		}
	}
	return rd.end(ctx, err)
}

// end closes the pipeline (reading what is left of it), rolls back a transaction still
// open (after a failure, PostgreSQL skipped the ROLLBACK), and gives the connection back,
// or closes it if it is not idle. It returns err, or the first error of the rest.
func (rd *reading) end(ctx context.Context, err error) error {
	if rd.done {
		return rd.err
	}
	rd.done = true
	defer func() { rd.err = err }()
	if cerr := rd.p.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		preparedOf(rd.conn.Conn().PgConn()).forget(rd.sql)
	}
	rd.e.release(ctx, rd.conn)
	return err
}

// release gives c back to the pool after a read: a connection left in a transaction is
// rolled back first (within cancelGrace, whatever the state of ctx); the pool closes one
// that is still not idle.
func (e *Engine) release(ctx context.Context, c *pgxpool.Conn) {
	pc := c.Conn().PgConn()
	if !pc.IsClosed() && !pc.IsBusy() && pc.TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
		_, err := pc.Exec(rctx, rollbackSQL).ReadAll()
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			e.cfg.Logger.Debug("rolling back after a failed read", zap.Error(err))
		}
	}
	c.Release()
}
