package activeseries

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
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

func TestTrackerCollector(t *testing.T) {
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
	reg.MustRegister(NewCollector(a, "team-a"), NewCollector(b, "team-b"))

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
