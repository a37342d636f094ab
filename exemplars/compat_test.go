package exemplars

import (
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// The ring is a tsdb.ExemplarStorage, asserted here rather than in the
// package so that the package does not import tsdb.
var _ tsdb.ExemplarStorage = (*Ring)(nil)

// TestErrInvalidExemplar checks that ErrInvalidExemplar, and the error
// for repeated label names that wraps it, match Prometheus's
// tsdb.ErrInvalidExemplar under errors.Is, as the error of Prometheus's
// storage does, with the same text; and that they match nothing else.
func TestErrInvalidExemplar(t *testing.T) {
	dup := exemplar.Exemplar{Labels: labels.FromStrings("a", "1", "a", "2")}
	ring := New(3, Options{})
	up := newUpstream(t, 3, 0)
	got, want := ring.AddExemplar(seriesFoo, dup), up.AddExemplar(seriesFoo, dup)
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Fatalf("AddExemplar(repeated name) = %v, want %v", got, want)
	}
	if got, want := ErrInvalidExemplar.Error(), tsdb.ErrInvalidExemplar.Error(); got != want {
		t.Errorf("ErrInvalidExemplar.Error() = %q, want %q", got, want)
	}
	tests := []struct {
		name   string
		target error
		want   bool
	}{
		{"tsdb.ErrInvalidExemplar", tsdb.ErrInvalidExemplar, true},
		{"ErrInvalidExemplar", ErrInvalidExemplar, true},
		{"errors.New of the same text", errors.New("invalid exemplar"), true},
		{"tsdb.ErrInvalidSample", tsdb.ErrInvalidSample, false},
		{"storage.ErrOutOfOrderExemplar", storage.ErrOutOfOrderExemplar, false},
		{"another text", errors.New("invalid exemplars"), false},
		{"the same text wrapped", fmt.Errorf("invalid exemplar%w", errors.New("")), false},
		{"another type of the same text", textError("invalid exemplar"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if is := errors.Is(got, tt.target); is != tt.want {
				t.Errorf("errors.Is(%v, %v) = %v, want %v", got, tt.target, is, tt.want)
			}
			if is := errors.Is(ErrInvalidExemplar, tt.target); is != tt.want {
				t.Errorf("errors.Is(ErrInvalidExemplar, %v) = %v, want %v", tt.target, is, tt.want)
			}
		})
	}
}

// textError is an error of its text, of a type other than errors.New's.
type textError string

func (e textError) Error() string { return string(e) }

// TestConfigReload applies configurations to a ring as Resize's comment
// says a fork does, and to Prometheus's storage as tsdb.Head.ApplyConfig
// does (its own ApplyConfig, which resizes, after
// SetOutOfOrderTimeWindow with the window clamped at zero), and checks
// that both then hold, accept and reject the same exemplars.
func TestConfigReload(t *testing.T) {
	tests := []struct {
		name   string
		max    int64
		window *int64 // nil for no TSDB config
	}{
		{"grow, no tsdb config", 7, nil},
		{"shrink, window", 2, ptr(int64(100))},
		{"same size, window", 3, ptr(int64(100))},
		{"negative window", 5, ptr(int64(-5))},
		{"zero", 0, ptr(int64(100))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{}
			cfg.StorageConfig.ExemplarsConfig = &config.ExemplarsConfig{MaxExemplars: tt.max}
			if tt.window != nil {
				cfg.StorageConfig.TSDBConfig = &config.TSDBConfig{OutOfOrderTimeWindow: *tt.window}
			}
			ring, up := New(3, Options{}), newUpstream(t, 3, 0)
			for _, e := range []exemplar.Exemplar{ex(1, 100), ex(2, 200), ex(3, 300)} {
				if err, upErr := ring.AddExemplar(seriesFoo, e), up.AddExemplar(seriesFoo, e); err != nil || upErr != nil {
					t.Fatalf("AddExemplar(%v) = %v, upstream %v", e, err, upErr)
				}
			}

			// As Resize's comment has it.
			var window int64
			if tc := cfg.StorageConfig.TSDBConfig; tc != nil {
				window = max(tc.OutOfOrderTimeWindow, 0)
			}
			ring.SetOutOfOrderTimeWindow(window)
			ring.Resize(cfg.StorageConfig.ExemplarsConfig.MaxExemplars)

			// As tsdb.Head.ApplyConfig has it.
			upWindow := int64(0)
			if cfg.StorageConfig.TSDBConfig != nil {
				upWindow = cfg.StorageConfig.TSDBConfig.OutOfOrderTimeWindow
			}
			if upWindow < 0 {
				upWindow = 0
			}
			// A ring of size zero takes nothing, with a window or without.
			if !up.setWindow(upWindow) && upWindow > 0 && tt.max > 0 {
				t.Skip("Prometheus's storage has no out-of-order window before v0.310.0, for tsdb.Head.ApplyConfig to set: the ring takes late exemplars that it rejects (TestOlderPrometheus shows the difference)")
			}
			if err := up.ApplyConfig(cfg); err != nil {
				t.Fatal(err)
			}

			if got := ring.Stats().Size; got != int(tt.max) {
				t.Errorf("after the reload, Stats().Size = %d, want %d", got, tt.max)
			}
			for _, e := range []exemplar.Exemplar{ex(4, 250), ex(5, 400), ex(6, 350), ex(7, 290), ex(8, 500)} {
				err, upErr := ring.AddExemplar(seriesFoo, e), up.AddExemplar(seriesFoo, e)
				if !sameError(err, upErr) {
					t.Errorf("AddExemplar(%v) = %v, want %v", e, err, upErr)
				}
			}
			if got, want := selectFlat(t, ring), selectFlat(t, up); !reflect.DeepEqual(got, want) {
				t.Errorf("Select = %v, want %v", got, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestImports checks that the package compiles none of the packages it
// was made not to: tsdb and config, which a ring has no use for, and the
// cloud and Kubernetes clients that config's service discovery brings.
// The README gives the package counts.
func TestImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool:", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps . = %v", err)
	}
	banned := []string{
		"github.com/prometheus/prometheus/tsdb",
		"github.com/prometheus/prometheus/config",
		"github.com/aws/",
		"github.com/Azure/",
		"k8s.io/",
		"google.golang.org/api/",
		"go.opentelemetry.io/",
	}
	for pkg := range strings.FieldsSeq(string(out)) {
		for _, b := range banned {
			if pkg == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(pkg, b)) {
				t.Errorf("go list -deps . lists %s, want no %s", pkg, b)
			}
		}
	}
}
