package contain

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// notProduct are the module's folders whose code never runs in the
// binary: benchmarks, black-box tests, test fixtures and helpers.
var notProduct = []string{"bench", "integration", "testdata", "node_modules", "internal/contain",
	"identity/store/postgres/pgtest", "identity/store/storetest", "identity/verify/verifytest", "queryproxy/enginetest"}

// TestEveryGoroutineIsContained lists every goroutine the product starts
// outside this package, a go statement, a WaitGroup's Go, a time.AfterFunc
// or a context.AfterFunc in a file that is not a test, and fails on each:
// they go through Go, AfterFunc and ContextAfterFunc, which recover a
// panic (STYLE: a bare go statement is a finding).
// It failed when: the gateway, the stores and the identity server started
// goroutines of their own (21 sites).
func TestEveryGoroutineIsContained(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || slices.Contains(notProduct, rel) || slices.Contains(notProduct, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a go statement: start it with contain.Go", fset.Position(n.Pos()))
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, _ := sel.X.(*ast.Ident)
				switch {
				case sel.Sel.Name == "Go" && (pkg == nil || pkg.Name != "contain"):
					t.Errorf("%s: %s.Go starts a goroutine: use contain.Go", fset.Position(n.Pos()), exprString(sel.X))
				case sel.Sel.Name == "AfterFunc" && pkg != nil && (pkg.Name == "time" || pkg.Name == "context"):
					t.Errorf("%s: %s.AfterFunc runs its function in a goroutine: use contain.AfterFunc or ContextAfterFunc", fset.Position(n.Pos()), pkg.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d files read: the walk missed the module", files)
	}
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "?"
}
