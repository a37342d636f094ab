package difftest

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// Case is a differential case: the steps are sent in order to both
// handlers, each over its own fresh TSDB.
//
// A Case is a plain value, safe for concurrent use; its steps' bodies are
// shared by the requests made of them.
type Case struct {
	Name  string
	Steps []Step
	// BodyDiffers lists the steps whose error text may differ: the
	// decoders word their errors differently (gogo-protobuf's and
	// ingestkit's, klauspost's s2 and golang/snappy).
	BodyDiffers []int
	// Metadata is true when the case writes 2.0 series whose metadata
	// has a type or a unit, so that the features must show in the TSDB.
	Metadata bool
}

// Cases returns the differential cases of the write path: both
// protocols' floats, histograms, exemplars and metadata, the captured
// requests of testdata/remote-write, every kind of rejection and
// malformed body, refused headers and methods, and (orderCases) requests
// whose series are appended in an order other than the request's. Their
// samples are an hour old, so that each case writes into a fresh TSDB.
func Cases(tb testing.TB) []Case {
	now := time.Now()
	T := now.Add(-time.Hour).UnixMilli()
	future := now.Add(time.Hour).UnixMilli()
	badHist := tsdbutil.GenerateTestHistogram(1)
	badHist.Count = 1 // fewer than its buckets hold
	ex := func(ts int64, v float64) []exemplar.Exemplar {
		return []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprint(ts)), Value: v, Ts: ts, HasTs: true}}
	}
	withEx := func(s Series, e []exemplar.Exemplar) Series { s.Exemplars = e; return s }
	A := func(t int64) Series { return FloatSeries(t, float64(t%1000), "__name__", "a", "job", "x") }
	B := func(t int64) Series { return FloatSeries(t, float64(t%1000)+1, "__name__", "b", "job", "x") }
	// In order: every request later than the one before. Overlapping:
	// each version's requests from T, so that the 2.0 ones, which carry
	// the same series as the 1.0 ones, conflict with them.
	var captured, overlapping []Step
	for _, v := range []int{1, 2} {
		for i, r := range rwtest.Requests(tb, v) {
			b, err := r.Body(T + int64(i)*10)
			if err != nil {
				tb.Fatal(err)
			}
			s := Step{Body: b}
			if v == 2 {
				s.ContentType = ContentTypeV2
			}
			overlapping = append(overlapping, s)
			b, err = r.Body(T + int64(len(captured))*10)
			if err != nil {
				tb.Fatal(err)
			}
			s.Body = b
			captured = append(captured, s)
		}
	}
	// Exemplar-only series, as Prometheus's 1.0 sender sends exemplars
	// (in series entries of their own): the head refuses the exemplars
	// of a series it does not hold (storage.ErrNotFound).
	exOnly := func(t int64, ls labels.Labels) Series { return Series{Labels: ls, Exemplars: ex(t, 7)} }
	lsA := labels.FromStrings("__name__", "a", "job", "x")
	var capturedAlone []Case
	for _, r := range rwtest.Requests(tb, 1) {
		b, err := r.Body(T)
		if err != nil {
			tb.Fatal(err)
		}
		capturedAlone = append(capturedAlone, Case{Name: "captured " + r.Name + " alone", Steps: []Step{{Body: b}}})
	}
	// Metadata: every type, with and without unit and help, as the
	// metadata-wal-records and type-and-unit-labels features see them.
	withMeta := func(s Series, typ writev2.Metadata_MetricType, unit, help string) Series {
		s.Meta = &Meta{Type: typ, Unit: unit, Help: help}
		return s
	}
	M := func(t int64, typ writev2.Metadata_MetricType, unit, help string) Series {
		return withMeta(FloatSeries(t, float64(t%1000), "__name__", "m", "job", "x"), typ, unit, help)
	}
	var everyType []Series
	for typ := range writev2.Metadata_MetricType(9) { // 8 is out of range
		for j, unit := range []string{"", "seconds"} {
			ls := []string{"__name__", fmt.Sprintf("t%d_%d", typ, j), "job", "x"}
			everyType = append(everyType, withMeta(FloatSeries(T, float64(typ), ls...), typ, unit, fmt.Sprintf("help of type %d", typ)))
		}
	}
	everyType = append(everyType, withMeta(Series{Labels: labels.FromStrings("__name__", "h_seconds"), Hists: []*histogram.Histogram{tsdbutil.GenerateTestHistogram(1)}, HistTs: []int64{T}}, writev2.Metadata_METRIC_TYPE_HISTOGRAM, "seconds", "a histogram"))
	var unspecified, counter, counterUnit, gauge Meta
	counter = Meta{Type: writev2.Metadata_METRIC_TYPE_COUNTER, Help: "a counter"}
	counterUnit = Meta{Type: writev2.Metadata_METRIC_TYPE_COUNTER, Help: "a counter", Unit: "seconds"}
	gauge = Meta{Type: writev2.Metadata_METRIC_TYPE_GAUGE}
	v1Meta := &prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "a"}}, Samples: []prompb.Sample{{Timestamp: T, Value: 1}}}},
		Metadata:   []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "a", Help: "a counter", Unit: "seconds"}},
	}
	v1MetaBody, err := v1Meta.Marshal()
	if err != nil {
		tb.Fatal(err)
	}

	valid := V1Step(tb, []Series{A(T)})
	huge := make([]byte, 33<<20)
	_, _ = rand.Read(huge)
	truncV1 := EncodeV1(tb, E2ESeries(1, T))
	truncV2 := EncodeV2(tb, E2ESeries(2, T))

	return append([]Case{
		{Name: "v1 floats, histograms, exemplars", Steps: []Step{V1Step(tb, E2ESeries(1, T))}},
		{Name: "v2 floats, histograms, exemplars", Steps: []Step{V2Step(tb, E2ESeries(2, T))}, Metadata: true},
		{Name: "captured rw1 and rw2", Steps: captured, Metadata: true},
		{Name: "captured rw1 and rw2 overlapping", Steps: overlapping, Metadata: true},
		{Name: "v2 metadata of every type", Steps: []Step{V2Step(tb, everyType)}, Metadata: true},
		{Name: "v2 metadata changes", Steps: []Step{
			V2Step(tb, []Series{M(T, 0, "", "")}),
			V2Step(tb, []Series{M(T+1000, writev2.Metadata_METRIC_TYPE_COUNTER, "", "first help")}),
			V2Step(tb, []Series{M(T+2000, writev2.Metadata_METRIC_TYPE_COUNTER, "", "second help")}),
			V2Step(tb, []Series{M(T+3000, writev2.Metadata_METRIC_TYPE_COUNTER, "", "second help")}),
			V2Step(tb, []Series{M(T+4000, writev2.Metadata_METRIC_TYPE_GAUGE, "bytes", "second help")}),
			V2Step(tb, []Series{M(T+5000, 0, "", "")}),
			V2Step(tb, []Series{M(T+6000, writev2.Metadata_METRIC_TYPE_COUNTER, "", "second help")}),
			V2Step(tb, []Series{M(T+7000, writev2.Metadata_METRIC_TYPE_GAUGE, "bytes", "second help")}),
		}, Metadata: true},
		{Name: "v2 type and unit labels in the request", Steps: []Step{RawV2Meta(tb, T,
			[]Meta{counterUnit, unspecified, counter, gauge, counter, gauge, {Unit: "bytes"}},
			[]string{"__name__", "a", "__type__", "gauge", "__unit__", "bytes"},
			[]string{"__name__", "b", "__type__", "gauge", "__unit__", "bytes"},
			[]string{"__name__", "c", "__unit__", "bytes"},
			[]string{"__name__", "d", "__type__", "counter", "__type__", "gauge"},
			[]string{"__type__", "counter"},
			[]string{"__name__", "f", "__unit__", "a", "__unit__", "b"},
			[]string{"__unit__", "seconds", "__name__", "g"},
		)}, Metadata: true},
		{Name: "v2 type labels make series collide", Steps: []Step{
			RawV2Meta(tb, T, []Meta{unspecified, counter, counter}, []string{"__name__", "a", "__type__", "counter"}, []string{"__name__", "a"}, []string{"__name__", "a", "__type__", "gauge"}),
			RawV2Meta(tb, T+1000, []Meta{counter, unspecified}, []string{"__name__", "a"}, []string{"__name__", "a", "__type__", "counter"}),
		}, Metadata: true},
		{Name: "v1 metadata ignored", Steps: []Step{{Body: Compress(v1MetaBody)}}},
		{Name: "v1 invalid labels skipped", Steps: []Step{RawV1(tb, T, []string{"job", "no-name"}, []string{"__name__", "ok", "job", "x"}, []string{"__name__", "dup", "a", "1", "a", "2"}, []string{"__name__", "bad", "v", "\xff"})}},
		{Name: "v2 invalid labels partial", Steps: []Step{RawV2(tb, T, nil, []string{"job", "no-name"}, []string{"__name__", "ok", "job", "x"}, []string{"__name__", "dup", "a", "1", "a", "2"}, []string{"__name__", "bad", "v", "\xff"})}},
		{Name: "v2 series without samples", Steps: []Step{V2Step(tb, []Series{{Labels: labels.FromStrings("__name__", "empty")}, A(T)})}},
		{Name: "v1 out of order", Steps: []Step{V1Step(tb, []Series{A(T + 1000), B(T + 1000)}), V1Step(tb, []Series{B(T + 2000), A(T)})}},
		{Name: "v2 out of order partial", Steps: []Step{V2Step(tb, []Series{A(T + 1000), B(T + 1000)}), V2Step(tb, []Series{A(T), B(T + 2000)})}},
		{Name: "v1 duplicate timestamp", Steps: []Step{V1Step(tb, []Series{A(T)}), V1Step(tb, []Series{FloatSeries(T, 42, "__name__", "a", "job", "x")})}},
		{Name: "v2 duplicate timestamp", Steps: []Step{V2Step(tb, []Series{A(T)}), V2Step(tb, []Series{FloatSeries(T, 42, "__name__", "a", "job", "x"), B(T)})}},
		{Name: "v1 too far in the future", Steps: []Step{V1Step(tb, []Series{A(T), B(future)})}},
		{Name: "v2 too far in the future", Steps: []Step{V2Step(tb, []Series{A(T), B(future)})}},
		{Name: "v2 out of bounds", Steps: []Step{V2Step(tb, []Series{A(T)}), V2Step(tb, []Series{A(T + 1000), B(T - 4*3600*1000)})}},
		{Name: "v1 invalid histogram", Steps: []Step{V1Step(tb, []Series{A(T), {Labels: labels.FromStrings("__name__", "h"), Hists: []*histogram.Histogram{badHist}, HistTs: []int64{T}}})}},
		{Name: "v2 invalid histogram", Steps: []Step{V2Step(tb, []Series{A(T), {Labels: labels.FromStrings("__name__", "h"), Hists: []*histogram.Histogram{badHist}, HistTs: []int64{T}}})}},
		{Name: "v1 exemplars out of order ignored", Steps: []Step{V1Step(tb, []Series{withEx(A(T), ex(T, 1))}), V1Step(tb, []Series{withEx(A(T+1000), ex(T-1000, 2))})}},
		{Name: "v2 exemplar out of order partial", Steps: []Step{V2Step(tb, []Series{withEx(A(T), ex(T, 1))}), V2Step(tb, []Series{withEx(A(T+1000), ex(T-1000, 2)), B(T)})}},
		{Name: "v1 exemplar-only series unknown", Steps: []Step{V1Step(tb, []Series{exOnly(T, lsA), B(T)})}},
		{Name: "v1 exemplar-only series before its samples", Steps: []Step{V1Step(tb, []Series{exOnly(T, lsA), A(T)})}},
		{Name: "v1 exemplar-only series after its samples", Steps: []Step{V1Step(tb, []Series{A(T), exOnly(T, lsA)})}},
		{Name: "v1 exemplar-only series known from before", Steps: []Step{V1Step(tb, []Series{A(T)}), V1Step(tb, []Series{exOnly(T+1000, lsA)})}},
		{Name: "v1 exemplars of a rolled back request", Steps: []Step{V1Step(tb, []Series{A(T + 1000)}), V1Step(tb, []Series{withEx(B(T), ex(T, 1)), A(T)})}},
		{Name: "v2 exemplar-only series", Steps: []Step{V2Step(tb, []Series{A(T)}), V2Step(tb, []Series{exOnly(T+1000, lsA), B(T)})}},
		{Name: "v2 exemplar too far in the future", Steps: []Step{V2Step(tb, []Series{withEx(A(T), append(ex(T, 1), ex(future, 2)...))})}},
		// Where Prometheus's handler before v0.316.0 (one exemplar at a
		// time, in request order, a 1.0 series' before its histograms)
		// and from v0.316.0 on (sorted, after the histograms) part: the
		// WriteHandler follows the release it is built with (ingest.Txn).
		{Name: "v1 exemplars out of order in one series", Steps: []Step{V1Step(tb, []Series{withEx(A(T), append(ex(T, 1), ex(T-500, 2)...))})}},
		{Name: "v2 exemplars out of order in one series", Steps: []Step{V2Step(tb, []Series{withEx(A(T), append(ex(T, 1), ex(T-500, 2)...)), B(T)})}},
		{Name: "v2 duplicate exemplars in one series", Steps: []Step{V2Step(tb, []Series{withEx(A(T), append(ex(T, 1), ex(T, 1)...))})}},
		{Name: "v1 exemplars of a new histogram series", Steps: []Step{V1Step(tb, []Series{withEx(Series{Labels: labels.FromStrings("__name__", "h"), Hists: []*histogram.Histogram{tsdbutil.GenerateTestHistogram(1)}, HistTs: []int64{T}}, ex(T, 3))})}},
		{Name: "v2 exemplars of a new histogram series", Steps: []Step{V2Step(tb, []Series{withEx(Series{Labels: labels.FromStrings("__name__", "h"), Hists: []*histogram.Histogram{tsdbutil.GenerateTestHistogram(1)}, HistTs: []int64{T}}, ex(T, 3))})}},
		{Name: "v2 exemplars of a series whose samples all fail", Steps: []Step{V2Step(tb, []Series{withEx(B(T-4*3600*1000), ex(T, 4)), A(T)})}},
		{Name: "v2 symbol reference out of range, last series", Steps: []Step{RawV2(tb, T, map[int][]uint32{1: {0, 1000}}, []string{"__name__", "a"}, []string{"__name__", "b"})}, BodyDiffers: []int{0}},
		{Name: "v2 symbol reference out of range, middle series", Steps: []Step{RawV2(tb, T, map[int][]uint32{1: {0, 1000}}, []string{"__name__", "a"}, []string{"__name__", "b"}, []string{"__name__", "c"})}, BodyDiffers: []int{0}},
		{Name: "v1 truncated protobuf", Steps: []Step{{Body: Compress(truncV1[:len(truncV1)/2])}}, BodyDiffers: []int{0}},
		{Name: "v2 truncated protobuf", Steps: []Step{{ContentType: ContentTypeV2, Body: Compress(truncV2[:len(truncV2)-3])}}, BodyDiffers: []int{0}},
		{Name: "garbage protobuf", Steps: []Step{{Body: Compress([]byte("\xff\xff\xff\xff garbage"))}}, BodyDiffers: []int{0}},
		{Name: "corrupt snappy", Steps: []Step{{Body: []byte("\x10not snappy at all")}}, BodyDiffers: []int{0}},
		{Name: "snappy header claims 1 TiB", Steps: []Step{{Body: SnappyHeader(1 << 40)}}, BodyDiffers: []int{0}},
		{Name: "body over 32 MiB", Steps: []Step{{Body: huge}}},
		{Name: "gzip encoding", Steps: []Step{{Encoding: "gzip", Body: valid.Body}}},
		{Name: "no encoding", Steps: []Step{{Encoding: "-", Body: valid.Body}}},
		{Name: "text/plain", Steps: []Step{{ContentType: "text/plain", Body: valid.Body}}},
		{Name: "unknown proto", Steps: []Step{{ContentType: "application/x-protobuf;proto=foo.Bar", Body: valid.Body}}},
		{Name: "no content type", Steps: []Step{{ContentType: "-", Body: valid.Body}}},
		{Name: "proto parameter after a space", Steps: []Step{{ContentType: "application/x-protobuf; proto=io.prometheus.write.v2.Request", Body: valid.Body}}},
		{Name: "v1 content type parameter", Steps: []Step{{ContentType: "application/x-protobuf;proto=prometheus.WriteRequest", Body: valid.Body}}},
		{Name: "GET", Steps: []Step{{Method: http.MethodGet, Body: valid.Body}}},
		{Name: "GET without body", Steps: []Step{{Method: http.MethodGet}}, BodyDiffers: []int{0}},
	}, append(orderCases(tb, T), capturedAlone...)...)
}
