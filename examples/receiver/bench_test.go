package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb"
)

// receiveCase is one BenchmarkReceive case: the requests one op sends, in
// order.
type receiveCase struct {
	name string
	reqs func(tb testing.TB) []*request
	// partial is true when Prometheus's own handler answers the case's
	// valid requests with a 400 partial write: the captured 2.0 requests
	// hold series of exemplars without samples, which Prometheus's sender
	// makes and both receivers reject.
	partial bool
}

func receiveCases() []receiveCase {
	typical := func(n int) func(testing.TB) []*request {
		return func(testing.TB) []*request {
			return []*request{typicalRequest(fmt.Sprintf("typical-%d", n), remoteapi.WriteV1MessageType, typicalSeries(n, ""))}
		}
	}
	captured := func(v int) func(testing.TB) []*request {
		return func(tb testing.TB) []*request {
			rs, err := capturedRequests(v)
			if err != nil {
				tb.Fatal(err)
			}
			return rs
		}
	}
	return []receiveCase{
		{name: "typical-500", reqs: typical(500)},
		{name: "typical-5000", reqs: typical(5000)},
		{name: "typical-20000", reqs: typical(20000)},
		{name: "large-10MiB", reqs: func(testing.TB) []*request { return []*request{largeRequest(10, 10<<20)} }},
		{name: "captured-rw1", reqs: captured(1)},
		{name: "captured-rw2", reqs: captured(2), partial: true},
	}
}

// Timestamps of the benchmark: ops go forward from benchBase in steps of
// benchOpStep, the requests of an op benchReqStep apart, so that samples
// stay in order and in the TSDB's window however many ops run.
const (
	benchOpStep  = int64(100)
	benchReqStep = int64(10)
)

// newBenchDB opens a tsdb.DB with exemplar storage in a temporary
// directory.
func newBenchDB(tb testing.TB) *tsdb.DB {
	tb.Helper()
	db, cleanup, err := openDB(tb.TempDir(), 100_000, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := cleanup(); err != nil {
			tb.Error(err)
		}
	})
	return db
}

// newImpl returns the handler named impl over db.
func newImpl(tb testing.TB, impl string, db *tsdb.DB) http.Handler {
	tb.Helper()
	switch impl {
	case "prometheus":
		return remote.NewWriteHandler(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), db,
			remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, false, false)
	case "ingestkit":
		r, err := NewReceiver(db, Options{})
		if err != nil {
			tb.Fatal(err)
		}
		return r
	}
	tb.Fatalf("unknown impl %q", impl)
	return nil
}

// encodeOp encodes the requests of one op at timestamp ts, into the
// memory of reuse if not nil.
func encodeOp(tb testing.TB, reqs []*request, ts int64, reuse [][]byte) [][]byte {
	tb.Helper()
	out := reuse
	if out == nil {
		out = make([][]byte, len(reqs))
	}
	for j, r := range reqs {
		b, err := r.appendBody(out[j], ts+int64(j)*benchReqStep)
		if err != nil {
			tb.Fatal(err)
		}
		out[j] = b
	}
	return out
}

// httpRequests makes the HTTP requests of one op, as Prometheus's client
// sends them.
func httpRequests(reqs []*request, bodies [][]byte) ([]*http.Request, []*httptest.ResponseRecorder) {
	hr := make([]*http.Request, len(bodies))
	rec := make([]*httptest.ResponseRecorder, len(bodies))
	for j, b := range bodies {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(b))
		r.Header.Set("Content-Encoding", "snappy")
		if reqs[j].msg == remoteapi.WriteV2MessageType {
			r.Header.Set("Content-Type", contentTypeV2)
			r.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
		} else {
			r.Header.Set("Content-Type", contentTypeV1)
			r.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		}
		hr[j], rec[j] = r, httptest.NewRecorder()
	}
	return hr, rec
}

// serveOp sends one op's requests to h and returns the responses.
func serveOp(h http.Handler, hr []*http.Request, rec []*httptest.ResponseRecorder) {
	for j := range hr {
		h.ServeHTTP(rec[j], hr[j])
	}
}

// checkOp fails unless every response has the status the case expects.
func checkOp(tb testing.TB, rec []*httptest.ResponseRecorder, conflict, partial bool) {
	tb.Helper()
	for j, r := range rec {
		want := http.StatusNoContent
		if conflict || partial {
			want = http.StatusBadRequest
		}
		if r.Code != want {
			tb.Fatalf("request %d: status %d, want %d: %.300s", j, r.Code, want, r.Body.String())
		}
		if conflict && !bytes.Contains(r.Body.Bytes(), []byte("out of order sample")) {
			tb.Fatalf("request %d: conflict answered %.300q, want storage.ErrOutOfOrderSample's message", j, r.Body.String())
		}
	}
}

// BenchmarkReceive sends remote-write requests to Prometheus's
// remote.NewWriteHandler (impl=prometheus) and to the Receiver
// (impl=ingestkit), each over its own tsdb.DB with exemplar storage, in
// process: handler.ServeHTTP with a recorder, the same request bytes for
// both. One op is one request, or for captured-rw1 and captured-rw2 the
// four captured requests of that version in order. The series exist
// (steady state): before timing, one op's requests are written.
//
//   - status=ok: every op carries new samples, 100 ms after the previous
//     op's; encoding them is not timed (b.StopTimer).
//   - status=conflict: every op carries samples older than those written,
//     which both answer with 400 and storage.ErrOutOfOrderSample; nothing
//     is written, so the same bytes are sent again.
//
// Cases: typical-N is one 1.0 request (the message Prometheus sends by
// default) of N distinct series of some 250 bytes of labels, one sample
// each; large-10MiB is a 2.0 request of 10 series sharing a 10 MiB label
// value (1.0 would repeat it in each series, past the 32 MiB limit); the
// captured cases are testdata/remote-write.
func BenchmarkReceive(b *testing.B) {
	for _, c := range receiveCases() {
		reqs := c.reqs(b)
		for _, status := range []string{"ok", "conflict"} {
			for _, impl := range []string{"prometheus", "ingestkit"} {
				b.Run(fmt.Sprintf("case=%s/status=%s/impl=%s", c.name, status, impl), func(b *testing.B) {
					db := newBenchDB(b)
					h := newImpl(b, impl, db)
					base := time.Now().Add(-2 * time.Hour).UnixMilli()
					conflict := status == "conflict"
					// Steady state: the series exist, with samples at base
					// (and, for conflicts, later ones).
					first := base
					if conflict {
						first = base + 10*benchOpStep
					}
					hr, rec := httpRequests(reqs, encodeOp(b, reqs, first, nil))
					serveOp(h, hr, rec)
					checkOp(b, rec, false, c.partial)
					var stale [][]byte
					if conflict {
						stale = encodeOp(b, reqs, base, nil)
					}
					b.ReportAllocs()
					ts := first
					var fresh [][]byte
					for b.Loop() {
						b.StopTimer()
						bodies := stale
						if !conflict {
							ts += benchOpStep
							fresh = encodeOp(b, reqs, ts, fresh)
							bodies = fresh
						}
						hr, rec := httpRequests(reqs, bodies)
						b.StartTimer()
						serveOp(h, hr, rec)
						b.StopTimer()
						checkOp(b, rec, conflict, c.partial)
						b.StartTimer()
					}
				})
			}
		}
	}
}
