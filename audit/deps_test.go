package audit_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/internal/importtable"
)

// allowedImports is the import table of audit (its package doc says it in
// words): besides the standard library, internal/contain (the delayed
// flush's goroutine), zap (a sink may be a zap core),
// golang-jwt (the checkpoint algorithms) and go-json-experiment (strict
// JSON); audittest, the services' tests' fake writer, audit alone. It imports no other package of the module: not the Caddy glue,
// identity, the gateway or the query service, which build on it.
var allowedImports = map[string][]string{
	"audit": {"internal/contain", "go.uber.org/zap", "go.uber.org/zap/zapcore", "github.com/golang-jwt/jwt/v5",
		"github.com/go-json-experiment/json", "github.com/go-json-experiment/json/jsontext"},
	"audit/audittest": {"audit"},
}

// TestImportTable fails when a package under audit imports, outside the
// standard library, what its row does not allow, or has no row. It failed
// when: the row left out zapcore, which the zap sink needs.
func TestImportTable(t *testing.T) {
	importtable.CheckRows(t, ".", allowedImports)
}
