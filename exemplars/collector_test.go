package exemplars

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
)

// TestCollector checks that the collector reports the metrics of
// Prometheus's exemplar storage, with the same names, types, help texts
// and values after the same adds.
func TestCollector(t *testing.T) {
	ring := New(4, Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(ring))
	up := newUpstream(t, 4, 0)
	for i, s := range []string{"a", "b", "a", "c", "a", "b"} {
		l := labels.FromStrings("service", s)
		e := exemplar.Exemplar{Value: float64(i), Ts: int64(1000 * i)}
		for _, add := range []func(labels.Labels, exemplar.Exemplar) error{ring.AddExemplar, up.AddExemplar} {
			if err := add(l, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := exemplar.Exemplar{Value: 9, Ts: 1}
	_, _ = ring.AddExemplar(labels.FromStrings("service", "a"), old), up.AddExemplar(labels.FromStrings("service", "a"), old)

	got, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want, err := up.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) != 6 {
		t.Fatalf("Gather() = %d metric families, want %d (upstream) = 6", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.GetName() != w.GetName() || g.GetHelp() != w.GetHelp() || g.GetType() != w.GetType() {
			t.Errorf("metric %d = %s (%v) %q, want %s (%v) %q", i, g.GetName(), g.GetType(), g.GetHelp(), w.GetName(), w.GetType(), w.GetHelp())
		}
		gv := g.GetMetric()[0].GetGauge().GetValue() + g.GetMetric()[0].GetCounter().GetValue()
		wv := w.GetMetric()[0].GetGauge().GetValue() + w.GetMetric()[0].GetCounter().GetValue()
		if gv != wv {
			t.Errorf("%s = %v, want %v", g.GetName(), gv, wv)
		}
	}
}
