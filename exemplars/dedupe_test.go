//go:build dedupelabels

package exemplars

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
)

// TestResetSymbolTable checks that rebuilding the labels with a new
// symbol table keeps what Select returns and the series findable by hash.
func TestResetSymbolTable(t *testing.T) {
	ring := New(10, Options{})
	up := newUpstream(t, 10, 0)
	for i, s := range []string{"a", "b", "a"} {
		l := labels.FromStrings("service", s)
		e := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", s), Value: float64(i), Ts: int64(i)}
		if err := ring.AddExemplar(l, e); err != nil {
			t.Fatal(err)
		}
		if err := up.AddExemplar(l, e); err != nil {
			t.Fatal(err)
		}
	}
	st := labels.NewSymbolTable()
	ring.ResetSymbolTable(st)
	up.ResetSymbolTable(st)
	fail := func(format string, args ...any) { t.Helper(); t.Fatalf(format, args...) }
	compareSelect(t, ring, up, math.MinInt64, math.MaxInt64, [][]*labels.Matcher{{}}, fail)
	compareIterate(t, ring, up, fail)
	l := labels.FromStrings("service", "a")
	e := exemplar.Exemplar{Value: 9, Ts: 9}
	if err, upErr := ring.AddExemplar(l, e), up.AddExemplar(l, e); err != nil || upErr != nil {
		t.Fatal(err, upErr)
	}
	if got := ring.Stats().Series; got != 2 {
		t.Errorf("after ResetSymbolTable and an add, Stats().Series = %d, want 2", got)
	}
	compareSelect(t, ring, up, math.MinInt64, math.MaxInt64, [][]*labels.Matcher{{}}, fail)
}
