package exemplars

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
)

// TestCollector checks that the collector reports the metrics of
// Prometheus's exemplar storage, with the same names, types, help texts
// and values after the same adds.
func TestCollector(t *testing.T) {
	ring := New(4, Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(ring, CollectorOptions{}))
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

// TestCollectorBesideTSDB registers a ring's Collector in the registry of
// a real tsdb.DB, as a fork that exports both does, and gathers it. The
// head registers Prometheus's exemplar metrics whether its exemplar
// storage is on or off, so Prometheus's names and those names with a
// constant label are refused; another prefix is not.
func TestCollectorBesideTSDB(t *testing.T) {
	for _, c := range []struct {
		name     string
		opts     CollectorOptions
		storage  bool // the TSDB's own exemplar storage on
		wantErr  bool
		wantName string // of the ring's appended counter
	}{
		{name: "Prometheus's names, TSDB exemplars off", wantErr: true},
		{name: "Prometheus's names, TSDB exemplars on", storage: true, wantErr: true},
		{name: "const label only", opts: CollectorOptions{ConstLabels: prometheus.Labels{"store": "ring"}}, wantErr: true},
		{name: "prefix, TSDB exemplars off", opts: CollectorOptions{Prefix: "ingestkit_exemplar_ring_"}, wantName: "ingestkit_exemplar_ring_exemplars_appended_total"},
		{name: "prefix, TSDB exemplars on", opts: CollectorOptions{Prefix: "ingestkit_exemplar_ring_"}, storage: true, wantName: "ingestkit_exemplar_ring_exemplars_appended_total"},
		{name: "prefix and const label", opts: CollectorOptions{Prefix: "fork_exemplar_", ConstLabels: prometheus.Labels{"tenant": "a"}}, wantName: "fork_exemplar_exemplars_appended_total"},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			opts := tsdb.DefaultOptions()
			opts.EnableExemplarStorage = c.storage
			opts.MaxExemplars = 10
			db, err := tsdb.Open(t.TempDir(), slog.New(slog.DiscardHandler), reg, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ring := New(10, Options{})
			if err := ring.AddExemplar(labels.FromStrings("__name__", "a"), exemplar.Exemplar{Value: 1, Ts: 1000}); err != nil {
				t.Fatal(err)
			}
			err = reg.Register(NewCollector(ring, c.opts))
			if c.wantErr {
				if err == nil {
					t.Fatalf("Register(NewCollector(ring, %+v)) beside a tsdb.DB = nil, want an error", c.opts)
				}
				return
			}
			if err != nil {
				t.Fatalf("Register(NewCollector(ring, %+v)) beside a tsdb.DB = %v, want nil", c.opts, err)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatalf("Gather() = %v, want nil", err)
			}
			got := map[string]float64{}
			for _, mf := range mfs {
				if strings.Contains(mf.GetName(), "exemplar") {
					m := mf.GetMetric()[0]
					got[mf.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
			if v, ok := got[c.wantName]; !ok || v != 1 {
				t.Errorf("Gather()[%s] = %v (present %v), want 1", c.wantName, v, ok)
			}
			if v, ok := got["prometheus_tsdb_exemplar_exemplars_appended_total"]; !ok || v != 0 {
				t.Errorf("Gather()[prometheus_tsdb_exemplar_exemplars_appended_total] = %v (present %v), want the head's 0", v, ok)
			}
			if len(got) != 12 {
				t.Errorf("Gather() = %d exemplar metric families, want 12 (the head's 6 and the ring's 6): %v", len(got), got)
			}
		})
	}
}

// TestCollectorPerTenant registers the Collectors of two rings that share
// a prefix and differ by a constant label in one registry.
func TestCollectorPerTenant(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, tenant := range []string{"a", "b"} {
		if err := reg.Register(NewCollector(New(10, Options{}), CollectorOptions{ConstLabels: prometheus.Labels{"tenant": tenant}})); err != nil {
			t.Fatalf("Register(tenant %s) = %v, want nil", tenant, err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() = %v, want nil", err)
	}
	if len(mfs) != 6 {
		t.Fatalf("Gather() = %d metric families, want 6", len(mfs))
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), DefaultCollectorPrefix) || len(mf.GetMetric()) != 2 {
			t.Errorf("%s: %d metrics, want 2 under prefix %s", mf.GetName(), len(mf.GetMetric()), DefaultCollectorPrefix)
		}
	}
}
