// The peers' hash is that of the default stringlabels build (see promHasher).

//go:build !slicelabels && !dedupelabels

package peers

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	vmprompb "github.com/VictoriaMetrics/VictoriaMetrics/lib/prompb"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// refSeries is what Prometheus's generated code makes of one series: the
// reference every impl is held to.
type refSeries struct {
	hash           uint64
	name           string
	samples, hists int
}

// reference decodes buf with Prometheus's generated code and returns, per
// series in request order, labels.Labels.Hash of what ToLabels builds.
func reference(t *testing.T, buf []byte, rw int) []refSeries {
	t.Helper()
	var out []refSeries
	sb := labels.NewScratchBuilder(0)
	if rw == 1 {
		var req prompb.WriteRequest
		if err := req.Unmarshal(buf); err != nil {
			t.Fatalf("prompb.WriteRequest.Unmarshal: %v", err)
		}
		for _, ts := range req.Timeseries {
			ls := ts.ToLabels(&sb, nil)
			out = append(out, refSeries{ls.Hash(), ls.Get(labels.MetricName), len(ts.Samples), len(ts.Histograms)})
		}
		return out
	}
	var req writev2.Request
	if err := req.Unmarshal(buf); err != nil {
		t.Fatalf("writev2.Request.Unmarshal: %v", err)
	}
	for _, ts := range req.Timeseries {
		ls, err := ts.ToLabels(&sb, req.Symbols)
		if err != nil {
			t.Fatalf("ToLabels: %v", err)
		}
		out = append(out, refSeries{ls.Hash(), ls.Get(labels.MetricName), len(ts.Samples), len(ts.Histograms)})
	}
	return out
}

// TestSameHashes decodes the synthetic requests of BenchmarkDecode (and
// their variant with unsorted labels) and every captured request with every
// impl, and checks that each yields, series by series in request order,
// Prometheus's labels.Labels.Hash of the series' labels: so the impls that
// BenchmarkDecode compares do the same job.
//
// VictoriaMetrics is the exception it allows for: it yields the float series
// of a request, and in place of a series of native histograms some float
// series of its own (_count, _sum, _bucket with vmrange). The test checks
// the float series against the reference, and that each series VM made up
// is named after the histogram's series and hashed as Prometheus would hash
// its labels.
func TestSameHashes(t *testing.T) {
	type request struct {
		name string
		buf  []byte
	}
	for _, rw := range []int{1, 2} {
		reqs := []request{
			{"series=5000", syntheticRequest(t, rw, 5000, false)},
			{"series=5000/unsorted", syntheticRequest(t, rw, 5000, true)},
		}
		for _, path := range capturedFiles(t, rw) {
			reqs = append(reqs, request{"case=" + filepath.Base(path), capturedBody(t, path)})
		}
		for _, r := range reqs {
			ref := reference(t, r.buf, rw)
			var want []uint64
			for _, s := range ref {
				want = append(want, s.hash)
			}
			for _, impl := range impls {
				if !slices.Contains(impl.rw, rw) {
					continue
				}
				t.Run(fmt.Sprintf("rw=%d/%s/impl=%s", rw, r.name, impl.name), func(t *testing.T) {
					d := impl.new()
					for pass := range 2 { // the second pass runs on reused state
						var got []uint64
						if _, err := d.decode(r.buf, rw, &got); err != nil {
							t.Fatalf("pass %d: decode: %v", pass, err)
						}
						if impl.name == "victoriametrics" {
							checkVM(t, r.buf, ref, got)
							continue
						}
						if len(got) != len(want) {
							t.Fatalf("pass %d: decode yielded %d series, want %d", pass, len(got), len(want))
						}
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("pass %d: series %d: hash = %#x, want %#x", pass, i, got[i], want[i])
							}
						}
					}
				})
			}
		}
	}
}

// checkVM checks the hashes got from VictoriaMetrics's decoder of the 1.0
// body buf against the reference ref, as TestSameHashes says.
func checkVM(t *testing.T, buf []byte, ref []refSeries, got []uint64) {
	t.Helper()
	var wru vmprompb.WriteRequestUnmarshaler
	wr, err := wru.UnmarshalProtobuf(buf)
	if err != nil {
		t.Fatalf("UnmarshalProtobuf: %v", err)
	}
	if len(wr.Timeseries) != len(got) {
		t.Fatalf("decode yielded %d series, UnmarshalProtobuf %d", len(got), len(wr.Timeseries))
	}
	promLabels := func(j int) labels.Labels {
		b := labels.NewScratchBuilder(0)
		for _, l := range wr.Timeseries[j].Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		return b.Labels()
	}
	j, floats, madeUp := 0, 0, 0
	for i, s := range ref {
		switch {
		case s.samples > 0:
			if j == len(got) {
				t.Fatalf("series %d: decode yielded no more series", i)
			}
			if got[j] != s.hash {
				t.Fatalf("series %d (%d of decode): hash = %#x, want %#x", i, j, got[j], s.hash)
			}
			j, floats = j+1, floats+1
		case s.hists > 0:
			for ; j < len(got); j++ {
				ls := promLabels(j)
				if n := ls.Get(labels.MetricName); n != s.name+"_count" && n != s.name+"_sum" && n != s.name+"_bucket" {
					break
				}
				if h := ls.Hash(); got[j] != h {
					t.Fatalf("series %d (%d of decode, %s): hash = %#x, want %#x", i, j, ls, got[j], h)
				}
				madeUp++
			}
		}
	}
	if j != len(got) {
		t.Fatalf("decode yielded %d series, the reference accounts for %d", len(got), j)
	}
	t.Logf("%d float series as the reference, %d series made of native histograms", floats, madeUp)
}

// TestPromHasher checks the hash that impl=victoriametrics and impl=mimir
// add against labels.Labels.Hash on the lengths where the stringlabels
// encoding of a length changes, and on labels out of order.
func TestPromHasher(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct {
		name string
		ls   []labels.Label
	}{
		{"empty", nil},
		{"one", []labels.Label{{Name: "__name__", Value: "up"}}},
		{"empty-value", []labels.Label{{Name: "a", Value: ""}, {Name: "b", Value: "1"}}},
		{"len=254", []labels.Label{{Name: "a", Value: long(254)}}},
		{"len=255", []labels.Label{{Name: "a", Value: long(255)}}},
		{"len=256", []labels.Label{{Name: long(256), Value: long(256)}}},
		{"len=70000", []labels.Label{{Name: "a", Value: long(70000)}}},
		{"unsorted", []labels.Label{{Name: "job", Value: "x"}, {Name: "__name__", Value: "up"}, {Name: "instance", Value: long(300)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := labels.New(c.ls...).Hash()
			var h promHasher
			h.add("stale", "from the previous series")
			h.reset()
			for _, l := range c.ls {
				h.add(l.Name, l.Value)
			}
			got, ok := h.sum()
			if !ok {
				got = h.sorted(slices.Clone(c.ls))
			}
			if got != want {
				t.Errorf("promHasher(%s) = %#x, want %#x", c.name, got, want)
			}
		})
	}
}
