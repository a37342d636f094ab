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
	"github.com/grafana/mimir/pkg/mimirpb"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// refSeries is what Prometheus's generated code makes of one series: the
// reference every impl is held to.
type refSeries struct {
	hash                      uint64
	name                      string
	samples, hists, exemplars int
}

// refRequest is what Prometheus's generated code makes of one request: its
// series in request order, and its metadata (1.0: the request's, 2.0: one
// per series).
type refRequest struct {
	series   []refSeries
	metadata int
}

// reference decodes buf with Prometheus's generated code and returns, per
// series in request order, labels.Labels.Hash of what ToLabels builds and
// the series' counts of samples, histograms and exemplars.
func reference(t *testing.T, buf []byte, rw int) refRequest {
	t.Helper()
	var out refRequest
	sb := labels.NewScratchBuilder(0)
	if rw == 1 {
		var req prompb.WriteRequest
		if err := req.Unmarshal(buf); err != nil {
			t.Fatalf("prompb.WriteRequest.Unmarshal: %v", err)
		}
		for _, ts := range req.Timeseries {
			ls := ts.ToLabels(&sb, nil)
			out.series = append(out.series, refSeries{ls.Hash(), ls.Get(model.MetricNameLabel), len(ts.Samples), len(ts.Histograms), len(ts.Exemplars)})
		}
		out.metadata = len(req.Metadata)
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
		out.series = append(out.series, refSeries{ls.Hash(), ls.Get(model.MetricNameLabel), len(ts.Samples), len(ts.Histograms), len(ts.Exemplars)})
	}
	out.metadata = len(req.Timeseries)
	return out
}

// want returns the tally of an impl that sinks the series of r for which
// keep is true (nil: all of them), with their exemplars if exemplars, and
// metadata metadata.
func (r refRequest) want(keep func(refSeries) bool, exemplars bool, metadata int) tally {
	w := tally{hashes: []uint64{}, metadata: metadata}
	for _, s := range r.series {
		if keep != nil && !keep(s) {
			continue
		}
		w.hashes = append(w.hashes, s.hash)
		w.samples += s.samples
		w.histograms += s.hists
		if exemplars {
			w.exemplars += s.exemplars
		}
	}
	return w
}

// checkTally checks got against want: the hashes series by series, then the
// counts.
func checkTally(t *testing.T, pass int, got, want tally) {
	t.Helper()
	if len(got.hashes) != len(want.hashes) {
		t.Fatalf("pass %d: decode yielded %d series, want %d", pass, len(got.hashes), len(want.hashes))
	}
	for i := range got.hashes {
		if got.hashes[i] != want.hashes[i] {
			t.Fatalf("pass %d: series %d: hash = %#x, want %#x", pass, i, got.hashes[i], want.hashes[i])
		}
	}
	if got.samples != want.samples || got.histograms != want.histograms || got.exemplars != want.exemplars || got.metadata != want.metadata {
		got.hashes, want.hashes = nil, nil
		t.Fatalf("pass %d: decode sank %+v, want %+v", pass, got, want)
	}
}

// TestSameHashes decodes the synthetic requests of BenchmarkDecode (and
// their variant with unsorted labels) and every captured request with every
// impl, and checks that each yields, series by series in request order,
// Prometheus's labels.Labels.Hash of the series' labels, and sinks as many
// float samples, histogram samples, exemplars and metadata as the parts of
// the request it is meant to sink hold: so the impls that BenchmarkDecode
// compares do the same job.
//
// impl=prometheus, impl=ingestkit and impl=mimir sink every part. Metadata
// is where they differ: Prometheus and ingestkit sink the 2.0 metadata of
// each series and no 1.0 metadata (Prometheus's handler ignores it, and
// ingestkit's Decoder only checks it), while Mimir sinks what its Unmarshal
// makes, the 1.0 request's metadata or one per metric family of a 2.0
// request (mimirMetadata). impl=ingestkit-vmwork sinks the parts
// impl=victoriametrics sinks: the series with float samples or histograms,
// without exemplars. VictoriaMetrics itself is checked by checkVM.
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
			meta := 0 // the metadata Prometheus and ingestkit sink
			if rw == 2 {
				meta = ref.metadata
			}
			for _, impl := range impls {
				if !slices.Contains(impl.rw, rw) {
					continue
				}
				t.Run(fmt.Sprintf("rw=%d/%s/impl=%s", rw, r.name, impl.name), func(t *testing.T) {
					d := impl.new()
					for pass := range 2 { // the second pass runs on reused state
						var got tally
						if _, err := d.decode(r.buf, rw, &got); err != nil {
							t.Fatalf("pass %d: decode: %v", pass, err)
						}
						switch impl.name {
						case "victoriametrics":
							checkVM(t, r.buf, ref, got)
						case "ingestkit-vmwork":
							checkTally(t, pass, got, ref.want(vmYields, false, 0))
						case "mimir":
							checkTally(t, pass, got, ref.want(nil, true, mimirMetadata(t, r.buf, rw)))
						default:
							checkTally(t, pass, got, ref.want(nil, true, meta))
						}
					}
				})
			}
		}
	}
}

// vmYields reports whether VictoriaMetrics's unmarshaler yields series for
// s: float series for its samples or its histograms.
func vmYields(s refSeries) bool { return s.samples > 0 || s.hists > 0 }

// mimirMetadata returns the number of metadata Mimir's Unmarshal makes of
// the body buf: the 1.0 request's, or for 2.0 one per series that has
// metadata, as it converts them.
func mimirMetadata(t *testing.T, buf []byte, rw int) int {
	t.Helper()
	var req mimirpb.PreallocWriteRequest
	req.UnmarshalFromRW2 = rw == 2
	if err := req.Unmarshal(buf); err != nil {
		t.Fatalf("mimirpb Unmarshal: %v", err)
	}
	defer mimirpb.ReuseSlice(req.Timeseries)
	return len(req.Metadata)
}

// checkVM checks what VictoriaMetrics's decoder sank of the 1.0 body buf,
// got, against the reference ref. It yields the float series of a request,
// and in place of a series of native histograms some float series of its
// own (_count, _sum, _bucket with vmrange). checkVM checks the float series
// and their samples against the reference, that each series VM made up is
// named after the histogram's series and hashed as Prometheus would hash its
// labels, and that it sank no exemplars and no metadata.
func checkVM(t *testing.T, buf []byte, ref refRequest, got tally) {
	t.Helper()
	var wru vmprompb.WriteRequestUnmarshaler
	wr, err := wru.UnmarshalProtobuf(buf)
	if err != nil {
		t.Fatalf("UnmarshalProtobuf: %v", err)
	}
	if len(wr.Timeseries) != len(got.hashes) {
		t.Fatalf("decode yielded %d series, UnmarshalProtobuf %d", len(got.hashes), len(wr.Timeseries))
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
	floatSamples, wantSamples, madeUpSamples := 0, 0, 0
	for i, s := range ref.series {
		switch {
		case s.samples > 0:
			if j == len(got.hashes) {
				t.Fatalf("series %d: decode yielded no more series", i)
			}
			if got.hashes[j] != s.hash {
				t.Fatalf("series %d (%d of decode): hash = %#x, want %#x", i, j, got.hashes[j], s.hash)
			}
			floatSamples += len(wr.Timeseries[j].Samples)
			wantSamples += s.samples
			j, floats = j+1, floats+1
		case s.hists > 0:
			for ; j < len(got.hashes); j++ {
				ls := promLabels(j)
				if n := ls.Get(model.MetricNameLabel); n != s.name+"_count" && n != s.name+"_sum" && n != s.name+"_bucket" {
					break
				}
				if h := ls.Hash(); got.hashes[j] != h {
					t.Fatalf("series %d (%d of decode, %s): hash = %#x, want %#x", i, j, ls, got.hashes[j], h)
				}
				madeUpSamples += len(wr.Timeseries[j].Samples)
				madeUp++
			}
		}
	}
	if j != len(got.hashes) {
		t.Fatalf("decode yielded %d series, the reference accounts for %d", len(got.hashes), j)
	}
	if floatSamples != wantSamples {
		t.Fatalf("the float series have %d samples, want %d", floatSamples, wantSamples)
	}
	if want := (tally{samples: floatSamples + madeUpSamples}); got.samples != want.samples || got.histograms != 0 || got.exemplars != 0 || got.metadata != 0 {
		got.hashes = nil
		t.Fatalf("decode sank %+v, want %+v", got, want)
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
