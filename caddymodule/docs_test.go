package caddymodule_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
)

// caddyfileWords are the words a Caddyfile parser accepts: the string
// constants of the case clauses in files (its subdirectives and their
// keyword arguments).
func caddyfileWords(t *testing.T, files ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && s != "" {
						seen[s] = true
					}
				}
			}
			return true
		})
	}
	words := make([]string, 0, len(seen))
	for w := range seen {
		words = append(words, w)
	}
	sort.Strings(words)
	return words
}

// TestEverySubdirectiveIsDocumented: every word a module's Caddyfile parser
// accepts appears on the module's page under docs/configuration/.
func TestEverySubdirectiveIsDocumented(t *testing.T) {
	pages := []struct {
		page  string
		files []string
	}{
		{"gatehouse.md", []string{"caddyfile.go", "pgstore/pgstore.go", "sqlitestore/sqlitestore.go"}},
		{"gatehouse_identity.md", []string{"identity_handler.go"}},
		{"gatehouse_auth.md", []string{"auth_caddyfile.go"}},
		{"gatehouse_health.md", []string{"health.go"}},
		{"gatehouse_ws.md", []string{"wshandler/caddyfile.go"}},
		{"gatehouse_query.md", []string{"queryhandler/caddyfile.go", "queryhandler/engine_iq.go"}},
		{"gatehouse_console.md", []string{"consolehandler/handler.go"}},
	}
	total := 0
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join("..", "docs", "configuration", p.page))
		if err != nil {
			t.Fatal(err)
		}
		words := caddyfileWords(t, p.files...)
		total += len(words)
		for _, w := range words {
			if !regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(w) + `([^A-Za-z0-9_]|$)`).Match(b) {
				t.Errorf("docs/configuration/%s does not mention %q, which %v accepts", p.page, w, p.files)
			}
		}
	}
	if total < 100 {
		t.Fatalf("only %d words found: the scan is broken", total)
	}
}
