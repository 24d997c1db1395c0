package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The configurations the tests run. demoConfig is Caddyfile.example itself;
// every other variant is the demo with text inserted at anchors of
// Caddyfile.example (each must occur there exactly once, so that a change
// of the demo that moves one fails by name instead of running another
// config), or, for a gatehouse that is not the demo, a Caddyfile of its
// own. Each variant is written to a directory of the test's own and may
// use the placeholders Gatehouse.Env sets.

// demoConfig is the demo configuration, relative to the module root.
const demoConfig = "Caddyfile.example"

// Anchors in Caddyfile.example.
const (
	anchorGlobal        = "\tpersist_config off\n"                                    // a line of the global options
	anchorGatehouse     = "\t\tusers_file examples/users.json\n"                      // a line of the gatehouse global option
	anchorSite          = "\tbind {$GATEHOUSE_BIND:127.0.0.1}\n"                      // a line of the site block
	anchorServiceClient = "client demo-service {"                                     // the start of the second client
	anchorWS            = "\tgatehouse_ws /ws {\n"                                    // the first line of the /ws gateway
	anchorIssuer        = "\t\tissuer http://localhost:{$GATEHOUSE_HTTP_PORT:8080}\n" // the issuer line
)

// configEdit inserts text after anchor, or before it when before is set,
// or in its place when replace is set.
type configEdit struct {
	anchor  string
	insert  string
	before  bool
	replace bool
}

// demoVariant writes Caddyfile.example with edits in a directory called
// name and returns the Caddyfile's path.
func demoVariant(t testing.TB, name string, edits ...configEdit) string {
	t.Helper()
	orig, err := os.ReadFile(filepath.Join(repoRoot, demoConfig))
	if err != nil {
		t.Fatal(err)
	}
	config := string(orig)
	for _, e := range edits {
		if n := strings.Count(config, e.anchor); n != 1 {
			t.Fatalf("%s has %d of %q, want exactly one to edit at", demoConfig, n, e.anchor)
		}
		replacement := e.anchor + e.insert
		switch {
		case e.replace:
			replacement = e.insert
		case e.before:
			replacement = e.insert + e.anchor
		}
		config = strings.Replace(config, e.anchor, replacement, 1)
	}
	return writeConfig(t, name, config)
}

// verboseConfig is the demo with every log on (Caddy's debug logs; the
// demo's site has its access log, with its filter of credentials in URLs),
// as a deployment might run it, so the log checks see all there is to see;
// appOptions go into the gatehouse global option. name names the config's
// directory.
func verboseConfig(t testing.TB, name, appOptions string) string {
	t.Helper()
	return demoVariant(t, name,
		configEdit{anchor: anchorGlobal, insert: "\tdebug\n"},
		configEdit{anchor: anchorGatehouse, insert: appOptions},
	)
}

// issuerConfig is the identity server of the remote-JWKS test: the verbose
// demo with a signing-key check every second, so that a rotation made by
// the CLI is picked up at once.
func issuerConfig(t testing.TB) string {
	t.Helper()
	return verboseConfig(t, "issuer", "\t\tsigning_keys {\n\t\t\tcheck_interval 1s\n\t\t}\n")
}

// configWithClient is the demo with one more confidential client
// (client_credentials for Service/News, secret given by its SHA-256).
func configWithClient(t testing.TB, clientID, secret string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(secret))
	block := fmt.Sprintf("client %s {\n\t\t\tsecret_sha256 %s\n\t\t\tgrant_types client_credentials\n\t\t\tscopes Service/News\n\t\t}\n\n\t\t",
		clientID, hex.EncodeToString(sum[:]))
	return demoVariant(t, "with-client", configEdit{anchor: anchorServiceClient, insert: block, before: true})
}

// wsConfig is the demo with options added to the /ws gateway's block
// (each a line, e.g. "auth_timeout 1s"). name names the config's
// directory.
func wsConfig(t testing.TB, name string, options ...string) string {
	t.Helper()
	var b strings.Builder
	for _, o := range options {
		b.WriteString("\t\t" + o + "\n")
	}
	return demoVariant(t, name, configEdit{anchor: anchorWS, insert: b.String()})
}

// wsExtraConfig is the demo with one more gateway, on path, whose only
// upstream is upstream (e.g. a loopback port nothing listens on, or
// another gatehouse's demo backend), with options in its block (each a
// line). name names the config's directory.
func wsExtraConfig(t testing.TB, name, path, upstream string, options ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\tgatehouse_ws %s {\n\t\tupstream %s\n", path, upstream)
	for _, o := range options {
		b.WriteString("\t\t" + o + "\n")
	}
	b.WriteString("\t}\n")
	return demoVariant(t, name, configEdit{anchor: anchorWS, insert: b.String(), before: true})
}

// guardConfig is a gatehouse that is not the demo: remote-only mode (a
// verifier, no issuer), debug and access logs, and one site that passes
// requests with a Service/Market token to upstream with the subject in
// X-User-Id.
func guardConfig(t testing.TB, issuer, jwksURL, upstream string) string {
	t.Helper()
	config := fmt.Sprintf(`{
	admin {$GATEHOUSE_ADMIN}
	persist_config off
	debug

	gatehouse {
		verifier {
			issuer %s
			jwks_url %s
		}
	}
}

http://:{$GATEHOUSE_HTTP_PORT} {
	bind {$GATEHOUSE_BIND}
	log
	gatehouse_auth Service/Market {
		header X-User-Id {http.auth.user.id}
	}
	reverse_proxy %s
}
`, issuer, jwksURL, strings.TrimPrefix(upstream, "http://"))
	return writeConfig(t, "guard", config)
}

// writeConfig writes a Caddyfile (named so, for the adapter) in a new
// directory called name and returns its path.
func writeConfig(t testing.TB, name, config string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// liveConfig is the demo with appOptions in the gatehouse global option
// and wsOptions in the /ws gateway's block (each a line, e.g.
// "access_token_lifetime 4s", "expiry_grace 10s"). name names the
// config's directory.
func liveConfig(t testing.TB, name string, appOptions []string, wsOptions ...string) string {
	t.Helper()
	lines := func(indent string, options []string) string {
		var b strings.Builder
		for _, o := range options {
			b.WriteString(indent + o + "\n")
		}
		return b.String()
	}
	return demoVariant(t, name,
		configEdit{anchor: anchorGatehouse, insert: lines("\t\t", appOptions)},
		configEdit{anchor: anchorWS, insert: lines("\t\t", wsOptions)},
	)
}

// multiConfig is the demo as one of several instances sharing a PostgreSQL
// store: the issuer from GATEHOUSE_ISSUER (one URL for all of them, see
// Options.Issuer), the store from GATEHOUSE_STORE_DSN with revocation
// notices on or off, signing keys checked every second and announced
// multiAnnounce before they sign (so that a rotation shows within a
// test), and wsOptions in the /ws gateway's block (each a line). name
// names the config's directory.
func multiConfig(t testing.TB, name string, notify bool, wsOptions ...string) string {
	t.Helper()
	notifyArg := "on"
	if !notify {
		notifyArg = "off"
	}
	app := fmt.Sprintf("\t\tstore postgres {\n\t\t\tdsn_env GATEHOUSE_STORE_DSN\n\t\t\trevocation_notify %s\n\t\t}\n"+
		"\t\tsigning_keys {\n\t\t\tannounce %s\n\t\t\tcheck_interval 1s\n\t\t}\n", notifyArg, multiAnnounce)
	var ws strings.Builder
	for _, o := range wsOptions {
		ws.WriteString("\t\t" + o + "\n")
	}
	return demoVariant(t, name,
		configEdit{anchor: anchorIssuer, insert: "\t\tissuer {$GATEHOUSE_ISSUER}\n", replace: true},
		configEdit{anchor: anchorGatehouse, insert: app},
		configEdit{anchor: anchorWS, insert: ws.String()},
	)
}
