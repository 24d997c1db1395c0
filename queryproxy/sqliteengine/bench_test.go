package sqliteengine

import (
	"context"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// BenchmarkQuery reads 10,000 rows of market data per op through Query; it reports rows/s.
func BenchmarkQuery(b *testing.B) {
	const n = 10_000
	e, err := Open(context.Background(), Config{Path: b.TempDir() + "/bench.db", Init: testSchema + `
		INSERT INTO Security (Code, Exchange, Name, LastPrice, Volume, Listed, Updated)
		WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 10000)
		SELECT 'S' || x, 'NZX', 'Security number ' || x, 1 + x / 100.0, x * 100, x % 2,
			'2026-11-21T10:30:00Z' FROM c;`})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	st := sqlgen.Statement{SQL: `SELECT Code, Exchange, Name, LastPrice, Volume, Listed, Updated FROM Security WHERE Exchange = ?`, Args: []any{"NZX"}}
	b.ReportAllocs()
	for b.Loop() {
		rows, err := e.Query(context.Background(), st)
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for rows.Next() {
			got++
		}
		if err := rows.Err(); err != nil || got != n {
			b.Fatalf("%d rows, %v", got, err)
		}
		rows.Close()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
}
