package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

// venueFigure measures the cost of a venue table: the same point select through the
// query handler itself (no Caddy and no token check: one caller holding ASX:quotes and
// NZX:quotes) on Security as a plain table and as a venue table (venue_column Exchange,
// venues ASX NZX), in interleaved one-second slices (-d of each in all), and prints the
// ratio of their rates (goal: at least 0.95).
func venueFigure(ctx context.Context, dbPath string, c int, d time.Duration, codes []string) error {
	eng, err := sqliteengine.Open(ctx, sqliteengine.Config{Path: dbPath, MaxReadConns: readConns(c), StatementTimeout: time.Minute})
	if err != nil {
		return err
	}
	defer eng.Close()
	caller := &queryproxy.Caller{Subject: "bench", ClientID: "bench", Scopes: []string{"Service/Market"},
		Entitlements: entitle.MustParse("ASX:quotes NZX:quotes")}
	serve := func(t queryproxy.TablePolicy) (string, func(), error) {
		h, err := queryproxy.New(queryproxy.Config{Engine: eng, Tables: []queryproxy.TablePolicy{t},
			MaxConcurrentPerUser: c, MaxUserShare: 100,
			Authenticate: func(http.ResponseWriter, *http.Request) (*queryproxy.Caller, bool) { return caller, true }})
		if err != nil {
			return "", nil, err
		}
		if err := h.CheckCatalog(ctx); err != nil {
			return "", nil, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, err
		}
		srv := &http.Server{Handler: h}
		go func() { _ = srv.Serve(l) }()
		return "http://" + l.Addr().String(), func() { srv.Close() }, nil
	}
	plain, stopPlain, err := serve(queryproxy.TablePolicy{Table: "Security", Read: []string{"Service/Market"}})
	if err != nil {
		return err
	}
	defer stopPlain()
	venue, stopVenue, err := serve(queryproxy.TablePolicy{Table: "Security", Read: []string{"Service/Market"},
		VenueColumn: "Exchange", Venues: []string{"ASX", "NZX"}})
	if err != nil {
		return err
	}
	defer stopVenue()
	// Interleaved one-second slices: on a shared machine the load drifts
	// within a run, and both tables meet the same.
	both, rounds, err := interleaved(c, d, [2]func(*http.Client, int) error{
		pointAt(plain, "/query", "", codes, false), pointAt(venue, "/query", "", codes, false)}, nil)
	if err != nil {
		return fmt.Errorf("plain and venue tables: %w", err)
	}
	fmt.Printf("%-36s %12s %10s %10s\n", fmt.Sprintf("point select, handler (%d x 1s each)", rounds), "req/s", "p50", "p99")
	fmt.Printf("%-36s %12.0f %10v %10v\n", "plain table", both[0].rate(), both[0].p(0.5), both[0].p(0.99))
	fmt.Printf("%-36s %12.0f %10v %10v\n", "venue table, filter IN (ASX, NZX)", both[1].rate(), both[1].p(0.5), both[1].p(0.99))
	r := both[1].rate() / both[0].rate()
	fmt.Printf("ratio venue filter / without: %.3f (goal >= 0.95: %s)\n\n", r, verdict(r >= 0.95))
	return nil
}
