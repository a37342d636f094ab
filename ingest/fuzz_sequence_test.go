package ingest_test

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// seqReader reads the choices of a sequence from the fuzzer's bytes, and
// zeros once they run out.
type seqReader struct{ b []byte }

func (r *seqReader) next() int {
	if len(r.b) == 0 {
		return 0
	}
	c := int(r.b[0])
	r.b = r.b[1:]
	return c
}

// seqNames are the series a sequence writes to, so that its requests
// meet the same series again: a name of seqNames, with a second label.
var seqNames = []string{"a", "b", "c", "d"}

// seqRequest reads one request of a sequence from r: its kind (1.0 or
// 2.0, whole, with an invalid series, or truncated into a malformed body)
// and its series, with samples at times around T that may go back and
// forth, exemplars and native histograms.
func seqRequest(tb testing.TB, r *seqReader, T int64) (difftest.Step, string) {
	kind := r.next() % 6
	var series []difftest.Series
	for range 1 + r.next()%4 {
		c := r.next()
		name := seqNames[c%len(seqNames)]
		ls := labels.FromStrings("__name__", name, "job", fmt.Sprint(c/len(seqNames)%2))
		// Five-minute steps from four hours back, past the head's lower
		// bound once it has samples, to over an hour ahead, past the
		// handlers' limit, and seconds between them.
		ts := T + int64(r.next()%64-48)*5*60_000 + int64(r.next()%4)*1000
		s := difftest.Series{Labels: ls}
		switch c / 8 % 4 {
		case 0, 1:
			s.Floats = []prompb.Sample{{Timestamp: ts, Value: float64(r.next())}}
		case 2:
			s.Hists, s.HistTs = []*histogram.Histogram{tsdbutil.GenerateTestHistogram(int64(r.next() % 4))}, []int64{ts}
		case 3:
			s.Floats = []prompb.Sample{{Timestamp: ts, Value: 1}, {Timestamp: ts + int64(r.next()%3-1)*1000, Value: 2}}
		}
		if r.next()%3 == 0 {
			s.Exemplars = []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprint(r.next())), Value: 1, Ts: ts + int64(r.next()%3-1)*1000, HasTs: true}}
		}
		series = append(series, s)
	}
	switch kind {
	case 0:
		return difftest.V1Step(tb, series), "v1"
	case 1:
		return difftest.V2Step(tb, series), "v2"
	case 2:
		// A series without __name__ among valid ones: skipped in 1.0, a
		// partial write in 2.0.
		bad := difftest.FloatSeries(T, 1, "job", "no-name")
		if r.next()%2 == 0 {
			return difftest.V1Step(tb, append(series, bad)), "v1 invalid"
		}
		return difftest.V2Step(tb, append([]difftest.Series{bad}, series...)), "v2 invalid"
	default:
		// Malformed: the request cut short, its first series whole.
		body, ct := difftest.EncodeV1(tb, series), difftest.ContentTypeV1
		if kind == 4 {
			body, ct = difftest.EncodeV2(tb, series), difftest.ContentTypeV2
		}
		cut := max(1, len(body)-1-r.next()%8)
		return difftest.Step{ContentType: ct, Body: difftest.Compress(body[:cut])}, "truncated " + ct
	}
}

// FuzzWriteSequence sends a sequence of requests that the input encodes
// (seqRequest: whole, partly invalid or malformed, in either version, over
// a few series whose samples go back and forth in time) to
// Prometheus's handler and to a WriteHandler, each over a TSDB of its own,
// and requires the same status and written counts for each request, and
// the same TSDBs after each. A refused request must leave nothing, as
// Prometheus's handler, which unmarshals a request whole before it appends,
// leaves nothing: the seed malformed-then-older is the two-step case that
// the receiver failed before it decoded whole requests first.
func FuzzWriteSequence(f *testing.F) {
	// The two-step case: a malformed request whose first series is
	// whole, at T, then a valid one three hours older.
	f.Add(seqSeed(seqReq{kind: 3, series: []seqSer{{name: 0, at: 48}, {name: 1, at: 48}}}, seqReq{kind: 0, series: []seqSer{{name: 2, at: 12}}}))
	// Out-of-order samples and exemplars, in both versions, and a series
	// seen in 1.0 then in 2.0.
	f.Add(seqSeed(seqReq{kind: 0, series: []seqSer{{name: 0, at: 48, ex: true}}}, seqReq{kind: 1, series: []seqSer{{name: 0, at: 47, ex: true}, {name: 1, at: 48}}}))
	// Histograms, two samples a series, an invalid series, too far ahead.
	f.Add(seqSeed(seqReq{kind: 1, series: []seqSer{{name: 16, at: 48}, {name: 24, at: 48}}}, seqReq{kind: 2, series: []seqSer{{name: 3, at: 63}}}, seqReq{kind: 4, series: []seqSer{{name: 16, at: 49}}}))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 512 {
			t.Skip("a sequence of at most a few dozen requests")
		}
		T := time.Now().Add(-time.Hour).UnixMilli()
		open := func() *tsdb.DB {
			db, cleanup, err := difftest.OpenTempDB(1000, true)
			if err != nil {
				t.Fatal(err)
			}
			db.DisableCompactions()
			t.Cleanup(func() {
				if err := cleanup(); err != nil {
					t.Error(err)
				}
			})
			return db
		}
		dbP, dbK := open(), open()
		hP := difftest.Oracle(dbP, difftest.Features{AppendMetadata: true})
		hK := ingest.NewWriteHandlerV2(nil, dbK, ingest.Options{AppendMetadata: true})
		r := &seqReader{b: in}
		for i := 0; len(r.b) > 0 && i < 32; i++ {
			s, what := seqRequest(t, r, T)
			wP, wK := httptest.NewRecorder(), httptest.NewRecorder()
			hP.ServeHTTP(wP, s.Request())
			hK.ServeHTTP(wK, s.Request())
			if wK.Code != wP.Code {
				t.Fatalf("request %d (%s): status %d, Prometheus %d\ningestkit:  %.500s\nprometheus: %.500s", i, what, wK.Code, wP.Code, wK.Body, wP.Body)
			}
			for _, h := range difftest.WrittenHeaders {
				if gk, gp := wK.Header().Get(h), wP.Header().Get(h); gk != gp {
					t.Fatalf("request %d (%s): %s = %q, Prometheus %q", i, what, h, gk, gp)
				}
			}
			if gk, gp := difftest.DumpDB(t, dbK), difftest.DumpDB(t, dbP); gk != gp {
				t.Fatalf("after request %d (%s, status %d): TSDBs differ:\n%s", i, what, wK.Code, difftest.LineDiff(gk, gp))
			}
			if gk, gp := difftest.DumpMetadata(t, dbK), difftest.DumpMetadata(t, dbP); gk != gp {
				t.Fatalf("after request %d (%s): metadata WAL records differ:\n%s", i, what, difftest.LineDiff(gk, gp))
			}
		}
	})
}

// seqReq and seqSer describe a request of a sequence for seqSeed.
type seqReq struct {
	kind   byte // seqRequest's kind
	series []seqSer
}

type seqSer struct {
	name byte // its name, and with name/8%4 its samples (see seqRequest)
	at   byte // minutes/5 + 48 from T
	ex   bool // with an exemplar
}

// seqSeed encodes reqs as seqRequest reads them.
func seqSeed(reqs ...seqReq) []byte {
	var b []byte
	for _, r := range reqs {
		b = append(b, r.kind, byte(len(r.series)-1))
		for _, s := range r.series {
			b = append(b, s.name, s.at, 0, 1)
			if s.ex {
				b = append(b, 0, 7, 1)
			} else {
				b = append(b, 1)
			}
		}
		if r.kind >= 2 {
			b = append(b, 0)
		}
	}
	return b
}
