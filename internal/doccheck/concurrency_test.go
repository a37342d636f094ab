package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// concurrencyPhrases are the statements HOUSE_STYLE asks of every exported
// type's doc: "safe for concurrent use by multiple goroutines" or "not safe
// for concurrent use". Both contain the first.
const concurrencyPhrase = "safe for concurrent use"

// moduleRoot returns the directory of the module's go.mod, two levels up.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return checkRoot(t, root)
}

// checkRoot fails the test unless root holds a go.mod.
func checkRoot(t *testing.T, root string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	return root
}

// undocumentedType is an exported type whose doc does not state its
// concurrency.
type undocumentedType struct {
	pos  token.Position // file relative to the module root
	name string
}

// publicTypes parses every non-test Go file of the module's public
// packages, whatever its build constraints, and returns the exported types
// whose doc lacks [concurrencyPhrase] (in any case), with the directories it did not
// look into and why.
func publicTypes(t *testing.T, root string) (missing []undocumentedType, checked int, skipped []string) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata":
				return filepath.SkipDir
			case rel == "internal" || strings.HasPrefix(rel, "internal"+string(filepath.Separator)):
				return filepath.SkipDir // not importable by a fork
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				skipped = append(skipped, rel+" (a module of its own)")
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			dir := filepath.Dir(rel) + " (package main)"
			if !slices.Contains(skipped, dir) {
				skipped = append(skipped, dir)
			}
			return nil
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				if !ts.Name.IsExported() {
					continue
				}
				checked++
				doc := ts.Doc
				if doc == nil && len(gen.Specs) == 1 {
					doc = gen.Doc
				}
				if doc == nil || !strings.Contains(strings.ToLower(strings.Join(strings.Fields(doc.Text()), " ")), concurrencyPhrase) {
					pos := fset.Position(ts.Pos())
					pos.Filename = filepath.ToSlash(rel)
					missing = append(missing, undocumentedType{pos, ts.Name.Name})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return missing, checked, skipped
}

// TestExportedTypesStateConcurrency checks that the doc of every exported
// type of a public package says whether the type is safe for concurrent
// use, as HOUSE_STYLE asks. A doc may wrap the phrase over lines.
func TestExportedTypesStateConcurrency(t *testing.T) {
	missing, checked, skipped := publicTypes(t, moduleRoot(t))
	for _, s := range skipped {
		t.Logf("not checked: %s", s)
	}
	if checked == 0 {
		t.Fatal("found no exported types: the walk is broken")
	}
	t.Logf("%d exported types checked", checked)
	for _, m := range missing {
		t.Errorf("%s: type %s: its doc does not say %q (\"... by multiple goroutines\" or \"not ...\")", m.pos, m.name, concurrencyPhrase)
	}
}

// TestPublicTypesFindsMissing runs the walk over a small module of its own
// and checks what it reports, so that a walk that finds nothing cannot pass
// for a clean module.
func TestPublicTypesFindsMissing(t *testing.T) {
	root := t.TempDir()
	for name, src := range map[string]string{
		"go.mod": "module example.com/m\n",
		"a/a.go": `package a

// Good is safe for concurrent use by multiple goroutines.
type Good struct{}

// Plain is a plain value, not safe for concurrent use.
type Plain struct{}

// Wrapped is safe for
// concurrent use by multiple goroutines, over two lines.
type Wrapped struct{}

// Upper: Safe for concurrent use by multiple goroutines.
type Upper struct{}

// Bad says nothing about goroutines.
type Bad struct{}

// The group's doc does not count for its types: safe for concurrent use.
type (
	// GroupBad has a doc of its own, which says nothing about goroutines.
	GroupBad int
	// GroupGood is safe for concurrent use by multiple goroutines.
	GroupGood int
)

type unexported struct{}
`,
		"a/a_test.go":        "package a\n\ntype InTest struct{}\n",
		"internal/i/i.go":    "package i\n\ntype Internal struct{}\n",
		"cmd/c/main.go":      "package main\n\ntype Main struct{}\n",
		"nested/go.mod":      "module example.com/nested\n",
		"nested/n.go":        "package nested\n\ntype Nested struct{}\n",
		"a/testdata/t/t.go":  "package t\n\ntype Data struct{}\n",
		"b/b_slicelabels.go": "//go:build slicelabels\n\npackage b\n\ntype Tagged struct{}\n",
		"a/doc.go":           "// Package a is a test.\npackage a\n",
		"b/alias.go":         "package b\n\n// Alias names Tagged.\ntype Alias = Tagged\n",
	} {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing, checked, skipped := publicTypes(t, checkRoot(t, root))
	var got []string
	for _, m := range missing {
		got = append(got, m.pos.Filename+":"+m.name)
	}
	slices.Sort(got)
	want := []string{"a/a.go:Bad", "a/a.go:GroupBad", "b/alias.go:Alias", "b/b_slicelabels.go:Tagged"}
	if !slices.Equal(got, want) {
		t.Errorf("publicTypes missing = %q, want %q", got, want)
	}
	if checked != 9 {
		t.Errorf("publicTypes checked %d types, want 9", checked)
	}
	slices.Sort(skipped)
	if want := []string{"cmd/c (package main)", "nested (a module of its own)"}; !slices.Equal(skipped, want) {
		t.Errorf("publicTypes skipped %q, want %q", skipped, want)
	}
}
