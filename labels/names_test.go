package labels

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoPrometheusNames checks what the package doc promises: no exported
// name of this package is one of Prometheus's model/labels, which a file
// imports beside it. It reads both packages' source, every build's files.
func TestNoPrometheusNames(t *testing.T) {
	prom, err := build.Import("github.com/prometheus/prometheus/model/labels", ".", build.FindOnly)
	if err != nil {
		t.Fatalf("build.Import(model/labels) = %v", err)
	}
	theirs := exportedNames(t, prom.Dir)
	if len(theirs) == 0 || !theirs["Builder"] || !theirs["Labels"] {
		t.Fatalf("exportedNames(%s) = %v, want at least Builder and Labels", prom.Dir, theirs)
	}
	ours := exportedNames(t, ".")
	if !ours["HashedBuilder"] {
		t.Fatalf("exportedNames(.) = %v, want HashedBuilder among them", ours)
	}
	for name := range ours {
		if theirs[name] {
			t.Errorf("labels.%s is also an exported name of Prometheus's model/labels", name)
		}
	}
}

// exportedNames returns the exported top-level names declared in the
// non-test Go files of dir, whatever their build constraints.
func exportedNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return names
}
