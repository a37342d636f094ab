package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// The content types of the two protocols as Prometheus's client sends
// them, and the response headers of remote write 2.0: the words of the
// protocol, which package ingest keeps unexported.
const (
	ContentTypeV1 = "application/x-protobuf"
	ContentTypeV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"

	HeaderSamplesWritten    = "X-Prometheus-Remote-Write-Samples-Written"
	HeaderHistogramsWritten = "X-Prometheus-Remote-Write-Histograms-Written"
	HeaderExemplarsWritten  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

// WrittenHeaders are the three 2.0 response headers.
var WrittenHeaders = []string{HeaderSamplesWritten, HeaderHistogramsWritten, HeaderExemplarsWritten}

// Step is one HTTP request of a differential case. It is a plain value,
// safe for concurrent use; Body is shared by the requests made of it.
type Step struct {
	Method      string // default POST
	ContentType string // default 1.0's; "-" for none
	Encoding    string // default snappy; "-" for none
	Body        []byte // sent as is
}

// V1Step is the 1.0 request of series, snappy-compressed.
func V1Step(tb testing.TB, series []Series) Step {
	tb.Helper()
	return Step{Body: Compress(EncodeV1(tb, series))}
}

// V2Step is the 2.0 request of series, snappy-compressed.
func V2Step(tb testing.TB, series []Series) Step {
	tb.Helper()
	return Step{ContentType: ContentTypeV2, Body: Compress(EncodeV2(tb, series))}
}

// Request returns a new HTTP request of the step, to /api/v1/write.
func (s Step) Request() *http.Request {
	m := s.Method
	if m == "" {
		m = http.MethodPost
	}
	r := httptest.NewRequest(m, "/api/v1/write", bytes.NewReader(s.Body))
	switch s.ContentType {
	case "":
		r.Header.Set("Content-Type", ContentTypeV1)
	case "-":
	default:
		r.Header.Set("Content-Type", s.ContentType)
	}
	switch s.Encoding {
	case "":
		r.Header.Set("Content-Encoding", "snappy")
	case "-":
	default:
		r.Header.Set("Content-Encoding", s.Encoding)
	}
	return r
}

// RawV1 marshals a 1.0 request whose series' labels are given as is,
// unsorted or repeated if so, one sample each at t.
func RawV1(tb testing.TB, t int64, series ...[]string) Step {
	tb.Helper()
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
	return Step{Body: Compress(b)}
}

// RawV2 is RawV1 for 2.0; refs, if not nil, replaces the label references
// of the series of the same index (to put them out of range).
func RawV2(tb testing.TB, t int64, refs map[int][]uint32, series ...[]string) Step {
	tb.Helper()
	return rawV2(tb, t, func(i int, ts *writev2.TimeSeries, _ *writev2.SymbolsTable) {
		if r, ok := refs[i]; ok {
			ts.LabelsRefs = r
		}
		ts.Samples = []writev2.Sample{{Timestamp: t, Value: 1}}
	}, series)
}

// RawV2Meta is RawV2 with the 2.0 metadata metas[i] on series i, which
// has labels as given, unsorted or repeated if so, and one sample at t of
// value i.
func RawV2Meta(tb testing.TB, t int64, metas []Meta, series ...[]string) Step {
	tb.Helper()
	return rawV2(tb, t, func(i int, ts *writev2.TimeSeries, st *writev2.SymbolsTable) {
		m := metas[i]
		ts.Metadata = writev2.Metadata{Type: m.Type, HelpRef: st.Symbolize(m.Help), UnitRef: st.Symbolize(m.Unit)}
		ts.Samples = []writev2.Sample{{Timestamp: t, Value: float64(i)}}
	}, series)
}

// rawV2 marshals a 2.0 request of series whose labels are given as is,
// each series finished by fill.
func rawV2(tb testing.TB, t int64, fill func(i int, ts *writev2.TimeSeries, st *writev2.SymbolsTable), series [][]string) Step {
	tb.Helper()
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i, kv := range series {
		var ts writev2.TimeSeries
		for j := 0; j < len(kv); j += 2 {
			ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(kv[j]), st.Symbolize(kv[j+1]))
		}
		fill(i, &ts, &st)
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return Step{ContentType: ContentTypeV2, Body: Compress(b)}
}

// SnappyHeader returns a snappy block whose header claims n decoded
// bytes.
func SnappyHeader(n uint64) []byte {
	b := binary.AppendUvarint(nil, n)
	return append(b, 0x00, 'x') // a literal of one byte, then nothing
}

// RawPost is the head of an HTTP/1.1 POST of a snappy body to
// /api/v1/write whose Content-Length is cl, to write on a connection.
func RawPost(cl int64, contentType string) []byte {
	return fmt.Appendf(nil, "POST /api/v1/write HTTP/1.1\r\nHost: receiver\r\nContent-Type: %s\r\nContent-Encoding: snappy\r\nContent-Length: %d\r\n\r\n", contentType, cl)
}
