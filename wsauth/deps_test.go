package wsauth_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/internal/importtable"
)

// allowedImports is the import table of wsauth (the package docs of
// wsauth, zenith, policy and wsframe say it in words): besides the
// standard library, each package may import only what its row lists (the
// module's own packages without the module's path). zenith, the wire
// vocabulary, is a leaf; policy reads only zenith and entitle (the
// entitlements' vocabulary, a leaf of the module); wsframe, the RFC 6455
// framing, reads only gorilla (its opcodes and errors) and klauspost's
// flate (the compressor of permessage-deflate); the gateway builds
// on all three and on audit (its records' kinds and attributes), and of OpenTelemetry imports the tracing API alone (its
// spans go to the provider of the upgrade request's span; never the SDK
// or an exporter). Neither zenith nor policy imports wsauth, gorilla or
// zap; wsframe imports nothing of wsauth.
var allowedImports = map[string][]string{
	"wsauth/zenith":           {"github.com/go-json-experiment/json/jsontext"},
	"wsauth/policy":           {"wsauth/zenith", "entitle"},
	"wsauth/internal/wsframe": {"github.com/gorilla/websocket", "github.com/klauspost/compress/flate"},
	"wsauth": {"wsauth/zenith", "wsauth/policy", "wsauth/internal/wsframe", "internal/contain", "entitle", "audit",
		"github.com/gorilla/websocket", "go.uber.org/zap",
		"go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes", "go.opentelemetry.io/otel/trace"},
}

// TestImportTable fails when a wsauth package imports, outside the
// standard library, a package its row does not allow, or when a package
// under wsauth has no row. Tests may import more (a fuzz oracle needs
// reference parsers).
func TestImportTable(t *testing.T) {
	importtable.CheckRows(t, ".", allowedImports)
}
