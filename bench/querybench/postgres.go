package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/examples/querydb"
)

// createPostgres makes a fresh database on the server of dsn, loads the
// demo data into it, and returns its DSN and a function that drops it.
func createPostgres(ctx context.Context, dsn string) (string, func(), error) {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: connecting: %w", err)
	}
	name := "querybench_" + randomHex(6)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	drop := func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	}
	u, err := url.Parse(dsn)
	if err != nil {
		drop()
		return "", nil, err
	}
	u.Path = "/" + name
	db, err := pgx.Connect(ctx, u.String())
	if err != nil {
		drop()
		return "", nil, err
	}
	defer db.Close(ctx)
	if _, err := db.Exec(ctx, querydb.PostgresSQL); err != nil {
		drop()
		return "", nil, fmt.Errorf("postgres: demo data: %w", err)
	}
	return u.String(), drop, nil
}

// startDirectPostgres serves the baseline on PostgreSQL: a minimal
// handler running the same point select through a pgx pool, in a
// read-only transaction as the engine does, encoding the same result shape
// with encoding/json.
func startDirectPostgres(ctx context.Context, dsn string) (string, func(), error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return "", nil, err
	}
	cfg.MaxConns = int32(runtime.GOMAXPROCS(0) * 4)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		pool.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var crit []struct{ ColumnName, Operator, Value string }
		if err := json.NewDecoder(r.Body).Decode(&crit); err != nil || len(crit) != 2 {
			http.Error(w, "bad", 400)
			return
		}
		tx, err := pool.BeginTx(r.Context(), pgx.TxOptions{AccessMode: pgx.ReadOnly})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer tx.Rollback(r.Context())
		rows, err := tx.Query(r.Context(), `SELECT "Code", "LastPrice"::text, "Volume" FROM "Security" WHERE "Code" = $1 AND "Exchange" = $2`, crit[0].Value, crit[1].Value)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out := struct {
			Columns map[string]any
			Rows    [][]any
		}{Columns: map[string]any{"Code": obj{"Index": 0, "Type": "String"}, "LastPrice": obj{"Index": 1, "Type": "Decimal"}, "Volume": obj{"Index": 2, "Type": "Integer"}}}
		for rows.Next() {
			var code, price string
			var vol int64
			if err := rows.Scan(&code, &price, &vol); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			out.Rows = append(out.Rows, []any{code, json.Number(price), vol})
		}
		if rows.Err() != nil {
			http.Error(w, rows.Err().Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(out)
	})}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { srv.Close(); pool.Close() }, nil
}

// pgRoute is the gatehouse_query route of the PostgreSQL figures, under
// the prefix /pg.
func pgRoute(dsn string) obj {
	return obj{"handler": "gatehouse_query", "prefix": "/pg",
		"engine": obj{"engine": "postgres", "dsn": dsn, "max_conns": runtime.GOMAXPROCS(0) * 4},
		"tables": []obj{{"table": "Security", "read": []string{"Service/Market"}}}}
}
