package decode

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

// decFloatRequest returns a request of n float series with typical labels,
// some sorted the wrong way, and a sample each.
func decFloatRequest(tb testing.TB, msg remoteapi.WriteMessageType, n int, unsorted bool) ([]byte, []labels.Labels) {
	tb.Helper()
	var lsets []labels.Labels
	for i := range n {
		ls := labels.FromStrings(
			"__name__", fmt.Sprintf("http_requests_%d_total", i%50),
			"cluster", "eu-west-1",
			"code", []string{"200", "404", "500"}[i%3],
			"container", "api",
			"instance", fmt.Sprintf("10.0.%d.%d:8080", i/256%256, i%256),
			"job", "kubernetes-pods",
			"method", []string{"GET", "POST"}[i%2],
			"namespace", "production",
			"pod", fmt.Sprintf("api-7d9f8b6c5-%05d", i),
			"le", "0.25",
		)
		lsets = append(lsets, ls)
	}
	order := func(ls labels.Labels, i int) []labels.Label {
		var out []labels.Label
		ls.Range(func(l labels.Label) { out = append(out, l) })
		if unsorted && i%7 == 0 {
			slices.Reverse(out)
		}
		return out
	}
	if msg == v1Msg {
		req := &prompb.WriteRequest{}
		for i, ls := range lsets {
			ts := prompb.TimeSeries{Samples: []prompb.Sample{{Value: float64(i), Timestamp: 1_700_000_000_000}}}
			for _, l := range order(ls, i) {
				ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		return decMarshal(tb, req), lsets
	}
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i, ls := range lsets {
		ts := writev2.TimeSeries{Samples: []writev2.Sample{{Value: float64(i), Timestamp: 1_700_000_000_000}}}
		for _, l := range order(ls, i) {
			ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(l.Name), st.Symbolize(l.Value))
		}
		ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER, HelpRef: st.Symbolize("Requests.")}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	return decMarshal(tb, req), lsets
}

func TestDecodeAllocs(t *testing.T) {
	if bytestr.Copies {
		t.Skip("the purego build copies every label")
	}
	for _, msg := range []remoteapi.WriteMessageType{v1Msg, v2Msg} {
		for _, unsorted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/unsorted=%v", msg, unsorted), func(t *testing.T) {
				buf, lsets := decFloatRequest(t, msg, 500, unsorted)
				var d Decoder
				decode := func() {
					if err := d.Reset(buf, msg); err != nil {
						t.Fatalf("Reset: %v", err)
					}
					i := 0
					for d.Next() {
						s := d.Series()
						_ = s.Hash()
						if !s.Equal(lsets[i]) {
							t.Fatalf("series %d: Equal(%s) = false", i, lsets[i])
						}
						if len(s.Samples()) != 1 {
							t.Fatalf("series %d: %d samples", i, len(s.Samples()))
						}
						_, _ = s.Metadata()
						i++
					}
					if d.Err() != nil || i != len(lsets) {
						t.Fatalf("decoded %d series, err %v", i, d.Err())
					}
				}
				decode() // warm up
				if got := testing.AllocsPerRun(20, decode); got != 0 {
					t.Fatalf("AllocsPerRun(Reset, Next, Hash, Equal, Samples over %d series) = %v, want 0", len(lsets), got)
				}
			})
		}
	}
}

// TestDecodeHistogramAllocs pins the allocations of a histogram: the
// histogram, its two span slices and two bucket slices, and the generated
// message's count and zero-count fields. Prometheus's own decoding makes
// the same, plus those of the series around it.
func TestDecodeHistogramAllocs(t *testing.T) {
	if bytestr.Copies {
		t.Skip("the purego build copies every label")
	}
	h := &histogram.Histogram{
		Schema: 1, Count: 10, ZeroCount: 1, Sum: 12.5,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{2, 1},
		NegativeSpans: []histogram.Span{{Offset: 1, Length: 2}}, NegativeBuckets: []int64{1, 1},
	}
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:     []prompb.Label{{Name: "__name__", Value: "latency_seconds"}},
		Histograms: []prompb.Histogram{prompb.FromIntHistogram(1000, h)},
	}}}
	buf := decMarshal(t, req)
	var d Decoder
	decode := func() {
		_ = d.Reset(buf, v1Msg)
		for d.Next() {
			_ = d.Series().Hash()
			if hs := d.Series().Histograms(); len(hs) != 1 || hs[0].H == nil {
				t.Fatalf("Histograms() = %v", hs)
			}
		}
	}
	decode()
	if got := testing.AllocsPerRun(100, decode); got != 7 {
		t.Fatalf("AllocsPerRun(one integer histogram) = %v, want 7", got)
	}
}

// TestDecodeHistogramsNotShared checks that the histograms of successive
// series, which the Decoder decodes into a reused message, share no memory.
func TestDecodeHistogramsNotShared(t *testing.T) {
	r := decRand(11)
	req := &prompb.WriteRequest{}
	for range 20 {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:     []prompb.Label{{Name: "__name__", Value: "h"}},
			Histograms: []prompb.Histogram{prompb.FromIntHistogram(1, decHistogram(r)), prompb.FromFloatHistogram(2, decFloatHistogram(r))},
		})
	}
	buf := decMarshal(t, req)
	var unmarshaled prompb.WriteRequest // gogo drops a -0 sum, so compare with what is on the wire
	if err := unmarshaled.Unmarshal(buf); err != nil {
		t.Fatal(err)
	}
	want := decWantV1(&unmarshaled)
	var d Decoder
	var kept []HistogramSample
	_ = d.Reset(buf, v1Msg)
	for d.Next() {
		kept = append(kept, d.Series().Histograms()...)
	}
	if err := d.Err(); err != nil {
		t.Fatalf("Err() = %v", err)
	}
	_ = d.Reset(decMarshal(t, decGenV1(r, 30)), v1Msg) // reuses the scratch message
	for d.Next() {
		_ = d.Series().Histograms()
	}
	i := 0
	for _, s := range want {
		for _, h := range s.hists {
			if got, want := decHistString(kept[i]), decHistString(h); got != want {
				t.Fatalf("histogram %d changed after later decoding: %s, want %s", i, got, want)
			}
			i++
		}
	}
}

// TestDecodeLabelsDoNotAlias checks that labels built by Series.Labels stay
// unchanged when the request buffer is reused.
func TestDecodeLabelsDoNotAlias(t *testing.T) {
	buf := decMarshal(t, decGenV1(decRand(5), 30))
	orig := bytes.Clone(buf)
	var d Decoder
	_ = d.Reset(buf, v1Msg)
	var kept []labels.Labels
	for d.Next() {
		kept = append(kept, d.Series().Labels())
	}
	for i := range buf {
		buf[i] = 0
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(orig); err != nil {
		t.Fatal(err)
	}
	for i, s := range decWantV1(&req) {
		if !labels.Equal(kept[i], s.lset) {
			t.Fatalf("series %d: Labels() = %s after the buffer changed, want %s", i, kept[i], s.lset)
		}
	}
}

// decLabelsBuild names the labels build this test binary uses, from the
// shape of labels.Labels.
func decLabelsBuild() string {
	t := reflect.TypeFor[labels.Labels]()
	switch {
	case t.Kind() == reflect.Slice:
		return "slicelabels"
	case t.NumField() == 1:
		return "stringlabels"
	default:
		return "dedupelabels"
	}
}

// TestDecodeLabelsAllocs pins the allocations documented for Labels and
// Exemplars: one per label set in stringlabels; in slicelabels with a
// warm interner, one (the slice).
func TestDecodeLabelsAllocs(t *testing.T) {
	if bytestr.Copies {
		t.Skip("the purego build copies every label")
	}
	build := decLabelsBuild()
	if build == "dedupelabels" {
		t.Skip("dedupelabels allocates as its symbol table grows")
	}
	ts := prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: "__name__", Value: "http_requests_total"}, {Name: "job", Value: "api"}},
		Samples: []prompb.Sample{{Value: 1, Timestamp: 1000}},
	}
	for i := range 3 {
		ts.Exemplars = append(ts.Exemplars, prompb.Exemplar{
			Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprintf("%032x", i)}},
			Value:  1, Timestamp: 1000,
		})
	}
	buf := decMarshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})
	var d Decoder
	d.SetInterner(&decMapInterner{m: map[string]string{}})
	decode := func(f func(s *Series)) func() {
		return func() {
			_ = d.Reset(buf, v1Msg)
			for d.Next() {
				f(d.Series())
			}
		}
	}
	// AllocsPerRun warms up with one run, which also warms the interner.
	labelsAllocs := testing.AllocsPerRun(10, decode(func(s *Series) { _ = s.Labels() }))
	exemplarAllocs := testing.AllocsPerRun(10, decode(func(s *Series) { _, _ = s.Exemplars(), s.Exemplars() }))
	if labelsAllocs != 1 || exemplarAllocs != 3 {
		t.Fatalf("%s: Labels() made %v allocations, Exemplars() %v; want 1 and 3", build, labelsAllocs, exemplarAllocs)
	}
}

// decExemplarRequest returns a request shaped as Prometheus's sender
// makes one with exemplars: n series, the even ones with a float sample,
// the odd ones with only an exemplar whose labels are a trace and a span
// ID.
func decExemplarRequest(tb testing.TB, msg remoteapi.WriteMessageType, n int) []byte {
	tb.Helper()
	st := writev2.NewSymbolTable()
	v1 := &prompb.WriteRequest{}
	v2 := &writev2.Request{}
	for i := range n {
		ls := labels.FromStrings("__name__", "http_request_duration_seconds_bucket", "job", "api", "le", fmt.Sprint(i))
		ex := labels.FromStrings("span_id", fmt.Sprintf("%016x", i), "trace_id", fmt.Sprintf("%032x", i))
		ts1 := prompb.TimeSeries{}
		ts2 := writev2.TimeSeries{}
		ls.Range(func(l labels.Label) {
			ts1.Labels = append(ts1.Labels, prompb.Label{Name: l.Name, Value: l.Value})
			ts2.LabelsRefs = append(ts2.LabelsRefs, st.Symbolize(l.Name), st.Symbolize(l.Value))
		})
		if i%2 == 0 {
			ts1.Samples = []prompb.Sample{{Value: float64(i), Timestamp: 1_700_000_000_000}}
			ts2.Samples = []writev2.Sample{{Value: float64(i), Timestamp: 1_700_000_000_000}}
		} else {
			e1 := prompb.Exemplar{Value: 0.5, Timestamp: 1_700_000_000_000}
			e2 := writev2.Exemplar{Value: 0.5, Timestamp: 1_700_000_000_000}
			ex.Range(func(l labels.Label) {
				e1.Labels = append(e1.Labels, prompb.Label{Name: l.Name, Value: l.Value})
				e2.LabelsRefs = append(e2.LabelsRefs, st.Symbolize(l.Name), st.Symbolize(l.Value))
			})
			ts1.Exemplars, ts2.Exemplars = []prompb.Exemplar{e1}, []writev2.Exemplar{e2}
		}
		v1.Timeseries = append(v1.Timeseries, ts1)
		v2.Timeseries = append(v2.Timeseries, ts2)
	}
	if msg == v1Msg {
		return decMarshal(tb, v1)
	}
	v2.Symbols = st.Symbols()
	return decMarshal(tb, v2)
}

// TestDecodeExemplarsAllocs pins that exemplars cost allocations only to a
// caller that asks for them: Next checks the exemplar messages without
// building anything, so a request with exemplars decodes with no allocation
// when Series.Exemplars is not called, and Exemplars makes its one
// allocation per exemplar (the labels, which the head's exemplar storage
// keeps) only for the series it is called for. examples/peers's
// impl=ingestkit-vmwork relies on the first.
func TestDecodeExemplarsAllocs(t *testing.T) {
	if bytestr.Copies {
		t.Skip("the purego build copies every label")
	}
	const n = 100
	for _, msg := range []remoteapi.WriteMessageType{v1Msg, v2Msg} {
		t.Run(string(msg), func(t *testing.T) {
			buf := decExemplarRequest(t, msg, n)
			var d Decoder
			d.SetInterner(&decMapInterner{m: map[string]string{}})
			var sink uint64
			decode := func(exemplarsEvery int) func() {
				return func() {
					if err := d.Reset(buf, msg); err != nil {
						t.Fatal(err)
					}
					for i := 0; d.Next(); i++ {
						s := d.Series()
						sink += s.Hash() + uint64(len(s.Samples())+len(s.Histograms()))
						if exemplarsEvery > 0 && i%exemplarsEvery == 1 {
							for _, e := range s.Exemplars() {
								sink += uint64(e.Ts)
							}
						}
					}
					if err := d.Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := testing.AllocsPerRun(10, decode(0)); got != 0 {
				t.Errorf("decoding without Exemplars made %v allocations, want 0", got)
			}
			if decLabelsBuild() == "dedupelabels" {
				return // its symbol table allocates as it grows
			}
			// Every fourth series, from the second: half of the exemplars.
			if got, want := testing.AllocsPerRun(10, decode(4)), float64(n/4); got != want {
				t.Errorf("decoding with Exemplars on %d of %d exemplar series made %v allocations, want %v", n/4, n/2, got, want)
			}
			_ = sink
		})
	}
}
