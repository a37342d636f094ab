package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestImplBenchmarks(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a_test.go": `package x

import ("fmt"; "testing")

func BenchmarkSideBySide(b *testing.B) {
	for _, impl := range []string{"prometheus", "ingestkit"} {
		b.Run(fmt.Sprintf("case=x/impl=%s", impl), func(b *testing.B) {})
	}
}

func BenchmarkAlone(b *testing.B) { b.Run("size=1", func(b *testing.B) {}) }

func helper() string { return "impl=not-a-benchmark" }
`,
		"b_test.go": `package x

import "testing"

func BenchmarkLiteral(b *testing.B) { b.Run("impl=ingestkit", func(b *testing.B) {}) }

type T struct{}

func (T) BenchmarkMethod(b *testing.B) { b.Run("impl=x", nil) }
`,
		"c.go": `package x

func BenchmarkNotATest() { _ = "impl=" }
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := implBenchmarks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"BenchmarkLiteral", "BenchmarkSideBySide"}; !slices.Equal(got, want) {
		t.Errorf("implBenchmarks = %q, want %q", got, want)
	}

	empty := t.TempDir()
	if got, err := implBenchmarks(empty); err != nil || len(got) != 0 {
		t.Errorf("implBenchmarks(empty dir) = %q, %v, want none", got, err)
	}
}

func TestShellQuote(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"test", "-run", "^$"}, `test -run '^$'`},
		{[]string{"-bench", "^(A|B)$", "./x"}, `-bench '^(A|B)$' ./x`},
		{[]string{"it's"}, `'it'\''s'`},
		{nil, ""},
	} {
		if got := shellQuote(c.args); got != c.want {
			t.Errorf("shellQuote(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}

func TestCPUFromOutput(t *testing.T) {
	out := []byte("goos: linux\ngoarch: amd64\ncpu: Some CPU @ 2.0GHz  \nBenchmarkX 1 2 ns/op\n")
	if got := cpuFromOutput(out); got != "Some CPU @ 2.0GHz" {
		t.Errorf("cpuFromOutput = %q", got)
	}
	if got := cpuFromOutput(nil); got != "unknown CPU" {
		t.Errorf("cpuFromOutput(nil) = %q", got)
	}
}

func TestDropHeader(t *testing.T) {
	in := "goos: linux\ngoarch: amd64\npkg: x\ncpu: Some CPU\n   │ a │ b │\nRow-2 1 2\n"
	if got, want := string(dropHeader([]byte(in))), "   │ a │ b │\nRow-2 1 2\n"; got != want {
		t.Fatalf("dropHeader() = %q, want %q", got, want)
	}
	if got := string(dropHeader([]byte("Row-2 1 2\n"))); got != "Row-2 1 2\n" {
		t.Fatalf("dropHeader() of a table without a header = %q", got)
	}
}

// TestFindBenchmarksModule checks that the benchmarks of a nested module are
// found by running go list in the module's directory, and are run there.
func TestFindBenchmarksModule(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir()) // go list reports the real path
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod": "module example.com/nested\n\ngo 1.21\n",
		"x/x_test.go": `package x

import "testing"

func BenchmarkPeers(b *testing.B) { b.Run("impl=peer", func(b *testing.B) {}) }
`,
		"y/y.go": "package y\n",
	}
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := findBenchmarks(dir, []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	want := []pkgBenchmarks{{importPath: "example.com/nested/x", dir: filepath.Join(dir, "x"), modDir: dir, benchmarks: []string{"BenchmarkPeers"}}}
	if !slices.EqualFunc(got, want, func(a, b pkgBenchmarks) bool {
		return a.importPath == b.importPath && a.dir == b.dir && a.modDir == b.modDir && slices.Equal(a.benchmarks, b.benchmarks)
	}) {
		t.Errorf("findBenchmarks(%q, ./...) = %+v, want %+v", dir, got, want)
	}
}

// TestReplayBenchmarkLeftOut checks that the default mode leaves out the
// receiver's BenchmarkReplay, which -requests runs, and keeps its other
// side-by-side benchmarks.
func TestReplayBenchmarkLeftOut(t *testing.T) {
	pkgs, err := findBenchmarks("", []string{replayPackage})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 {
		t.Fatalf("findBenchmarks(%s) = %d packages, want 1", replayPackage, len(pkgs))
	}
	if got := pkgs[0].benchmarks; slices.Contains(got, replayBenchmark) || !slices.Contains(got, "BenchmarkReceive") {
		t.Errorf("findBenchmarks(%s) = %q, want BenchmarkReceive without %s", replayPackage, got, replayBenchmark)
	}
}

// TestReceiveBenchmarks checks that BenchmarkReceive, whose cases are
// split between package ingest (the write handler's) and the receiver (its
// multi-tenant case), is found in both.
func TestReceiveBenchmarks(t *testing.T) {
	const ingestPackage = "github.com/ingestkit/ingestkit/ingest"
	pkgs, err := findBenchmarks("", []string{ingestPackage, replayPackage})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, p := range pkgs {
		found[p.importPath] = slices.Contains(p.benchmarks, "BenchmarkReceive")
	}
	for _, path := range []string{ingestPackage, replayPackage} {
		if !found[path] {
			t.Errorf("findBenchmarks(%s) lacks BenchmarkReceive: %+v", path, pkgs)
		}
	}
}

func TestReplayArgs(t *testing.T) {
	for _, c := range []struct {
		c    config
		want string
	}{
		{config{count: 6, timeout: "120m"}, `test -run '^$' -bench '^BenchmarkReplay$' -benchmem -count 6 -timeout 120m ` + replayPackage},
		{config{count: 1, timeout: "5m", benchtime: "1x"}, `test -run '^$' -bench '^BenchmarkReplay$' -benchmem -count 1 -timeout 5m -benchtime 1x ` + replayPackage},
	} {
		if got := shellQuote(replayArgs(c.c)); got != c.want {
			t.Errorf("replayArgs(%+v) = %s, want %s", c.c, got, c.want)
		}
	}
}

func TestRunReplayNotADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		if err := runReplay(config{requests: dir, count: 1}, io.Discard); err == nil {
			t.Errorf("runReplay(-requests %s) = nil, want an error", dir)
		}
	}
}

// TestCodeLines checks that a file whose tables ran at different commits
// is refused unless -allow-mixed, which then has each table say its own.
func TestCodeLines(t *testing.T) {
	for _, c := range []struct {
		codes      []string
		mixed      bool
		wantErr    bool
		wantPer    bool
		wantHeader string
	}{
		{nil, false, false, false, "none"},
		{[]string{"commit a", "commit a"}, false, false, false, "every table at commit a"},
		{[]string{"commit a", "commit b"}, false, true, false, ""},
		{[]string{"commit a, commit b"}, false, true, false, ""}, // one table, two functions
		{[]string{"commit a", "commit b"}, true, false, true, "mixed, from commit a; commit b (each table says which)"},
	} {
		header, per, err := codeLines(c.codes, c.mixed)
		if (err != nil) != c.wantErr || per != c.wantPer || header != c.wantHeader {
			t.Errorf("codeLines(%q, %v) = %q, %v, %v; want %q, %v, error %v", c.codes, c.mixed, header, per, err, c.wantHeader, c.wantPer, c.wantErr)
		}
	}
}

func TestDateLine(t *testing.T) {
	start := time.Date(2026, 12, 1, 23, 23, 0, 0, time.UTC)
	if got, want := dateLine(start, span{}), "2026-12-01 23:23 UTC"; got != want {
		t.Errorf("dateLine without reused tables = %q, want %q", got, want)
	}
	var s span
	for _, hm := range [][2]int{{22, 43}, {22, 22}, {23, 15}, {22, 59}} {
		s.add(time.Date(2026, 12, 1, hm[0], hm[1], 0, 0, time.UTC))
	}
	want := "2026-12-01 23:23 UTC; the tables reused from earlier runs (-reuse) finished between 22:22 and 23:15 UTC (each table says when)"
	if got := dateLine(start, s); got != want {
		t.Errorf("dateLine with reused tables = %q, want %q", got, want)
	}
}

func TestSectionNote(t *testing.T) {
	for _, c := range []struct {
		code, reused string
		per          bool
		want         string
	}{
		{"commit a", "", false, ""},
		{"commit a", "", true, "Ran at commit a."},
		{"commit a", "BenchmarkX finished 22:22 UTC", false, "Reused from an earlier run: BenchmarkX finished 22:22 UTC."},
		{"commit a, commit b", "BenchmarkX finished 22:22 UTC", true, "Ran at commit a, commit b; reused from an earlier run: BenchmarkX finished 22:22 UTC."},
	} {
		if got := sectionNote(c.code, c.per, c.reused); got != c.want {
			t.Errorf("sectionNote(%q, %v, %q) = %q, want %q", c.code, c.per, c.reused, got, c.want)
		}
	}
}

// TestPackageNotes checks that a package's benchnotes.md is read, trimmed,
// and that a package without one has no notes.
func TestPackageNotes(t *testing.T) {
	dir := t.TempDir()
	if got, err := packageNotes(dir); err != nil || got != "" {
		t.Fatalf("packageNotes(no file) = %q, %v; want \"\", nil", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, notesFile), []byte("\n### Limits\n\nThe head's commit.\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := packageNotes(dir); err != nil || got != "### Limits\n\nThe head's commit." {
		t.Fatalf("packageNotes = %q, %v; want the file's text, trimmed", got, err)
	}
}
