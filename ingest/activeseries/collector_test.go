package activeseries

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
)

// gathered returns every metric in reg as `name{label="value",...} value`
// lines, sorted.
func gathered(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", mf.GetName(), strings.Join(ls, ","), m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return out
}

func TestCollector(t *testing.T) {
	api := CustomTracker{Name: "api", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "api")}}
	a, err := New(Options{Custom: []CustomTracker{api}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(a, CollectorOptions{Tenant: "team-a"}), NewCollector(b, CollectorOptions{Tenant: "team-b"}))

	up := labels.FromStrings("__name__", "up", "job", "api")
	lat := labels.FromStrings("__name__", "latency", "job", "api")
	other := labels.FromStrings("__name__", "up", "job", "db")
	a.Update(up.Hash(), up, 1)
	a.UpdateHistogram(lat.Hash(), lat, 12, 1)
	a.Update(other.Hash(), other, 1)
	b.Update(other.Hash(), other, 1)

	want := []string{
		`cortex_ingester_active_native_histogram_buckets_custom_tracker{name="api",user="team-a"} 12`,
		`cortex_ingester_active_native_histogram_buckets{user="team-a"} 12`,
		`cortex_ingester_active_native_histogram_buckets{user="team-b"} 0`,
		`cortex_ingester_active_native_histogram_series_custom_tracker{name="api",user="team-a"} 1`,
		`cortex_ingester_active_native_histogram_series{user="team-a"} 1`,
		`cortex_ingester_active_native_histogram_series{user="team-b"} 0`,
		`cortex_ingester_active_series_custom_tracker{name="api",user="team-a"} 2`,
		`cortex_ingester_active_series{user="team-a"} 3`,
		`cortex_ingester_active_series{user="team-b"} 1`,
	}
	if got := gathered(t, reg); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("gathered:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The histogram goes idle: the gauges follow the purge.
	a.Update(up.Hash(), up, 5)
	a.Update(other.Hash(), other, 5)
	a.Purge(3)
	got := strings.Join(gathered(t, reg), "\n")
	for _, line := range []string{
		`cortex_ingester_active_series{user="team-a"} 2`,
		`cortex_ingester_active_native_histogram_series{user="team-a"} 0`,
		`cortex_ingester_active_native_histogram_buckets_custom_tracker{name="api",user="team-a"} 0`,
		`cortex_ingester_active_series_custom_tracker{name="api",user="team-a"} 1`,
	} {
		if !strings.Contains(got, line) {
			t.Fatalf("after purge, gathered:\n%s\nwant a line %s", got, line)
		}
	}
}

// TestCollectorBesideTSDB registers a Collector in the registry of a real
// tsdb.DB, with the DB's own metrics, and gathers both.
func TestCollectorBesideTSDB(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	db, err := tsdb.Open(t.TempDir(), slog.New(slog.DiscardHandler), reg, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tr, err := New(Options{Custom: []CustomTracker{{Name: "all"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []CollectorOptions{
		{Tenant: "a", ConstLabels: prometheus.Labels{"zone": "z1"}},
		{Tenant: "b", ConstLabels: prometheus.Labels{"zone": "z1"}},
	} {
		if err := reg.Register(NewCollector(tr, opts)); err != nil {
			t.Fatalf("Register(NewCollector(%+v)) beside a tsdb.DB = %v, want no error", opts, err)
		}
	}
	ls := labels.FromStrings("__name__", "up")
	tr.Update(ls.Hash(), ls, 1)
	got := strings.Join(gathered(t, reg), "\n")
	for _, line := range []string{
		`cortex_ingester_active_series{user="a",zone="z1"} 1`,
		`cortex_ingester_active_series{user="b",zone="z1"} 1`,
		`cortex_ingester_active_series_custom_tracker{name="all",user="b",zone="z1"} 1`,
		`prometheus_tsdb_head_series{} 0`,
	} {
		if !strings.Contains(got, line) {
			t.Fatalf("gathered:\n%s\nwant a line %s", got, line)
		}
	}
}

// TestCollectorByLabel checks the gauge of the counts by label value.
func TestCollectorByLabel(t *testing.T) {
	tr, err := New(Options{ByLabel: "team", MaxLabelValues: 2})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(tr, CollectorOptions{Tenant: "t1"}))
	for i, team := range []string{"a", "b", "a", "c", ""} {
		ls := labels.FromStrings("i", fmt.Sprint(i), "team", team)
		tr.Update(ls.Hash(), ls, 1)
	}
	var got []string
	for _, line := range gathered(t, reg) {
		if strings.HasPrefix(line, "cortex_ingester_active_series_by_label_value") {
			got = append(got, line)
		}
	}
	want := []string{
		`cortex_ingester_active_series_by_label_value{label="team",user="t1",value="__overflow__"} 2`,
		`cortex_ingester_active_series_by_label_value{label="team",user="t1",value="a"} 2`,
		`cortex_ingester_active_series_by_label_value{label="team",user="t1",value="b"} 1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("gathered:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestNewCollectorNil checks that a collector of no tracker panics at once,
// with the package's name, rather than at its first Collect.
func TestNewCollectorNil(t *testing.T) {
	defer func() {
		if msg, _ := recover().(string); !strings.HasPrefix(msg, "activeseries: ") {
			t.Fatalf("NewCollector(nil) panicked with %q, want a panic starting %q", msg, "activeseries: ")
		}
	}()
	NewCollector(nil, CollectorOptions{})
}
