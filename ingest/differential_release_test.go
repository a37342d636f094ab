package ingest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// The cases where Prometheus's handler changed within the supported
// releases, and where the WriteHandler answers as the later ones.

// TestDifferentialMetadataRefs sends a 2.0 request whose second series has
// a metadata reference outside the symbols table. From v0.312.0 on,
// Prometheus's handler skips that series and answers 400 once the first is
// written; the WriteHandler does the same. Before, its handler panics on the
// reference (and leaves its appender open): the WriteHandler then still answers
// as the later releases, and only its answer is checked.
func TestDifferentialMetadataRefs(t *testing.T) {
	T := time.Now().Add(-time.Hour).UnixMilli()
	for _, ref := range []string{"help", "unit"} {
		t.Run(ref, func(t *testing.T) {
			st := writev2.NewSymbolTable()
			req := &writev2.Request{}
			for i, name := range []string{"a", "b"} {
				ts := writev2.TimeSeries{
					LabelsRefs: []uint32{st.Symbolize("__name__"), st.Symbolize(name)},
					Samples:    []writev2.Sample{{Timestamp: T, Value: float64(i)}},
					Metadata:   writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE},
				}
				if i == 1 && ref == "help" {
					ts.Metadata.HelpRef = 1000
				} else if i == 1 {
					ts.Metadata.UnitRef = 1000
				}
				req.Timeseries = append(req.Timeseries, ts)
			}
			req.Symbols = st.Symbols()
			b, err := req.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			s := difftest.Step{ContentType: difftest.ContentTypeV2, Body: difftest.Compress(b)}

			dbK := difftest.NewDB(t, 100_000, true)
			rK := httptest.NewRecorder()
			newImpl(t, "ingestkit", dbK, difftest.Features{}).ServeHTTP(rK, s.Request())
			if rK.Code != http.StatusBadRequest || !strings.Contains(rK.Body.String(), "metadata "+ref+"_ref") || rK.Header().Get(difftest.HeaderSamplesWritten) != "1" {
				t.Fatalf("status %d, samples written %q, body %q; want 400, 1 and the series' metadata refused", rK.Code, rK.Header().Get(difftest.HeaderSamplesWritten), rK.Body)
			}
			if !promcompat.MetadataRefsChecked() {
				t.Logf("Prometheus's handler of this release panics on the request; not compared")
				return
			}
			dbP := difftest.NewDB(t, 100_000, true)
			rP := httptest.NewRecorder()
			newImpl(t, "prometheus", dbP, difftest.Features{}).ServeHTTP(rP, s.Request())
			// The decoders word the error differently.
			if rK.Code != rP.Code || rK.Header().Get(difftest.HeaderSamplesWritten) != rP.Header().Get(difftest.HeaderSamplesWritten) {
				t.Fatalf("status %d %q, Prometheus %d %q", rK.Code, rK.Body, rP.Code, rP.Body)
			}
			if gotK, gotP := difftest.DumpDB(t, dbK), difftest.DumpDB(t, dbP); gotK != gotP {
				t.Fatalf("TSDB:\n%s\nPrometheus's:\n%s", gotK, gotP)
			}
		})
	}
}

// TestDifferentialOutOfOrderWindow sends samples inside and beyond the
// out-of-order time window of TSDBs that have one. A sample older than the
// window (storage.ErrTooOldSample) is a 400 in Prometheus's handler, a
// partial write in 2.0; but a too old 2.0 histogram sample was a 500 that
// rolled the request back before v0.311.0. The WriteHandler answers as the later releases: where the
// handler built is an earlier one, that step's answer is checked alone, and
// each such request holds only the too-old sample, so that both TSDBs still
// hold the same afterwards.
func TestDifferentialOutOfOrderWindow(t *testing.T) {
	T := time.Now().Add(-time.Hour).UnixMilli()
	window := 10 * time.Minute
	A := func(t int64) difftest.Series {
		return difftest.FloatSeries(t, float64(t%1000), "__name__", "a", "job", "x")
	}
	B := func(t int64) difftest.Series {
		return difftest.FloatSeries(t, float64(t%1000)+1, "__name__", "b", "job", "x")
	}
	H := func(t int64) difftest.Series {
		return difftest.Series{Labels: labels.FromStrings("__name__", "h"), Hists: []*histogram.Histogram{tsdbutil.GenerateTestHistogram(1)}, HistTs: []int64{t}}
	}
	old := T - window.Milliseconds() - 60_000
	steps := []difftest.Step{
		difftest.V1Step(t, []difftest.Series{A(T), B(T), H(T)}),
		difftest.V1Step(t, []difftest.Series{A(T - 60_000)}), // within the window
		difftest.V2Step(t, []difftest.Series{B(T - 120_000), H(T - 120_000)}),
		difftest.V1Step(t, []difftest.Series{A(old)}), // too old
		difftest.V2Step(t, []difftest.Series{B(old)}),
		difftest.V1Step(t, []difftest.Series{H(old)}),
		difftest.V2Step(t, []difftest.Series{H(old)}),
		difftest.V2Step(t, []difftest.Series{A(T + 1000), B(T - 30_000), H(T + 1000)}),
	}
	open := func() *tsdb.DB {
		opts := tsdb.DefaultOptions()
		opts.OutOfOrderTimeWindow = window.Milliseconds()
		return difftest.NewDBWith(t, opts, 100_000)
	}
	dbP, dbK := open(), open()
	hP, hK := newImpl(t, "prometheus", dbP, difftest.Features{}), newImpl(t, "ingestkit", dbK, difftest.Features{})
	for i, s := range steps {
		rP, rK := httptest.NewRecorder(), httptest.NewRecorder()
		hP.ServeHTTP(rP, s.Request())
		hK.ServeHTTP(rK, s.Request())
		if rP.Code == http.StatusInternalServerError && strings.Contains(rP.Body.String(), "too old sample") {
			t.Logf("step %d: Prometheus's handler of this release answers 500 to a too old sample", i)
			if rK.Code != http.StatusBadRequest || !strings.Contains(rK.Body.String(), "too old sample") {
				t.Fatalf("step %d: status %d %q, want 400 for a too old sample", i, rK.Code, rK.Body)
			}
			continue
		}
		if rK.Code != rP.Code || !difftest.SameErrors(rK.Body.String(), rP.Body.String()) {
			t.Fatalf("step %d: status %d %q, Prometheus %d %q", i, rK.Code, rK.Body, rP.Code, rP.Body)
		}
		if i >= 3 && i <= 6 && rK.Code != http.StatusBadRequest {
			t.Fatalf("step %d: status %d, want 400 for a sample older than the window", i, rK.Code)
		}
		for _, h := range difftest.WrittenHeaders {
			if gk, gp := rK.Header().Get(h), rP.Header().Get(h); gk != gp {
				t.Errorf("step %d: %s = %q, Prometheus %q", i, h, gk, gp)
			}
		}
	}
	if gotK, gotP := difftest.DumpDB(t, dbK), difftest.DumpDB(t, dbP); gotK != gotP {
		t.Fatalf("TSDB:\n%s\nPrometheus's:\n%s", gotK, gotP)
	}
}
