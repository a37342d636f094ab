package difftest

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// Series is a series to send in a test: float samples, histogram samples
// (integer or float) and exemplars. It is not safe for concurrent use.
type Series struct {
	Labels    labels.Labels
	Floats    []prompb.Sample // Timestamp, Value
	Hists     []*histogram.Histogram
	FHists    []*histogram.FloatHistogram
	HistTs    []int64 // timestamps of Hists, then of FHists
	Exemplars []exemplar.Exemplar
	// Meta is the 2.0 metadata; nil means a gauge with help "a test
	// series".
	Meta *Meta
}

// Meta is the 2.0 metadata of a Series. It is a plain value, safe for
// concurrent use.
type Meta struct {
	Type       writev2.Metadata_MetricType
	Help, Unit string
}

// FloatSeries is a series of one float sample, with labels kv as
// labels.FromStrings takes them.
func FloatSeries(t int64, v float64, kv ...string) Series {
	return Series{Labels: labels.FromStrings(kv...), Floats: []prompb.Sample{{Timestamp: t, Value: v}}}
}

// EncodeV1 marshals series as a remote-write 1.0 request, uncompressed.
func EncodeV1(tb testing.TB, series []Series) []byte {
	tb.Helper()
	req := &prompb.WriteRequest{}
	for _, s := range series {
		var ts prompb.TimeSeries
		s.Labels.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
		ts.Samples = s.Floats
		for i, h := range s.Hists {
			ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(s.HistTs[i], h))
		}
		for i, h := range s.FHists {
			ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(s.HistTs[len(s.Hists)+i], h))
		}
		for _, e := range s.Exemplars {
			pe := prompb.Exemplar{Value: e.Value, Timestamp: e.Ts}
			e.Labels.Range(func(l labels.Label) { pe.Labels = append(pe.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
			ts.Exemplars = append(ts.Exemplars, pe)
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	b, err := req.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// EncodeV2 marshals series as a remote-write 2.0 request, uncompressed.
func EncodeV2(tb testing.TB, series []Series) []byte {
	tb.Helper()
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, s := range series {
		ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(s.Labels, nil)}
		for _, f := range s.Floats {
			ts.Samples = append(ts.Samples, writev2.Sample{Value: f.Value, Timestamp: f.Timestamp})
		}
		for i, h := range s.Hists {
			ts.Histograms = append(ts.Histograms, promcompat.FromIntHistogram(0, s.HistTs[i], h))
		}
		for i, h := range s.FHists {
			ts.Histograms = append(ts.Histograms, promcompat.FromFloatHistogram(0, s.HistTs[len(s.Hists)+i], h))
		}
		for _, e := range s.Exemplars {
			ts.Exemplars = append(ts.Exemplars, writev2.Exemplar{LabelsRefs: st.SymbolizeLabels(e.Labels, nil), Value: e.Value, Timestamp: e.Ts})
		}
		if m := s.Meta; m != nil {
			ts.Metadata = writev2.Metadata{Type: m.Type, HelpRef: st.Symbolize(m.Help), UnitRef: st.Symbolize(m.Unit)}
		} else {
			ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: st.Symbolize("a test series")}
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Compress snappy-compresses a request body as Prometheus's client does.
func Compress(b []byte) []byte { return snappy.Encode(nil, b) }

// E2ESeries returns, for protocol version v, floats series with
// exemplars, integer and float native histogram series, each with samples
// at ts, ts+1000, ...: 50 float series with 150 samples and 20 exemplars
// in all, and 10 histogram series with 30 samples.
func E2ESeries(v int, ts int64) []Series {
	var out []Series
	proto := "v" + strconv.Itoa(v)
	for i := range 50 {
		s := Series{Labels: labels.FromStrings("__name__", "e2e_requests_total", "proto", proto, "pod", fmt.Sprintf("pod-%d", i))}
		for j := range 3 {
			t := ts + int64(j)*1000
			s.Floats = append(s.Floats, prompb.Sample{Timestamp: t, Value: float64(i*10 + j)})
		}
		if i%5 == 0 {
			s.Exemplars = []exemplar.Exemplar{
				{Labels: labels.FromStrings("trace_id", fmt.Sprintf("%032x", i)), Value: float64(i), Ts: ts + 500, HasTs: true},
				{Labels: labels.FromStrings("trace_id", fmt.Sprintf("%032x", i+1000)), Value: float64(i) + 0.5, Ts: ts + 1500, HasTs: true},
			}
		}
		out = append(out, s)
	}
	for i := range 5 {
		s := Series{Labels: labels.FromStrings("__name__", "e2e_latency_seconds", "proto", proto, "kind", "int", "i", strconv.Itoa(i))}
		for j := range 3 {
			s.Hists = append(s.Hists, tsdbutil.GenerateTestHistogram(int64(i+j)))
			s.HistTs = append(s.HistTs, ts+int64(j)*1000)
		}
		out = append(out, s)
		f := Series{Labels: labels.FromStrings("__name__", "e2e_latency_seconds", "proto", proto, "kind", "float", "i", strconv.Itoa(i))}
		for j := range 3 {
			f.FHists = append(f.FHists, tsdbutil.GenerateTestFloatHistogram(int64(i+j)))
			f.HistTs = append(f.HistTs, ts+int64(j)*1000)
		}
		out = append(out, f)
	}
	return out
}
