// Command benchall runs every side-by-side benchmark of the module, those
// whose sub-benchmarks are named impl=..., and writes BENCHMARKS.md: one
// benchstat table (-col /impl) per benchmark function, grouped by package,
// with the machine, the Go and Prometheus versions and the date.
//
// Each benchmark function runs in a go test process of its own. In one
// process for a whole package, the benchmarks that run first leave a large
// heap, which makes garbage collection rarer for those that run after
// them, and so changes their ratios: an allocation-heavy baseline gains
// the most (BenchmarkDecode's impl=prometheus ran in well under half its
// time after the package's other benchmarks than on its own). The baseline
// and ingestkit of one function still share a process, as the rules for
// side-by-side benchmarks ask.
//
// Run it from the repository on a quiet machine; it takes a while:
//
//	go run ./internal/cmd/benchall
//
// It finds the benchmarks itself: every package of the module (go list
// ./...) whose _test.go files hold a Benchmark function that names
// sub-benchmarks "impl=", so that a package added later is picked up
// without changing this program. It looks in the same way through the
// nested modules that -modules names, by default examples/peers, whose
// benchmarks compare ingestkit with other projects' decoders, and
// integrations/thanos, whose benchmarks run Thanos's own cases with
// Thanos's code and with ingestkit's: they need dependencies that the
// library's go.mod does not have, and their go commands run in the
// module's directory, with the variables of its benchall.env. A package
// whose directory has a benchnotes.md gets its text after its tables: what
// limits the ratios and which part is upstream's, in words, as the figures
// are the tables'. Flags select fewer packages or runs, for a quick check:
//
//	go run ./internal/cmd/benchall -list
//	go run ./internal/cmd/benchall -pkgs ./labels -modules '' -count 1 -benchtime 100x -out /tmp/BENCHMARKS.md
//
// With -requests DIR it answers "what would ingestkit buy on my traffic?"
// instead: DIR holds requests that the receiver captured
// (examples/receiver -capture-dir DIR), and the receiver's
// BenchmarkReplay replays them through Prometheus's remote.NewWriteHandler
// and through the receiver, each over a fresh TSDB, after checking that
// both TSDBs end identical; the benchstat table (time, bytes and
// allocations per op, per request and per sample) goes to standard
// output, and BENCHMARKS.md is not written:
//
//	go run ./internal/cmd/benchall -requests /tmp/capture
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// benchstat is the benchstat the tables are made with.
const benchstat = "golang.org/x/perf/cmd/benchstat@latest"

type config struct {
	pkgs      string
	modules   string
	count     int
	benchtime string
	timeout   string
	out       string
	raw       string
	reuse     bool
	mixed     bool
	list      bool
	requests  string
}

func main() {
	var c config
	flag.StringVar(&c.pkgs, "pkgs", "./...", "comma-separated package patterns to look for benchmarks in")
	flag.StringVar(&c.modules, "modules", "examples/peers,integrations/thanos", "comma-separated directories of nested modules to look for benchmarks in (all their packages), relative to the working directory; empty for none")
	flag.IntVar(&c.count, "count", 6, "go test -count: runs of each benchmark, for benchstat's statistics")
	flag.StringVar(&c.benchtime, "benchtime", "", "go test -benchtime (default go test's, 1s)")
	flag.StringVar(&c.timeout, "timeout", "120m", "go test -timeout of each benchmark function's run")
	flag.StringVar(&c.out, "out", "BENCHMARKS.md", "the file to write")
	flag.StringVar(&c.raw, "raw", "", "directory to keep the raw go test outputs in (default: a temporary one, removed)")
	flag.BoolVar(&c.reuse, "reuse", false, "with -raw: use the raw output a package already has there instead of running its benchmarks again")
	flag.BoolVar(&c.mixed, "allow-mixed", false, "with -reuse: write the file even if its raw outputs come from different commits, and say under each table which commit it ran at (without it, benchall refuses)")
	flag.BoolVar(&c.list, "list", false, "print the packages and benchmarks that would run, and exit")
	flag.StringVar(&c.requests, "requests", "", "instead: replay this directory of captured requests (the receiver's -capture-dir) through Prometheus's handler and the receiver, check that both TSDBs end identical, and print the benchstat table")
	flag.Parse()
	run := run
	if c.requests != "" {
		run = runReplay
	}
	if err := run(c, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchall:", err)
		os.Exit(1)
	}
}

// pkgBenchmarks is a package and its side-by-side benchmarks. modDir is
// the directory of the nested module the package belongs to, where its go
// commands run, or "" for the module of the working directory, and env
// the variables its go commands run with (moduleEnv).
type pkgBenchmarks struct {
	importPath, dir, modDir string
	env                     []string // the module's benchall.env
	benchmarks              []string
}

func run(c config, log io.Writer) error {
	pkgs, err := findBenchmarks("", strings.Split(c.pkgs, ","))
	if err != nil {
		return err
	}
	var modules []string
	for _, m := range strings.Split(c.modules, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		modules = append(modules, m)
		more, err := findBenchmarks(m, []string{"./..."})
		if err != nil {
			return err
		}
		pkgs = append(pkgs, more...)
	}
	if len(pkgs) == 0 {
		return fmt.Errorf("no impl= benchmarks in %s", c.pkgs)
	}
	if c.list {
		for _, p := range pkgs {
			fmt.Printf("%s\t%s\n", p.importPath, strings.Join(p.benchmarks, " "))
		}
		return nil
	}
	rawDir := c.raw
	if rawDir == "" {
		if rawDir, err = os.MkdirTemp("", "benchall-"); err != nil {
			return err
		}
		defer os.RemoveAll(rawDir)
	} else if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return err
	}

	start := time.Now().UTC()
	load := loadAverage()
	var md bytes.Buffer
	cpu := ""
	type section struct{ pkg, cmd, table, code, reused, notes string }
	var sections []section
	var reusedSpan span // of the tables taken from earlier runs (-reuse)
	head, err := codeVersion()
	if err != nil {
		return err
	}
	for _, p := range pkgs {
		// One table per benchmark function: their baselines differ (a
		// package may compare with Prometheus in one and with Cortex in
		// another), and benchstat compares each row with the first column.
		var table strings.Builder
		var cmds, codes, reused []string
		for i, name := range p.benchmarks {
			args := []string{"test", "-run", "^$", "-bench", "^" + name + "$", "-benchmem", "-count", strconv.Itoa(c.count), "-timeout", c.timeout}
			if c.benchtime != "" {
				args = append(args, "-benchtime", c.benchtime)
			}
			args = append(args, p.importPath)
			cmd := "go " + shellQuote(args)
			if len(p.env) > 0 {
				cmd = shellQuote(p.env) + " " + cmd
			}
			if p.modDir != "" {
				cmd = "(cd " + shellQuote([]string{p.modDir}) + " && " + cmd + ")"
			}
			cmds = append(cmds, cmd)
			rawFile := filepath.Join(rawDir, strings.ReplaceAll(p.importPath, "/", "_")+"_"+name+".txt")
			out, err := os.ReadFile(rawFile)
			if !c.reuse || err != nil {
				fmt.Fprintf(log, "benchall: go %s\n", strings.Join(args, " "))
				goTest := exec.Command("go", args...)
				goTest.Dir = p.modDir
				goTest.Env = append(os.Environ(), p.env...)
				out, err = goTest.CombinedOutput()
				if werr := os.WriteFile(rawFile, out, 0o644); werr != nil {
					return werr
				}
				if werr := os.WriteFile(rawFile+".code", []byte(head+"\n"), 0o644); werr != nil {
					return werr
				}
				if err != nil {
					return fmt.Errorf("go test %s %s: %w\n%s", p.importPath, name, err, out)
				}
			} else {
				fmt.Fprintf(log, "benchall: reusing %s\n", rawFile)
				// The raw file is written once, when its run ends.
				if fi, err := os.Stat(rawFile); err == nil {
					t := fi.ModTime().UTC()
					reusedSpan.add(t)
					reused = append(reused, name+" finished "+t.Format("2006-01-02 15:04 MST"))
				}
			}
			code := "unknown (a raw file without its .code)"
			if b, err := os.ReadFile(rawFile + ".code"); err == nil {
				code = strings.TrimSpace(string(b))
			}
			if !slices.Contains(codes, code) {
				codes = append(codes, code)
			}
			if cpu == "" {
				cpu = cpuFromOutput(out)
			}
			// Output, not CombinedOutput: go run's "go: downloading" lines
			// go to stderr and are no part of the table.
			var stderr bytes.Buffer
			bs := exec.Command("go", "run", benchstat, "-col", "/impl", rawFile)
			bs.Stderr = &stderr
			t, err := bs.Output()
			if err != nil {
				return fmt.Errorf("benchstat %s: %w\n%s%s", rawFile, err, t, stderr.Bytes())
			}
			if i > 0 {
				table.WriteString("\n")
				t = dropHeader(t)
			}
			table.Write(t)
		}
		notes, err := packageNotes(p.dir)
		if err != nil {
			return err
		}
		sections = append(sections, section{p.importPath, strings.Join(cmds, "\n"), table.String(), strings.Join(codes, ", "), strings.Join(reused, ", "), notes})
	}
	var codes []string
	for _, s := range sections {
		codes = append(codes, s.code)
	}
	codeLine, perSection, err := codeLines(codes, c.mixed)
	if err != nil {
		return err
	}

	goVersion, _ := output("go", "env", "GOVERSION")
	promVersion, _ := output("go", "list", "-m", "-f", "{{.Version}}", "github.com/prometheus/prometheus")
	fmt.Fprintf(&md, "# Benchmarks\n\n")
	fmt.Fprintf(&md, "Written by `go run ./internal/cmd/benchall` (flags: `-count %d", c.count)
	if c.benchtime != "" {
		fmt.Fprintf(&md, " -benchtime %s", c.benchtime)
	}
	fmt.Fprintf(&md, " -pkgs %s -modules '%s'`). Each table compares ingestkit (`impl=ingestkit`) with the code it replaces, on the same machine in the same run, as `%s -col /impl` prints it: ratios and p-values, not single timings. Each benchmark function ran in a `go test` process of its own.\n\n", c.pkgs, c.modules, "benchstat")
	fmt.Fprintf(&md, "- Date: %s\n", dateLine(start, reusedSpan))
	fmt.Fprintf(&md, "- Machine: %s, %d logical CPUs, %s/%s; load average at the start: %s\n", cpu, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, load)
	fmt.Fprintf(&md, "- Code: %s\n", codeLine)
	fmt.Fprintf(&md, "- Go: %s\n", strings.TrimSpace(goVersion))
	fmt.Fprintf(&md, "- Prometheus: github.com/prometheus/prometheus %s\n", strings.TrimSpace(promVersion))
	for _, m := range modules {
		cmd := exec.Command("go", "list", "-m", "-f", "{{if not .Main}}{{if not .Indirect}}{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}} {{.Version}}{{end}}\n{{end}}{{end}}", "all")
		cmd.Dir = m
		env, err := moduleEnv(m)
		if err != nil {
			return err
		}
		cmd.Env = append(os.Environ(), env...)
		deps, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("go list -m in %s: %w", m, err)
		}
		var reqs []string
		for line := range strings.Lines(string(deps)) {
			if line = strings.TrimSpace(line); line != "" {
				reqs = append(reqs, line)
			}
		}
		fmt.Fprintf(&md, "- %s requires: %s\n", m, strings.Join(reqs, ", "))
	}
	fmt.Fprintf(&md, "- Duration: %s", time.Since(start).Round(time.Second))
	if !reusedSpan.first.IsZero() {
		fmt.Fprintf(&md, ", of the tables that ran in this run only")
	}
	fmt.Fprintf(&md, "\n")
	for _, s := range sections {
		fmt.Fprintf(&md, "\n## %s\n\n```sh\n%s\n```\n\n```text\n%s```\n", s.pkg, s.cmd, s.table)
		if n := sectionNote(s.code, perSection, s.reused); n != "" {
			fmt.Fprintf(&md, "\n%s\n", n)
		}
		if s.notes != "" {
			fmt.Fprintf(&md, "\n%s\n", s.notes)
		}
	}
	if err := os.WriteFile(c.out, md.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "benchall: wrote %s (%d packages)\n", c.out, len(sections))
	return nil
}

// notesFile is the file of a package's directory whose text benchall
// writes after the package's tables: what the tables alone do not say, such
// as what limits a ratio and which part of it is upstream's. It holds no
// figures, which are the tables', so that it stays true from run to run.
const notesFile = "benchnotes.md"

// packageNotes returns the text of dir's notesFile, trimmed, or "" if dir
// has none.
func packageNotes(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, notesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// dropHeader removes benchstat's goos, goarch, pkg and cpu lines, which
// the first table of a package already shows.
func dropHeader(t []byte) []byte {
	for _, prefix := range []string{"goos:", "goarch:", "pkg:", "cpu:"} {
		if bytes.HasPrefix(t, []byte(prefix)) {
			if i := bytes.IndexByte(t, '\n'); i >= 0 {
				t = t[i+1:]
			}
		}
	}
	return t
}

// findBenchmarks lists the packages matching patterns in the module of
// directory modDir ("" for the working directory's), with their
// side-by-side benchmarks, in import-path order.
func findBenchmarks(modDir string, patterns []string) ([]pkgBenchmarks, error) {
	env, err := moduleEnv(modDir)
	if err != nil {
		return nil, err
	}
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s in %q: %w", strings.Join(args, " "), modDir, err)
	}
	out := string(b)
	var pkgs []pkgBenchmarks
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		path, dir, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		names, err := implBenchmarks(dir)
		if err != nil {
			return nil, err
		}
		names = slices.DeleteFunc(names, func(n string) bool { return path == replayPackage && n == replayBenchmark })
		if len(names) > 0 {
			pkgs = append(pkgs, pkgBenchmarks{importPath: path, dir: dir, modDir: modDir, env: env, benchmarks: names})
		}
	}
	return pkgs, sc.Err()
}

// moduleEnv returns the environment variables that the go commands of the
// nested module in modDir run with: the KEY=VALUE lines of its
// benchall.env, if it has one (blank lines and # comments skipped). A
// module that must build with tags or a newer toolchain than the
// repository's says so there, as integrations/thanos does
// (GOFLAGS=-tags=slicelabels, GOTOOLCHAIN).
func moduleEnv(modDir string) ([]string, error) {
	if modDir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(modDir, "benchall.env"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var env []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, _, ok := strings.Cut(line, "="); !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not KEY=VALUE", filepath.Join(modDir, "benchall.env"), line)
		}
		env = append(env, line)
	}
	return env, nil
}

// implBenchmarks returns the Benchmark functions of the _test.go files in
// dir whose bodies hold a string literal with "impl=": those that run
// sub-benchmarks side by side.
func implBenchmarks(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var names []string
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Benchmark") {
				continue
			}
			found := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "impl=") {
					found = true
				}
				return !found
			})
			if found {
				names = append(names, fn.Name.Name)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// cpuFromOutput returns the "cpu:" line of go test's benchmark output.
func cpuFromOutput(out []byte) string {
	for line := range strings.SplitSeq(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "cpu: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// codeVersion returns the commit the working tree is at, marked dirty if
// it has changes git tracks or untracked files it does not ignore.
func codeVersion() (string, error) {
	rev, err := output("git", "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", err
	}
	v := "commit " + strings.TrimSpace(rev)
	if st, err := output("git", "status", "--porcelain"); err == nil && strings.TrimSpace(st) != "" {
		v += " with uncommitted changes"
	}
	return v, nil
}

// span is the first and last of a set of times; the zero span holds none.
type span struct{ first, last time.Time }

func (s *span) add(t time.Time) {
	if s.first.IsZero() || t.Before(s.first) {
		s.first = t
	}
	if t.After(s.last) {
		s.last = t
	}
}

// dateLine returns the header's Date: when this run started and, if it
// reused tables of earlier runs, the span in which those finished, so that
// a file with one table rerun does not read as if every table ran then.
func dateLine(start time.Time, reused span) string {
	d := start.Format("2006-01-02 15:04 MST")
	if reused.first.IsZero() {
		return d
	}
	return fmt.Sprintf("%s; the tables reused from earlier runs (-reuse) finished between %s and %s (each table says when)",
		d, reused.first.Format("15:04"), reused.last.Format("15:04 MST"))
}

// sectionNote returns the line under a package's tables: the code they
// ran at when the file mixes versions (perSection), and which were reused
// from earlier runs and when they finished; empty if neither applies.
func sectionNote(code string, perSection bool, reused string) string {
	switch {
	case perSection && reused != "":
		return "Ran at " + code + "; reused from an earlier run: " + reused + "."
	case perSection:
		return "Ran at " + code + "."
	case reused != "":
		return "Reused from an earlier run: " + reused + "."
	}
	return ""
}

// codeLines returns the header's Code line for the code versions that the
// tables ran at, one per table, and whether each table must say its own.
// A file mixing versions is refused unless mixed is set: BENCHMARKS.md
// comes from one run at one commit.
func codeLines(codes []string, mixed bool) (header string, perSection bool, err error) {
	var distinct []string
	for _, c := range codes {
		for v := range strings.SplitSeq(c, ", ") {
			if !slices.Contains(distinct, v) {
				distinct = append(distinct, v)
			}
		}
	}
	switch {
	case len(distinct) == 0:
		return "none", false, nil
	case len(distinct) == 1:
		return "every table at " + distinct[0], false, nil
	case !mixed:
		return "", false, fmt.Errorf("the raw outputs come from %d versions of the code (%s): run again without -reuse, or pass -allow-mixed to write a file that says under each table which it ran at", len(distinct), strings.Join(distinct, "; "))
	}
	return "mixed, from " + strings.Join(distinct, "; ") + " (each table says which)", true, nil
}

// output runs name with args and returns its standard output.
func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// shellQuote quotes the arguments that need it for a shell.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ^$|()*?[]'\"\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
