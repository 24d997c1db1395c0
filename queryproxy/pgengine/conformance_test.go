package pgengine

import (
	"testing"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/enginetest"
)

// TestConformance runs the engines' conformance suite on PostgreSQL, each case on a
// database of its own.
func TestConformance(t *testing.T) {
	serverURL(t)
	enginetest.Run(t, func(t *testing.T, o enginetest.Options) engine.Engine {
		e, _ := openTest(t, Config{StatementTimeout: o.StatementTimeout, CatalogCheckInterval: o.CatalogCheckInterval,
			Now: o.Now, Trace: o.Trace}, querydb.PostgresSQL+enginetest.Schema)
		return e
	})
}
