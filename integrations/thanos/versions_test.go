package thanos

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// thanosVersion is the Thanos release this module requires, the newest the
// Go module proxy serves.
const thanosVersion = "v0.42.5"

// modulePath is a module path and version as the go command prints them.
type modulePath struct {
	Path    string
	Version string
}

// listedModule is one module of `go list -m -json all`.
type listedModule struct {
	modulePath
	Main    bool
	Replace *modulePath
}

// goMod is the part of `go mod edit -json` that the tests read.
type goMod struct {
	Go      string
	Require []struct {
		modulePath
		Indirect bool
	}
	Replace []struct {
		Old modulePath
		New modulePath
	}
}

// goCommand runs the go command in the module's directory and returns what
// it printed. go test puts the go command that runs it first in PATH.
func goCommand(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// buildList returns this module's build list, by module path.
func buildList(t *testing.T) map[string]listedModule {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(goCommand(t, "list", "-m", "-json", "all")))
	mods := make(map[string]listedModule)
	for {
		var m listedModule
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding go list -m -json all: %v", err)
		}
		mods[m.Path] = m
	}
	return mods
}

// readGoMod returns the requirements and replacements of a go.mod file;
// an empty file means this module's.
func readGoMod(t *testing.T, file string) goMod {
	t.Helper()
	args := []string{"mod", "edit", "-json"}
	if file != "" {
		args = append(args, file)
	}
	var m goMod
	if err := json.Unmarshal(goCommand(t, args...), &m); err != nil {
		t.Fatalf("decoding go %s: %v", strings.Join(args, " "), err)
	}
	return m
}

// thanosGoMod returns Thanos's own go.mod, from the module cache.
func thanosGoMod(t *testing.T) goMod {
	t.Helper()
	var dl struct{ GoMod, Error string }
	out := goCommand(t, "mod", "download", "-json", "github.com/thanos-io/thanos@"+thanosVersion)
	if err := json.Unmarshal(out, &dl); err != nil || dl.GoMod == "" {
		t.Fatalf("go mod download -json github.com/thanos-io/thanos@%s = %s (%v), want the path of its go.mod", thanosVersion, out, err)
	}
	return readGoMod(t, dl.GoMod)
}

// TestThanosVersionsUnchanged checks that adding ingestkit to Thanos's
// module graph changes none of Thanos's versions: every module Thanos's
// go.mod requires resolves here at exactly the version Thanos requires,
// and is replaced as Thanos's go.mod replaces it, so that a Thanos fork
// that imports ingestkit builds what Thanos builds.
func TestThanosVersionsUnchanged(t *testing.T) {
	thanos := thanosGoMod(t)
	mods := buildList(t)

	if got := mods["github.com/thanos-io/thanos"].Version; got != thanosVersion {
		t.Fatalf("github.com/thanos-io/thanos resolves to %q, want %s", got, thanosVersion)
	}
	// The versions the library's support depends on (FORKS.md), read from
	// Thanos's go.mod rather than assumed.
	for path, want := range map[string]string{
		"github.com/prometheus/prometheus": "v0.309.1",
		"go.opentelemetry.io/otel":         "v1.43.0",
	} {
		found := false
		for _, r := range thanos.Require {
			if r.Path == path {
				found = true
				if r.Version != want {
					t.Errorf("Thanos %s requires %s %s, want %s: read FORKS.md again", thanosVersion, path, r.Version, want)
				}
			}
		}
		if !found {
			t.Errorf("Thanos %s does not require %s", thanosVersion, path)
		}
	}

	for _, r := range thanos.Require {
		m, ok := mods[r.Path]
		switch {
		case !ok:
			t.Errorf("%s, required by Thanos at %s, is not in the build list", r.Path, r.Version)
		case m.Version != r.Version:
			t.Errorf("%s resolves to %s, want %s as Thanos requires", r.Path, m.Version, r.Version)
		}
	}
	if len(thanos.Require) < 100 {
		t.Errorf("Thanos's go.mod has %d requirements: read wrongly", len(thanos.Require))
	}

	// Thanos's replacements do not apply to a module that requires Thanos:
	// this module's go.mod repeats them, and must resolve as Thanos does.
	for _, r := range thanos.Replace {
		m, ok := mods[r.Old.Path]
		if !ok || (r.Old.Version != "" && r.Old.Version != m.Version) {
			continue // a replacement of a module, or version, not in the graph
		}
		if m.Replace == nil || *m.Replace != r.New {
			t.Errorf("%s %s is replaced by %v, want %v as Thanos replaces it", m.Path, m.Version, m.Replace, r.New)
		}
	}

	// And this module replaces nothing else but ingestkit itself.
	thanosReplaces := make(map[modulePath]modulePath)
	for _, r := range thanos.Replace {
		thanosReplaces[r.Old] = r.New
	}
	for _, r := range readGoMod(t, "").Replace {
		if r.Old.Path == "github.com/ingestkit/ingestkit" {
			continue
		}
		if got, ok := thanosReplaces[r.Old]; !ok || got != r.New {
			t.Errorf("go.mod replaces %v with %v, which Thanos %s does not", r.Old, r.New, thanosVersion)
		}
	}
}
