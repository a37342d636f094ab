package main

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/ingestkit/ingestkit/exemplars"
)

// step is one HTTP request of a differential case.
type step struct {
	method      string // default POST
	contentType string // default 1.0's; "-" for none
	encoding    string // default snappy; "-" for none
	body        []byte // sent as is
}

func v1Step(tb testing.TB, series []testSeries) step {
	return step{body: compress(encodeV1(tb, series))}
}

func v2Step(tb testing.TB, series []testSeries) step {
	return step{contentType: contentTypeV2, body: compress(encodeV2(tb, series))}
}

func (s step) request() *http.Request {
	m := s.method
	if m == "" {
		m = http.MethodPost
	}
	r := httptest.NewRequest(m, "/api/v1/write", bytes.NewReader(s.body))
	switch s.contentType {
	case "":
		r.Header.Set("Content-Type", contentTypeV1)
	case "-":
	default:
		r.Header.Set("Content-Type", s.contentType)
	}
	switch s.encoding {
	case "":
		r.Header.Set("Content-Encoding", "snappy")
	case "-":
	default:
		r.Header.Set("Content-Encoding", s.encoding)
	}
	return r
}

// floatSeries is a series of one float sample.
func floatSeries(t int64, v float64, kv ...string) testSeries {
	return testSeries{ls: labels.FromStrings(kv...), floats: []prompb.Sample{{Timestamp: t, Value: v}}}
}

// rawV1 marshals a 1.0 request whose series' labels are given as is,
// unsorted or repeated if so, one sample each at t.
func rawV1(tb testing.TB, t int64, series ...[]string) step {
	req := &prompb.WriteRequest{}
	for _, kv := range series {
		var ts prompb.TimeSeries
		for i := 0; i < len(kv); i += 2 {
			ts.Labels = append(ts.Labels, prompb.Label{Name: kv[i], Value: kv[i+1]})
		}
		ts.Samples = []prompb.Sample{{Timestamp: t, Value: 1}}
		req.Timeseries = append(req.Timeseries, ts)
	}
	b, err := req.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return step{body: compress(b)}
}

// rawV2 is rawV1 for 2.0; refs, if not nil, replaces the label references
// of the series of the same index (to put them out of range).
func rawV2(tb testing.TB, t int64, refs map[int][]uint32, series ...[]string) step {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i, kv := range series {
		var ts writev2.TimeSeries
		for j := 0; j < len(kv); j += 2 {
			ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(kv[j]), st.Symbolize(kv[j+1]))
		}
		if r, ok := refs[i]; ok {
			ts.LabelsRefs = r
		}
		ts.Samples = []writev2.Sample{{Timestamp: t, Value: 1}}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return step{contentType: contentTypeV2, body: compress(b)}
}

// rawV2Meta is rawV2 with the 2.0 metadata metas[i] on series i, which
// has labels as given, unsorted or repeated if so, and one sample at t.
func rawV2Meta(tb testing.TB, t int64, metas []testMeta, series ...[]string) step {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i, kv := range series {
		var ts writev2.TimeSeries
		for j := 0; j < len(kv); j += 2 {
			ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(kv[j]), st.Symbolize(kv[j+1]))
		}
		m := metas[i]
		ts.Metadata = writev2.Metadata{Type: m.typ, HelpRef: st.Symbolize(m.help), UnitRef: st.Symbolize(m.unit)}
		ts.Samples = []writev2.Sample{{Timestamp: t, Value: float64(i)}}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return step{contentType: contentTypeV2, body: compress(b)}
}

// snappyHeader returns a snappy block whose header claims n decoded bytes.
func snappyHeader(n uint64) []byte {
	b := binary.AppendUvarint(nil, n)
	return append(b, 0x00, 'x') // a literal of one byte, then nothing
}

// diffCase is a differential case: the steps are sent in order to both
// receivers, each over its own fresh TSDB.
type diffCase struct {
	name  string
	steps []step
	// bodyDiffers lists the steps whose error text may differ: the
	// decoders word their errors differently (gogo-protobuf's and
	// ingestkit's, klauspost's s2 and golang/snappy).
	bodyDiffers []int
	// metadata is true when the case writes 2.0 series whose metadata
	// has a type or a unit, so that the features must show in the TSDB.
	metadata bool
}

func diffCases(tb testing.TB) []diffCase {
	now := time.Now()
	T := now.Add(-time.Hour).UnixMilli()
	future := now.Add(time.Hour).UnixMilli()
	badHist := tsdbutil.GenerateTestHistogram(1)
	badHist.Count = 1 // fewer than its buckets hold
	ex := func(ts int64, v float64) []exemplar.Exemplar {
		return []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprint(ts)), Value: v, Ts: ts, HasTs: true}}
	}
	withEx := func(s testSeries, e []exemplar.Exemplar) testSeries { s.exemplars = e; return s }
	A := func(t int64) testSeries { return floatSeries(t, float64(t%1000), "__name__", "a", "job", "x") }
	B := func(t int64) testSeries { return floatSeries(t, float64(t%1000)+1, "__name__", "b", "job", "x") }
	// In order: every request later than the one before. Overlapping:
	// each version's requests from T, so that the 2.0 ones, which carry
	// the same series as the 1.0 ones, conflict with them.
	var captured, overlapping []step
	for _, v := range []int{1, 2} {
		rs, err := capturedRequests(v)
		if err != nil {
			tb.Fatal(err)
		}
		for i, r := range rs {
			b, err := r.body(T + int64(i)*10)
			if err != nil {
				tb.Fatal(err)
			}
			s := step{body: b}
			if v == 2 {
				s.contentType = contentTypeV2
			}
			overlapping = append(overlapping, s)
			b, err = r.body(T + int64(len(captured))*10)
			if err != nil {
				tb.Fatal(err)
			}
			s.body = b
			captured = append(captured, s)
		}
	}
	// Exemplar-only series, as Prometheus's 1.0 sender sends exemplars
	// (in series entries of their own): the head refuses the exemplars
	// of a series it does not hold (storage.ErrNotFound).
	exOnly := func(t int64, ls labels.Labels) testSeries { return testSeries{ls: ls, exemplars: ex(t, 7)} }
	lsA := labels.FromStrings("__name__", "a", "job", "x")
	var capturedAlone []diffCase
	rs, err := capturedRequests(1)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range rs {
		b, err := r.body(T)
		if err != nil {
			tb.Fatal(err)
		}
		capturedAlone = append(capturedAlone, diffCase{name: "captured " + r.name + " alone", steps: []step{{body: b}}})
	}
	// Metadata: every type, with and without unit and help, as the
	// metadata-wal-records and type-and-unit-labels features see them.
	withMeta := func(s testSeries, typ writev2.Metadata_MetricType, unit, help string) testSeries {
		s.meta = &testMeta{typ: typ, unit: unit, help: help}
		return s
	}
	M := func(t int64, typ writev2.Metadata_MetricType, unit, help string) testSeries {
		return withMeta(floatSeries(t, float64(t%1000), "__name__", "m", "job", "x"), typ, unit, help)
	}
	var everyType []testSeries
	for typ := range writev2.Metadata_MetricType(9) { // 8 is out of range
		for j, unit := range []string{"", "seconds"} {
			ls := []string{"__name__", fmt.Sprintf("t%d_%d", typ, j), "job", "x"}
			everyType = append(everyType, withMeta(floatSeries(T, float64(typ), ls...), typ, unit, fmt.Sprintf("help of type %d", typ)))
		}
	}
	everyType = append(everyType, withMeta(testSeries{ls: labels.FromStrings("__name__", "h_seconds"), hists: []*histogram.Histogram{tsdbutil.GenerateTestHistogram(1)}, histTs: []int64{T}}, writev2.Metadata_METRIC_TYPE_HISTOGRAM, "seconds", "a histogram"))
	var unspecified, counter, counterUnit, gauge testMeta
	counter = testMeta{typ: writev2.Metadata_METRIC_TYPE_COUNTER, help: "a counter"}
	counterUnit = testMeta{typ: writev2.Metadata_METRIC_TYPE_COUNTER, help: "a counter", unit: "seconds"}
	gauge = testMeta{typ: writev2.Metadata_METRIC_TYPE_GAUGE}
	v1Meta := &prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "a"}}, Samples: []prompb.Sample{{Timestamp: T, Value: 1}}}},
		Metadata:   []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "a", Help: "a counter", Unit: "seconds"}},
	}
	v1MetaBody, err := v1Meta.Marshal()
	if err != nil {
		tb.Fatal(err)
	}

	valid := v1Step(tb, []testSeries{A(T)})
	huge := make([]byte, 33<<20)
	_, _ = rand.Read(huge)
	truncV1 := encodeV1(tb, e2eSeries(1, T))
	truncV2 := encodeV2(tb, e2eSeries(2, T))

	return append([]diffCase{
		{name: "v1 floats, histograms, exemplars", steps: []step{v1Step(tb, e2eSeries(1, T))}},
		{name: "v2 floats, histograms, exemplars", steps: []step{v2Step(tb, e2eSeries(2, T))}, metadata: true},
		{name: "captured rw1 and rw2", steps: captured, metadata: true},
		{name: "captured rw1 and rw2 overlapping", steps: overlapping, metadata: true},
		{name: "v2 metadata of every type", steps: []step{v2Step(tb, everyType)}, metadata: true},
		{name: "v2 metadata changes", steps: []step{
			v2Step(tb, []testSeries{M(T, 0, "", "")}),
			v2Step(tb, []testSeries{M(T+1000, writev2.Metadata_METRIC_TYPE_COUNTER, "", "first help")}),
			v2Step(tb, []testSeries{M(T+2000, writev2.Metadata_METRIC_TYPE_COUNTER, "", "second help")}),
			v2Step(tb, []testSeries{M(T+3000, writev2.Metadata_METRIC_TYPE_COUNTER, "", "second help")}),
			v2Step(tb, []testSeries{M(T+4000, writev2.Metadata_METRIC_TYPE_GAUGE, "bytes", "second help")}),
			v2Step(tb, []testSeries{M(T+5000, 0, "", "")}),
			v2Step(tb, []testSeries{M(T+6000, writev2.Metadata_METRIC_TYPE_COUNTER, "", "second help")}),
			v2Step(tb, []testSeries{M(T+7000, writev2.Metadata_METRIC_TYPE_GAUGE, "bytes", "second help")}),
		}, metadata: true},
		{name: "v2 type and unit labels in the request", steps: []step{rawV2Meta(tb, T,
			[]testMeta{counterUnit, unspecified, counter, gauge, counter, gauge, {unit: "bytes"}},
			[]string{"__name__", "a", "__type__", "gauge", "__unit__", "bytes"},
			[]string{"__name__", "b", "__type__", "gauge", "__unit__", "bytes"},
			[]string{"__name__", "c", "__unit__", "bytes"},
			[]string{"__name__", "d", "__type__", "counter", "__type__", "gauge"},
			[]string{"__type__", "counter"},
			[]string{"__name__", "f", "__unit__", "a", "__unit__", "b"},
			[]string{"__unit__", "seconds", "__name__", "g"},
		)}, metadata: true},
		{name: "v2 type labels make series collide", steps: []step{
			rawV2Meta(tb, T, []testMeta{unspecified, counter, counter}, []string{"__name__", "a", "__type__", "counter"}, []string{"__name__", "a"}, []string{"__name__", "a", "__type__", "gauge"}),
			rawV2Meta(tb, T+1000, []testMeta{counter, unspecified}, []string{"__name__", "a"}, []string{"__name__", "a", "__type__", "counter"}),
		}, metadata: true},
		{name: "v1 metadata ignored", steps: []step{{body: compress(v1MetaBody)}}},
		{name: "v1 invalid labels skipped", steps: []step{rawV1(tb, T, []string{"job", "no-name"}, []string{"__name__", "ok", "job", "x"}, []string{"__name__", "dup", "a", "1", "a", "2"}, []string{"__name__", "bad", "v", "\xff"})}},
		{name: "v2 invalid labels partial", steps: []step{rawV2(tb, T, nil, []string{"job", "no-name"}, []string{"__name__", "ok", "job", "x"}, []string{"__name__", "dup", "a", "1", "a", "2"}, []string{"__name__", "bad", "v", "\xff"})}},
		{name: "v2 series without samples", steps: []step{v2Step(tb, []testSeries{{ls: labels.FromStrings("__name__", "empty")}, A(T)})}},
		{name: "v1 out of order", steps: []step{v1Step(tb, []testSeries{A(T + 1000), B(T + 1000)}), v1Step(tb, []testSeries{B(T + 2000), A(T)})}},
		{name: "v2 out of order partial", steps: []step{v2Step(tb, []testSeries{A(T + 1000), B(T + 1000)}), v2Step(tb, []testSeries{A(T), B(T + 2000)})}},
		{name: "v1 duplicate timestamp", steps: []step{v1Step(tb, []testSeries{A(T)}), v1Step(tb, []testSeries{floatSeries(T, 42, "__name__", "a", "job", "x")})}},
		{name: "v2 duplicate timestamp", steps: []step{v2Step(tb, []testSeries{A(T)}), v2Step(tb, []testSeries{floatSeries(T, 42, "__name__", "a", "job", "x"), B(T)})}},
		{name: "v1 too far in the future", steps: []step{v1Step(tb, []testSeries{A(T), B(future)})}},
		{name: "v2 too far in the future", steps: []step{v2Step(tb, []testSeries{A(T), B(future)})}},
		{name: "v2 out of bounds", steps: []step{v2Step(tb, []testSeries{A(T)}), v2Step(tb, []testSeries{A(T + 1000), B(T - 4*3600*1000)})}},
		{name: "v1 invalid histogram", steps: []step{v1Step(tb, []testSeries{A(T), {ls: labels.FromStrings("__name__", "h"), hists: []*histogram.Histogram{badHist}, histTs: []int64{T}}})}},
		{name: "v2 invalid histogram", steps: []step{v2Step(tb, []testSeries{A(T), {ls: labels.FromStrings("__name__", "h"), hists: []*histogram.Histogram{badHist}, histTs: []int64{T}}})}},
		{name: "v1 exemplars out of order ignored", steps: []step{v1Step(tb, []testSeries{withEx(A(T), ex(T, 1))}), v1Step(tb, []testSeries{withEx(A(T+1000), ex(T-1000, 2))})}},
		{name: "v2 exemplar out of order partial", steps: []step{v2Step(tb, []testSeries{withEx(A(T), ex(T, 1))}), v2Step(tb, []testSeries{withEx(A(T+1000), ex(T-1000, 2)), B(T)})}},
		{name: "v1 exemplar-only series unknown", steps: []step{v1Step(tb, []testSeries{exOnly(T, lsA), B(T)})}},
		{name: "v1 exemplar-only series before its samples", steps: []step{v1Step(tb, []testSeries{exOnly(T, lsA), A(T)})}},
		{name: "v1 exemplar-only series after its samples", steps: []step{v1Step(tb, []testSeries{A(T), exOnly(T, lsA)})}},
		{name: "v1 exemplar-only series known from before", steps: []step{v1Step(tb, []testSeries{A(T)}), v1Step(tb, []testSeries{exOnly(T+1000, lsA)})}},
		{name: "v1 exemplars of a rolled back request", steps: []step{v1Step(tb, []testSeries{A(T + 1000)}), v1Step(tb, []testSeries{withEx(B(T), ex(T, 1)), A(T)})}},
		{name: "v2 exemplar-only series", steps: []step{v2Step(tb, []testSeries{A(T)}), v2Step(tb, []testSeries{exOnly(T+1000, lsA), B(T)})}},
		{name: "v2 exemplar too far in the future", steps: []step{v2Step(tb, []testSeries{withEx(A(T), append(ex(T, 1), ex(future, 2)...))})}},
		// Where Prometheus's handler before v0.316.0 (one exemplar at a
		// time, in request order, a 1.0 series' before its histograms)
		// and from v0.316.0 on (sorted, after the histograms) part: the
		// Receiver follows the release it is built with (Txn).
		{name: "v1 exemplars out of order in one series", steps: []step{v1Step(tb, []testSeries{withEx(A(T), append(ex(T, 1), ex(T-500, 2)...))})}},
		{name: "v2 exemplars out of order in one series", steps: []step{v2Step(tb, []testSeries{withEx(A(T), append(ex(T, 1), ex(T-500, 2)...)), B(T)})}},
		{name: "v2 duplicate exemplars in one series", steps: []step{v2Step(tb, []testSeries{withEx(A(T), append(ex(T, 1), ex(T, 1)...))})}},
		{name: "v1 exemplars of a new histogram series", steps: []step{v1Step(tb, []testSeries{withEx(testSeries{ls: labels.FromStrings("__name__", "h"), hists: []*histogram.Histogram{tsdbutil.GenerateTestHistogram(1)}, histTs: []int64{T}}, ex(T, 3))})}},
		{name: "v2 exemplars of a new histogram series", steps: []step{v2Step(tb, []testSeries{withEx(testSeries{ls: labels.FromStrings("__name__", "h"), hists: []*histogram.Histogram{tsdbutil.GenerateTestHistogram(1)}, histTs: []int64{T}}, ex(T, 3))})}},
		{name: "v2 exemplars of a series whose samples all fail", steps: []step{v2Step(tb, []testSeries{withEx(B(T-4*3600*1000), ex(T, 4)), A(T)})}},
		{name: "v2 symbol reference out of range, last series", steps: []step{rawV2(tb, T, map[int][]uint32{1: {0, 1000}}, []string{"__name__", "a"}, []string{"__name__", "b"})}, bodyDiffers: []int{0}},
		{name: "v2 symbol reference out of range, middle series", steps: []step{rawV2(tb, T, map[int][]uint32{1: {0, 1000}}, []string{"__name__", "a"}, []string{"__name__", "b"}, []string{"__name__", "c"})}, bodyDiffers: []int{0}},
		{name: "v1 truncated protobuf", steps: []step{{body: compress(truncV1[:len(truncV1)/2])}}, bodyDiffers: []int{0}},
		{name: "v2 truncated protobuf", steps: []step{{contentType: contentTypeV2, body: compress(truncV2[:len(truncV2)-3])}}, bodyDiffers: []int{0}},
		{name: "garbage protobuf", steps: []step{{body: compress([]byte("\xff\xff\xff\xff garbage"))}}, bodyDiffers: []int{0}},
		{name: "corrupt snappy", steps: []step{{body: []byte("\x10not snappy at all")}}, bodyDiffers: []int{0}},
		{name: "snappy header claims 1 TiB", steps: []step{{body: snappyHeader(1 << 40)}}, bodyDiffers: []int{0}},
		{name: "body over 32 MiB", steps: []step{{body: huge}}},
		{name: "gzip encoding", steps: []step{{encoding: "gzip", body: valid.body}}},
		{name: "no encoding", steps: []step{{encoding: "-", body: valid.body}}},
		{name: "text/plain", steps: []step{{contentType: "text/plain", body: valid.body}}},
		{name: "unknown proto", steps: []step{{contentType: "application/x-protobuf;proto=foo.Bar", body: valid.body}}},
		{name: "no content type", steps: []step{{contentType: "-", body: valid.body}}},
		{name: "proto parameter after a space", steps: []step{{contentType: "application/x-protobuf; proto=io.prometheus.write.v2.Request", body: valid.body}}},
		{name: "v1 content type parameter", steps: []step{{contentType: "application/x-protobuf;proto=prometheus.WriteRequest", body: valid.body}}},
		{name: "GET", steps: []step{{method: http.MethodGet, body: valid.body}}},
		{name: "GET without body", steps: []step{{method: http.MethodGet}}, bodyDiffers: []int{0}},
	}, append(orderDiffCases(tb, T), capturedAlone...)...)
}

// TestDifferential sends the same requests to Prometheus's
// remote.NewWriteHandler and to the Receiver, each over its own tsdb.DB,
// and compares status codes, the 2.0 written headers, error messages and
// everything the two TSDBs hold afterwards.
//
// It does so once for each exemplar store of the receiver, the TSDB's own
// and an exemplars.Ring (then over a TSDB whose exemplar storage is off, as
// the command runs it), whose exemplars are compared with those of
// Prometheus's TSDB; and for every combination of the metadata-wal-records
// and type-and-unit-labels features, over TSDBs that keep metadata WAL
// records, whose records are compared too. The ring runs with the features
// all off and all on: they do not meet the exemplar path.
func TestDifferential(t *testing.T) {
	cases := diffCases(t)
	for _, store := range []string{"tsdb", "ring"} {
		for i, f := range allFeatures {
			if store == "ring" && i != 0 && i != len(allFeatures)-1 {
				continue
			}
			t.Run("exemplars="+store+"/"+f.String(), func(t *testing.T) {
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) { testDifferential(t, c, f, store) })
				}
			})
		}
	}
}

func testDifferential(t *testing.T, c diffCase, f features, store string) {
	dbP := newTestDB(t, true)
	hP := newImplFeatures(t, "prometheus", dbP, f)
	var dbK *tsdb.DB
	var exK storage.ExemplarQueryable
	opts := Options{AppendMetadata: f.appendMetadata, EnableTypeAndUnitLabels: f.typeAndUnitLabels}
	if store == "ring" {
		dbK = newDB(t, 0, true)
		ring := exemplars.New(100_000, exemplars.Options{})
		exK, opts.Exemplars = ring, RingExemplars{ring}
	} else {
		dbK = newTestDB(t, true)
		exK = dbK
	}
	hK, err := NewReceiver(dbK, opts)
	if err != nil {
		t.Fatal(err)
	}
	wrote := false
	for i, s := range c.steps {
		rP, rK := httptest.NewRecorder(), httptest.NewRecorder()
		hP.ServeHTTP(rP, s.request())
		hK.ServeHTTP(rK, s.request())
		if unlimitedOracle(t, s, rK) {
			continue
		}
		if rK.Code != rP.Code {
			t.Fatalf("step %d: status %d, Prometheus %d\ningestkit:  %.500s\nprometheus: %.500s", i, rK.Code, rP.Code, rK.Body, rP.Body)
		}
		wrote = wrote || rK.Code == http.StatusNoContent || rK.Header().Get(headerSamplesWritten) > "0"
		for _, h := range []string{headerSamplesWritten, headerHistogramsWritten, headerExemplarsWritten, "Content-Type"} {
			if gk, gp := rK.Header().Values(h), rP.Header().Values(h); strings.Join(gk, ",") != strings.Join(gp, ",") {
				t.Errorf("step %d: %s = %q, Prometheus %q", i, h, gk, gp)
			}
		}
		differs := false
		for _, j := range c.bodyDiffers {
			differs = differs || i == j
		}
		if !differs && !sameErrors(rK.Body.String(), rP.Body.String()) {
			t.Errorf("step %d: body\n%.1000s\nPrometheus:\n%.1000s", i, rK.Body, rP.Body)
		}
		if differs && (rK.Body.Len() == 0) != (rP.Body.Len() == 0) {
			t.Errorf("step %d: body %q, Prometheus %q", i, rK.Body, rP.Body)
		}
	}
	gotK, gotP := dumpStorage(t, dbK, exK), dumpDB(t, dbP)
	if wrote && gotK == "" {
		t.Errorf("a request succeeded but the TSDB is empty")
	}
	if gotK != gotP {
		t.Errorf("TSDB after the requests:\n%.3000s\nPrometheus's:\n%.3000s", gotK, gotP)
	}
	metaK, metaP := dumpMetadata(t, dbK), dumpMetadata(t, dbP)
	if metaK != metaP {
		t.Errorf("metadata WAL records:\n%s", lineDiff(metaK, metaP))
	}
	// That the features did something, or nothing.
	if c.metadata && f.appendMetadata != (metaK != "") {
		t.Errorf("metadata WAL records with %v:\n%.1000s", f, metaK)
	}
	if c.metadata && f.typeAndUnitLabels && !strings.Contains(gotK, "__type__=") {
		t.Errorf("TSDB with %v:\n%.1000s", f, gotK)
	}
}

// sameErrors reports whether the Receiver's error text k says what
// Prometheus's p says: the same, or, where the Receiver cut its list at
// maxReportedErrors, the same first lines and the count of the others.
func sameErrors(k, p string) bool {
	if k == p {
		return true
	}
	kl, pl := strings.Split(strings.TrimSuffix(k, "\n"), "\n"), strings.Split(strings.TrimSuffix(p, "\n"), "\n")
	if len(kl) != maxReportedErrors+1 || len(pl) <= maxReportedErrors {
		return false
	}
	return slices.Equal(kl[:maxReportedErrors], pl[:maxReportedErrors]) &&
		kl[maxReportedErrors] == fmt.Sprintf("(and %d more errors)", len(pl)-maxReportedErrors)
}
