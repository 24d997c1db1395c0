package gatehouse_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// markdownFiles are the repository's Markdown pages, outside node_modules,
// testdata and the fuzz corpora.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == ".git" || d.Name() == "artifacts") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	mdFence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// slug is GitHub's anchor for a heading: lower case, without what is not a
// letter, digit, space, hyphen or underscore, spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of a page's headings.
func anchors(t *testing.T, path string) map[string]bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(string(b), ""), -1) {
		a[slug(m[1])] = true
	}
	return a
}

// TestDocLinksResolve: every relative link of every Markdown page names a
// file or folder the repository holds, and its #anchor a heading there.
// It failed when: the README's sections moved to docs/ and a page still
// linked to #running-several-instances of its own.
func TestDocLinksResolve(t *testing.T) {
	checked := 0
	for _, page := range markdownFiles(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := mdFence.ReplaceAllString(string(b), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := page
			if target != "" {
				path = filepath.Join(filepath.Dir(page), target)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %v", page, link, err)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with that anchor", page, link, path)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d links checked: the scan is broken", checked)
	}
}

// outsideCitation matches a citation the repository cannot resolve: the
// names of the notes and specs it was written from (the pattern spells
// them), and the numbers of an issue tracker it does not hold (the word
// issue before a number, with or without a hash, or a hash and a number
// after a space or a bracket). A project's "owner/repo" before the hash
// says where to look, and passes.
var outsideCitation = regexp.MustCompile(`(?m)\.\./shared|\bDESIGN\.md|\binterface\.md|\bzenith-protocol\.md|(?i:\bissues? #?\d+)|(?:^|[\s(\[,;])#\d+\b`)

// TestNoCitationOutsideTheRepository: no Go comment and no page cites a
// document the repository does not contain (the design notes and specs it
// was written from) or an issue number (outsideCitation), and every docs/…
// or *.md path a Go comment names exists. A comment must stay true for
// someone who has only the repository: it says what the citation stood
// for, or links to docs/.
func TestNoCitationOutsideTheRepository(t *testing.T) {
	mdPath := regexp.MustCompile(`(?:\b|\./)((?:docs|bench|examples)/[A-Za-z0-9_./-]+\.md|[A-Za-z0-9_-]+\.md)\b`)
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			text := cg.Text()
			if m := outsideCitation.FindString(text); m != "" && path != "docs_test.go" { // this file names the forms
				t.Errorf("%s: a comment cites %q, which the repository does not hold: %.80q", path, strings.TrimLeft(m, " \t\n([,;"), text)
			}
			for _, m := range mdPath.FindAllStringSubmatch(text, -1) {
				name := m[1]
				if !strings.Contains(name, "/") {
					if name != "README.md" && name != "LICENSE.md" {
						continue // a bare name: too loose to check
					}
					name = filepath.Join(filepath.Dir(path), name)
					if _, err := os.Stat(name); err != nil {
						name = m[1] // the repository's own
					}
				}
				if _, err := os.Stat(name); err != nil {
					t.Errorf("%s: a comment names %s, which the repository does not contain", path, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range markdownFiles(t) {
		b, _ := os.ReadFile(page)
		if m := outsideCitation.FindString(string(b)); m != "" {
			t.Errorf("%s cites %q, which the repository does not hold", page, strings.TrimLeft(m, " \t\n([,;"))
		}
	}
}

// TestDashboardQueriesExportedMetrics: every gatehouse_ metric the Grafana
// dashboard under dist/ queries (a histogram's _bucket, _sum and _count by
// its name) is defined by the code and has its row in docs/operations.md;
// and the dashboard covers every documented metric.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("dist", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dist/grafana-dashboard.json: %v", err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	ops, err := os.ReadFile(filepath.Join("docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := definedMetrics(t)
	queried := map[string]bool{}
	name := regexp.MustCompile(`gatehouse_[a-z_]+`)
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			if base, ok := strings.CutSuffix(n, "_bucket"); ok && defined[base] {
				n = base
			}
			queried[n] = true
			if !defined[n] {
				t.Errorf("the dashboard queries %s, which no code defines", n)
			}
			if !strings.Contains(string(ops), "`"+n+"`") {
				t.Errorf("the dashboard queries %s, which docs/operations.md does not list", n)
			}
		}
	}
	for n := range defined {
		if !queried[n] {
			t.Errorf("the dashboard shows nothing of %s", n)
		}
	}
	if len(queried) < 15 {
		t.Fatalf("only %d metrics queried: the scan is broken", len(queried))
	}
}

// definedMetrics are the gatehouse_ metric names the code (not its tests)
// defines.
func definedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	defined := map[string]bool{}
	lit := regexp.MustCompile(`"(gatehouse_[a-z_]+)"`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			if strings.Contains(string(b), "Name: "+m[0]) || strings.Contains(string(b), "NewDesc("+m[0]) || strings.Contains(string(b), "Name:    "+m[0]) {
				defined[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return defined
}

// importTable reads the allowedImports map of an import-table test.
func importTable(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	table := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "allowedImports" || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			t.Fatalf("%s: allowedImports is not a map literal", file)
		}
		for _, e := range lit.Elts {
			kv := e.(*ast.KeyValueExpr)
			k, _ := strconv.Unquote(kv.Key.(*ast.BasicLit).Value)
			deps := []string{}
			for _, d := range kv.Value.(*ast.CompositeLit).Elts {
				s, _ := strconv.Unquote(d.(*ast.BasicLit).Value)
				deps = append(deps, s)
			}
			table[k] = deps
		}
		return false
	})
	return table
}

// TestArchitecturePageShowsTheImportTables: the import tables on
// docs/architecture.md are the ones the deps_test.go files enforce, row
// for row: one copy of the layout, the test's. It failed when: the page's
// table left out identity/authorize's import of identity/verify.
func TestArchitecturePageShowsTheImportTables(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	row := regexp.MustCompile("(?m)^\\| `([a-z/]+)` \\| (.*) \\|$")
	tick := regexp.MustCompile("`([^`]+)`")
	for _, m := range row.FindAllStringSubmatch(string(page), -1) {
		deps := []string{}
		for _, d := range tick.FindAllStringSubmatch(m[2], -1) {
			deps = append(deps, d[1])
		}
		rows[m[1]] = deps
	}
	matches, err := filepath.Glob(filepath.Join("*", "deps_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for _, file := range matches {
		table := importTable(t, file)
		if len(table) > 0 {
			tables++
		}
		for pkg, deps := range table {
			got, ok := rows[pkg]
			if !ok {
				t.Errorf("docs/architecture.md has no row for %s (%s)", pkg, file)
				continue
			}
			if !sameSet(got, deps) {
				t.Errorf("docs/architecture.md: %s may import %v, but %s says %v", pkg, got, file, deps)
			}
		}
	}
	if tables < 2 {
		t.Fatalf("only %d import tables found in %v", tables, matches)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}

// TestModuleLeavesTheDemoBackendOut: what xcaddy builds (the root package
// and everything it imports) does not carry the demo's backend, which
// trusts whoever reaches it; cmd/gatehouse, which runs the demo, does.
func TestModuleLeavesTheDemoBackendOut(t *testing.T) {
	deps := func(pkg string) string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return string(out)
	}
	const demo = "github.com/gatehouse/gatehouse/caddymodule/demobackend\n"
	if strings.Contains(deps("."), demo) {
		t.Error("the module's root package imports the demo backend")
	}
	if !strings.Contains(deps("./cmd/gatehouse"), demo) {
		t.Error("cmd/gatehouse does not carry the demo backend: the demo cannot start")
	}
}
