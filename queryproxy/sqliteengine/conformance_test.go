package sqliteengine

import (
	"testing"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/enginetest"
)

// TestConformance runs the engines' conformance suite on SQLite, each case on a database
// of its own.
func TestConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, o enginetest.Options) engine.Engine {
		return openTest(t, Config{Init: querydb.SQL + enginetest.Schema, StatementTimeout: o.StatementTimeout,
			CatalogCheckInterval: o.CatalogCheckInterval, Now: o.Now, Trace: o.Trace})
	})
}
