package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/labelset"
	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// openRefusedDB returns a TSDB in a test directory, closed when the test
// ends, with its metrics in reg if not nil.
func openRefusedDB(t *testing.T, reg prometheus.Registerer) *tsdb.DB {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, reg, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// refusedBody returns a request of the given version whose series have
// one sample each at ts, snappy-encoded; truncated, its last series is cut
// short, so that the first ones decode and the request does not.
func refusedBody(t *testing.T, v2 bool, ts int64, truncated bool, names ...string) (body []byte, contentType string) {
	t.Helper()
	var b []byte
	var err error
	if v2 {
		st := writev2.NewSymbolTable()
		req := &writev2.Request{}
		for _, n := range names {
			req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
				LabelsRefs: []uint32{st.Symbolize("__name__"), st.Symbolize(n)},
				Samples:    []writev2.Sample{{Timestamp: ts, Value: 1}},
			})
		}
		req.Symbols = st.Symbols()
		b, err = req.Marshal()
		contentType = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
	} else {
		req := &prompb.WriteRequest{}
		for _, n := range names {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
				Labels:  []prompb.Label{{Name: "__name__", Value: n}},
				Samples: []prompb.Sample{{Timestamp: ts, Value: 1}},
			})
		}
		b, err = req.Marshal()
		contentType = "application/x-protobuf"
	}
	if err != nil {
		t.Fatal(err)
	}
	if truncated {
		b = b[:len(b)-3]
	}
	return snappy.Encode(nil, b), contentType
}

func postRefused(h http.Handler, body []byte, contentType string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	r.Header.Set("Content-Encoding", "snappy")
	r.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestMalformedLeavesNothing is the two-step case found by fuzzing
// sequences of requests: a request whose first series are valid and whose
// bytes turn malformed later is refused with 400 and leaves the head as it
// was, with no series and no time range, so that a valid request with
// older samples after it is written (204), as by Prometheus's handler,
// which unmarshals the whole request before its first append. The old
// receiver appended the first series before it met the bad bytes, and its
// rollback left the series and the head's time range, which then refused
// the older samples as out of bounds.
func TestMalformedLeavesNothing(t *testing.T) {
	now := time.Now()
	newer, older := now.Add(-time.Minute).UnixMilli(), now.Add(-3*time.Hour).UnixMilli()
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			dbK, dbP := openRefusedDB(t, nil), openRefusedDB(t, nil)
			hK := ingest.NewWriteHandlerV2(nil, dbK, ingest.Options{})
			hP := promcompat.NewWriteHandler(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), dbP,
				remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, false, false)
			bad, ct := refusedBody(t, v2, newer, true, "a", "b", "c")
			good, _ := refusedBody(t, v2, older, false, "d")
			for i, body := range [][]byte{bad, good} {
				wK, wP := postRefused(hK, body, ct), postRefused(hP, body, ct)
				want := []int{http.StatusBadRequest, http.StatusNoContent}[i]
				if wK.Code != want || wP.Code != want {
					t.Fatalf("step %d: status %d %q, Prometheus %d %q; want %d", i, wK.Code, wK.Body, wP.Code, wP.Body, want)
				}
				if i == 0 {
					if n := dbK.Head().NumSeries(); n != 0 {
						t.Fatalf("after the malformed request the head holds %d series, want 0", n)
					}
					if mint, maxt := dbK.Head().MinTime(), dbK.Head().MaxTime(); mint <= maxt {
						t.Fatalf("after the malformed request the head's time range is [%d, %d], want none", mint, maxt)
					}
				}
			}
			if n := dbK.Head().NumSeries(); n != 1 {
				t.Fatalf("the head holds %d series, want 1 (d)", n)
			}
		})
	}
}

// panicOn is a storage whose V1 appender panics when asked to append to
// a series named panic_me, as a bug or a limit of a storage behind the
// handler would: a stand-in for every panic a request can still meet once
// the handler refuses what Prometheus's labels builds cannot hold.
type panicOn struct{ db *tsdb.DB }

func (p *panicOn) Appender(ctx context.Context) storage.Appender {
	return panicAppender{p.db.Appender(ctx)}
}

type panicAppender struct{ storage.Appender }

func (a panicAppender) Append(ref storage.SeriesRef, ls labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if ls.Get("__name__") == "panic_me" {
		panic("panic_me")
	}
	return a.Appender.Append(ref, ls, t, v)
}

// TestPanicRollsBack serves requests whose appends panic, behind a real
// HTTP server whose recovery answers them by closing the connection, and
// checks that each panic rolled the request's transaction back: the head
// counts no active appender, and still compacts its data into a block.
// Without the rollback, each such request left an appender open, whose
// isolation kept the head from compacting for good.
func TestPanicRollsBack(t *testing.T) {
	reg := prometheus.NewRegistry()
	db := openRefusedDB(t, reg)
	h := ingest.NewWriteHandler(nil, &panicOn{db}, ingest.Options{})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = nil
	srv.Start()
	defer srv.Close()
	base := time.Now().Add(-9 * time.Hour).UnixMilli()
	post := func(ts int64, names ...string) error {
		body, ct := refusedBody(t, false, ts, false, names...)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", ct)
		resp, err := srv.Client().Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	for i := range 5 {
		if err := post(base+int64(i)*1000, "ok", "panic_me"); err == nil {
			t.Fatalf("request %d with a panicking series succeeded", i)
		}
	}
	if got := gaugeValue(t, reg, "prometheus_tsdb_head_active_appenders"); got != 0 {
		t.Fatalf("prometheus_tsdb_head_active_appenders = %v after the panics, want 0", got)
	}
	// Samples over more than one and a half of the head's 2 h chunk range,
	// which the head compacts into a block.
	for i := range 50 {
		if err := post(base+int64(i)*10*60*1000, "ok"); err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
	}
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(db.Blocks()); n == 0 {
		t.Fatal("the head did not compact into a block after the panics")
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestLabelTooLongForTheBuild sends a series with a label value longer
// than labels.Labels of the build holds (16 MiB in stringlabels, where
// Prometheus's labels.ScratchBuilder panics), next to a valid one: the
// handler refuses that series with 400 before any append, writes the
// other, and leaves no appender open. In the slicelabels and dedupelabels
// builds, which hold any length, the series is written.
func TestLabelTooLongForTheBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a request of 16 MiB")
	}
	long := strings.Repeat("x", min(labelset.MaxString+1, 17<<20))
	ts := time.Now().Add(-time.Minute).UnixMilli()
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			db := openRefusedDB(t, reg)
			h := ingest.NewWriteHandlerV2(nil, db, ingest.Options{MaxDecodedSize: 64 << 20, MaxBodySize: 64 << 20})
			var b []byte
			var err error
			ct := "application/x-protobuf"
			if v2 {
				st := writev2.NewSymbolTable()
				req := &writev2.Request{Timeseries: []writev2.TimeSeries{
					{LabelsRefs: []uint32{st.Symbolize("__name__"), st.Symbolize("ok")}, Samples: []writev2.Sample{{Timestamp: ts, Value: 1}}},
					{LabelsRefs: []uint32{st.Symbolize("__name__"), st.Symbolize("long"), st.Symbolize("v"), st.Symbolize(long)}, Samples: []writev2.Sample{{Timestamp: ts, Value: 1}}},
				}}
				req.Symbols = st.Symbols()
				b, err = req.Marshal()
				ct = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
			} else {
				req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
					{Labels: []prompb.Label{{Name: "__name__", Value: "ok"}}, Samples: []prompb.Sample{{Timestamp: ts, Value: 1}}},
					{Labels: []prompb.Label{{Name: "__name__", Value: "long"}, {Name: "v", Value: long}}, Samples: []prompb.Sample{{Timestamp: ts, Value: 1}}},
				}}
				b, err = req.Marshal()
			}
			if err != nil {
				t.Fatal(err)
			}
			w := postRefused(h, snappy.Encode(nil, b), ct)
			wantSeries := uint64(2)
			if labelset.MaxString < len(long) {
				wantSeries = 1
				if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "longer than the labels build holds") {
					t.Fatalf("status %d %.300q, want 400 refusing the long label", w.Code, w.Body)
				}
			} else if w.Code != http.StatusNoContent {
				t.Fatalf("status %d %.300q, want 204", w.Code, w.Body)
			}
			if n := db.Head().NumSeries(); n != wantSeries {
				t.Fatalf("the head holds %d series, want %d", n, wantSeries)
			}
			if got := gaugeValue(t, reg, "prometheus_tsdb_head_active_appenders"); got != 0 {
				t.Fatalf("prometheus_tsdb_head_active_appenders = %v, want 0", got)
			}
		})
	}
}
