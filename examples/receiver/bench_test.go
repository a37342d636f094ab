package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/internal/promcompat"
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
	// tenants, if positive, sends request j to tenant benchTenant(j %
	// tenants) through a tenant router (see newBenchTarget); 0 sends every
	// request to one handler, without a tenant header.
	tenants int
	// reshard, if true, lists the series of every encoded op in an order
	// of its own (a 1.0 request's; see reshardOp).
	reshard bool
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
		{name: "resharded-5000", reqs: typical(5000), reshard: true},
		{name: "large-10MiB", reqs: func(testing.TB) []*request { return []*request{largeRequest(10, 10<<20)} }},
		{name: "captured-rw1", reqs: captured(1)},
		{name: "captured-rw2", reqs: captured(2), partial: true},
		{name: fmt.Sprintf("tenants-%dx%d", benchTenants, benchTenantSeries), reqs: tenantRequests, tenants: benchTenants},
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
	return newDB(tb, 100_000, false)
}

// newTestDB is newBenchDB, with the TSDB's metadata WAL records if
// metadataWAL.
func newTestDB(tb testing.TB, metadataWAL bool) *tsdb.DB {
	tb.Helper()
	return newDB(tb, 100_000, metadataWAL)
}

// newDB returns a TSDB in a test directory with room for maxExemplars in
// its exemplar storage (0: off), and its metadata WAL records if
// metadataWAL, closed when the test ends.
func newDB(tb testing.TB, maxExemplars int64, metadataWAL bool) *tsdb.DB {
	tb.Helper()
	db, cleanup, err := openDB(tb.TempDir(), maxExemplars, metadataWAL, nil)
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
	return newImplFeatures(tb, impl, db, features{})
}

// features are the switches of Prometheus's handler that the Receiver
// mirrors in its Options.
type features struct {
	appendMetadata, typeAndUnitLabels bool
}

func (f features) String() string {
	return fmt.Sprintf("metadata-wal-records=%v/type-and-unit-labels=%v", f.appendMetadata, f.typeAndUnitLabels)
}

// allFeatures are every combination of the features.
var allFeatures = []features{{}, {appendMetadata: true}, {typeAndUnitLabels: true}, {true, true}}

// newImplFeatures is newImpl with the features f.
func newImplFeatures(tb testing.TB, impl string, db *tsdb.DB, f features) http.Handler {
	tb.Helper()
	switch impl {
	case "prometheus":
		return promcompat.NewWriteHandler(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), db,
			remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, f.typeAndUnitLabels, f.appendMetadata)
	case "ingestkit":
		r, err := NewReceiver(db, Options{AppendMetadata: f.appendMetadata, EnableTypeAndUnitLabels: f.typeAndUnitLabels})
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

// reshardOp puts the series of each 1.0 request of reqs in an order drawn
// from rng, as a sender that reshards or restarts lists them in an order
// the receiver has not seen.
func reshardOp(reqs []*request, rng *rand.Rand) {
	for _, r := range reqs {
		if r.v1 != nil {
			ts := r.v1.Timeseries
			rng.Shuffle(len(ts), func(x, y int) { ts[x], ts[y] = ts[y], ts[x] })
		}
	}
}

// benchWriter is an http.ResponseWriter that a benchmark reuses from op
// to op, so that neither impl is charged for a new recorder per request.
type benchWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *benchWriter) Header() http.Header { return w.h }

func (w *benchWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(b)
}

func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *benchWriter) reset() {
	clear(w.h)
	w.code = 0
	w.body.Reset()
}

// benchBody is a request body that a benchmark points at new bytes.
type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

// benchRequest is a request reused from op to op: Prometheus's snappy
// middleware replaces the body and deletes Content-Encoding, so both are
// put back, from memory allocated once, before each op.
type benchRequest struct {
	r        *http.Request
	body     benchBody
	encoding []string
	w        benchWriter
}

func newBenchRequest(msg remoteapi.WriteMessageType) *benchRequest {
	br := &benchRequest{encoding: []string{"snappy"}, w: benchWriter{h: http.Header{}}}
	br.r = httptest.NewRequest(http.MethodPost, "/api/v1/write", nil)
	if msg == remoteapi.WriteV2MessageType {
		br.r.Header.Set("Content-Type", contentTypeV2)
		br.r.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	} else {
		br.r.Header.Set("Content-Type", contentTypeV1)
		br.r.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	return br
}

// serve sends body to h.
func (br *benchRequest) serve(h http.Handler, body []byte) {
	br.body.Reset(body)
	br.r.Body = &br.body
	br.r.ContentLength = int64(len(body))
	br.r.Header["Content-Encoding"] = br.encoding
	br.w.reset()
	h.ServeHTTP(&br.w, br.r)
}

// check fails unless the response has the status the case expects; with
// text, also unless the error is storage.ErrOutOfOrderSample's.
func (br *benchRequest) check(tb testing.TB, conflict, partial, text bool) {
	want := http.StatusNoContent
	if conflict || partial {
		want = http.StatusBadRequest
	}
	if br.w.code != want {
		tb.Fatalf("status %d, want %d: %.300s", br.w.code, want, br.w.body.String())
	}
	if conflict && text && !bytes.Contains(br.w.body.Bytes(), []byte("out of order sample")) {
		tb.Fatalf("conflict answered %.300q, want storage.ErrOutOfOrderSample's message", br.w.body.String())
	}
}

// benchQueueBytes bounds the bodies a status=ok benchmark encodes ahead.
const benchQueueBytes = 16 << 20

// BenchmarkReceive sends remote-write requests to Prometheus's
// remote.NewWriteHandler (impl=prometheus) and to the Receiver
// (impl=ingestkit), each over its own tsdb.DB with exemplar storage, in
// process: handler.ServeHTTP with a request and response writer reused
// from op to op, the same request bytes for both. One op is one request,
// or for captured-rw1 and captured-rw2 the four captured requests of that
// version in order. The series exist (steady state): before timing, one
// op's requests are written.
//
//   - status=ok: every op carries new samples, 100 ms after the previous
//     op's. The bodies are encoded ahead, up to 16 MiB of them at a time,
//     with the timer stopped.
//   - status=conflict: every op carries samples older than those written,
//     which both answer with 400 and storage.ErrOutOfOrderSample; nothing
//     is written, so the same bytes are sent again.
//
// Cases: typical-N is one 1.0 request (the message Prometheus sends by
// default) of N distinct series of some 250 bytes of labels, one sample
// each; large-10MiB is a 2.0 request of 10 series sharing a 10 MiB label
// value (1.0 would repeat it in each series, past the 32 MiB limit); the
// captured cases are testdata/remote-write, whose 2.0 requests both answer
// with a 400 partial write (see receiveCase.partial).
//
// resharded-5000 is typical-5000 as a sender that reshards or restarts
// sends it: every encoded op lists the series in an order of its own (a
// permutation drawn afresh for each, from a seeded source that both impls
// share), the warm-up request that creates them in yet another. With
// status=conflict the stale ops are encoded ahead like those of status=ok,
// each in its own order, all at the same old timestamp, so that no order
// repeats from op to op (up to the 16 MiB of bodies encoded at a time).
//
// tenants-100x500 is multi-tenant: one op is 100 requests of 500 typical
// series, one to each of 100 tenants in turn (the THANOS-TENANT header),
// through a router to one TSDB per tenant: the Receiver's own (tenants.go)
// for impl=ingestkit, and for impl=prometheus an equivalent router over
// one remote.NewWriteHandler per tenant (benchTenantRouter). The tenants'
// TSDBs are opened before timing. TestBenchTenantsIdentical checks that
// both leave the same data in every tenant.
func BenchmarkReceive(b *testing.B) {
	for _, c := range receiveCases() {
		reqs := c.reqs(b)
		for _, status := range []string{"ok", "conflict"} {
			for _, impl := range []string{"prometheus", "ingestkit"} {
				b.Run(fmt.Sprintf("case=%s/status=%s/impl=%s", c.name, status, impl), func(b *testing.B) {
					var rng *rand.Rand
					if c.reshard {
						rng = rand.New(rand.NewPCG(19, 5000))
					}
					benchReceive(b, impl, reqs, c.tenants, status == "conflict", c.partial, rng)
				})
			}
		}
	}
}

// benchReceive is one BenchmarkReceive sub-benchmark; rng, if not nil,
// reorders the series of every op it encodes (reshardOp).
func benchReceive(b *testing.B, impl string, reqs []*request, tenants int, conflict, partial bool, rng *rand.Rand) {
	encode := func(ts int64, reuse [][]byte) [][]byte {
		if rng != nil {
			reshardOp(reqs, rng)
		}
		return encodeOp(b, reqs, ts, reuse)
	}
	target := newBenchTarget(b, impl, tenants)
	h := target.h
	brs := newBenchRequests(reqs, tenants)
	serve := func(bodies [][]byte, text bool) {
		for j, br := range brs {
			br.serve(h, bodies[j])
			br.check(b, conflict, partial, text)
		}
	}
	base := time.Now().Add(-2 * time.Hour).UnixMilli()
	// Steady state: the series exist, with samples at first (later than
	// base, for conflicts).
	first := base
	if conflict {
		first = base + 10*benchOpStep
	}
	warm := encode(first, nil)
	for j, br := range brs {
		br.serve(h, warm[j])
		br.check(b, false, partial, false)
	}
	var stale [][]byte
	if conflict {
		stale = encode(base, nil)
		serve(stale, true)
	}
	opBytes := 0
	for _, w := range warm {
		opBytes += len(w)
	}
	queue := make([][][]byte, max(1, min(256, benchQueueBytes/max(opBytes, 1))))
	next := len(queue)
	ts := first

	b.ReportAllocs()
	for b.Loop() {
		if conflict && rng == nil {
			serve(stale, false)
			continue
		}
		if next == len(queue) {
			b.StopTimer()
			for k := range queue {
				if conflict {
					queue[k] = encode(base, queue[k])
					continue
				}
				ts += benchOpStep
				queue[k] = encode(ts, queue[k])
			}
			next = 0
			b.StartTimer()
		}
		serve(queue[next], false)
		next++
	}
	if tenants > 0 {
		// Outside the timer: every tenant holds its series, up to the
		// last op's samples.
		target.checkTenants(b, reqs, ts-int64(len(queue)-next)*benchOpStep)
	}
}
