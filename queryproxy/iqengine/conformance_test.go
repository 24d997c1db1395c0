package iqengine_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/enginetest"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

// TestConformance runs the Forwarder's part of the engines' conformance suite on the iq
// engine. Its upstream is this service's own query handler over SQLite, which speaks the
// platform's query protocol: every table readable and writable by any token.
func TestConformance(t *testing.T) {
	enginetest.RunForwarder(t, func(t *testing.T) engine.Forwarder {
		db, err := sqliteengine.Open(context.Background(), sqliteengine.Config{
			Path: filepath.Join(t.TempDir(), "q.db"), Init: querydb.SQL + enginetest.Schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		cat, err := db.Catalog(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var tables []queryproxy.TablePolicy
		for _, tb := range cat.Tables {
			tables = append(tables, queryproxy.TablePolicy{Table: tb.Name, Read: []string{"all"}, Write: []string{"all"}})
		}
		h, err := queryproxy.New(queryproxy.Config{Engine: db, Tables: tables,
			Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
				return &queryproxy.Caller{Subject: "enginetest", ClientID: "enginetest", Scopes: []string{"all"}}, true
			}})
		if err != nil {
			t.Fatal(err)
		}
		up := httptest.NewServer(h)
		t.Cleanup(up.Close)
		eng, err := iqengine.New(iqengine.Config{URL: up.URL, Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	})
}
