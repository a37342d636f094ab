// Package rwbench sends remote-write requests to http.Handlers in
// benchmarks, with nothing but the handler's own work timed: a request and
// a response writer reused from op to op, bodies encoded ahead with the
// timer stopped, and the loop of BenchmarkReceive, which package ingest
// runs over its WriteHandler and examples/receiver over its tenant router,
// each side by side with Prometheus's handler.
//
// Its types are not safe for concurrent use: each goroutine of a benchmark
// has its own. Serving a request through them allocates nothing once
// made, so that what a benchmark reports is the handler's.
package rwbench

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// Timestamps of the benchmarks: ops go forward in steps of OpStep, the
// requests of an op ReqStep apart, so that samples stay in order and in
// the TSDB's window however many ops run.
const (
	OpStep  = int64(100)
	ReqStep = int64(10)
)

// QueueBytes bounds the bodies a benchmark encodes ahead.
const QueueBytes = 16 << 20

// Writer is an http.ResponseWriter that a benchmark reuses from op to op,
// so that no handler is charged for a new recorder per request. It is not
// safe for concurrent use.
type Writer struct {
	Code int
	Body bytes.Buffer
	h    http.Header
}

// Header implements http.ResponseWriter.
func (w *Writer) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

// Write implements http.ResponseWriter.
func (w *Writer) Write(b []byte) (int, error) {
	if w.Code == 0 {
		w.Code = http.StatusOK
	}
	return w.Body.Write(b)
}

// WriteHeader implements http.ResponseWriter.
func (w *Writer) WriteHeader(code int) {
	if w.Code == 0 {
		w.Code = code
	}
}

// Reset forgets the response, keeping the memory.
func (w *Writer) Reset() {
	clear(w.h)
	w.Code = 0
	w.Body.Reset()
}

// body is a request body that a benchmark points at new bytes.
type body struct{ bytes.Reader }

func (*body) Close() error { return nil }

// Request is an HTTP request reused from op to op, with the Writer its
// responses go to. Prometheus's snappy middleware replaces the body and
// deletes Content-Encoding, so Serve puts both back, from memory allocated
// once. It is not safe for concurrent use.
type Request struct {
	R        *http.Request
	W        Writer
	body     body
	encoding []string
}

// NewRequest returns a Request of message type msg to /api/v1/write, with
// the headers of Prometheus's client.
func NewRequest(msg remoteapi.WriteMessageType) *Request {
	h := http.Header{}
	if msg == remoteapi.WriteV2MessageType {
		h.Set("Content-Type", difftest.ContentTypeV2)
		h.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	} else {
		h.Set("Content-Type", difftest.ContentTypeV1)
		h.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	h.Set("Content-Encoding", "snappy")
	return NewRequestHeader(h)
}

// NewRequestHeader returns a Request to /api/v1/write with the headers h,
// which it keeps, such as those of a captured request.
func NewRequestHeader(h http.Header) *Request {
	br := &Request{encoding: h.Values("Content-Encoding")}
	br.R = httptest.NewRequest(http.MethodPost, "/api/v1/write", nil)
	br.R.Header = h
	return br
}

// Serve sends body to h; the response is in br.W.
func (br *Request) Serve(h http.Handler, body []byte) {
	br.body.Reset(body)
	br.R.Body = &br.body
	br.R.ContentLength = int64(len(body))
	br.R.Header["Content-Encoding"] = br.encoding
	br.W.Reset()
	h.ServeHTTP(&br.W, br.R)
}

// Check fails unless the response has the status a BenchmarkReceive case
// expects: 400 for a conflict or a partial write, else 204; with text, a
// conflict's error must be storage.ErrOutOfOrderSample's.
func (br *Request) Check(tb testing.TB, conflict, partial, text bool) {
	tb.Helper()
	want := http.StatusNoContent
	if conflict || partial {
		want = http.StatusBadRequest
	}
	if br.W.Code != want {
		tb.Fatalf("status %d, want %d: %.300s", br.W.Code, want, br.W.Body.String())
	}
	if conflict && text && !bytes.Contains(br.W.Body.Bytes(), []byte("out of order sample")) {
		tb.Fatalf("conflict answered %.300q, want storage.ErrOutOfOrderSample's message", br.W.Body.String())
	}
}

// EncodeOp encodes the requests of one op at timestamp ts, request j at
// ts+j*ReqStep, into the memory of reuse if not nil.
func EncodeOp(tb testing.TB, reqs []*workload.Request, ts int64, reuse [][]byte) [][]byte {
	tb.Helper()
	out := reuse
	if out == nil {
		out = make([][]byte, len(reqs))
	}
	for j, r := range reqs {
		b, err := r.AppendBody(out[j], ts+int64(j)*ReqStep)
		if err != nil {
			tb.Fatal(err)
		}
		out[j] = b
	}
	return out
}

// Reshard puts the series of each 1.0 request of reqs in an order drawn
// from rng, as a sender that reshards or restarts lists them in an order
// the receiver has not seen.
func Reshard(reqs []*workload.Request, rng *rand.Rand) {
	for _, r := range reqs {
		if r.V1 != nil {
			ts := r.V1.Timeseries
			rng.Shuffle(len(ts), func(x, y int) { ts[x], ts[y] = ts[y], ts[x] })
		}
	}
}

// Receive is one BenchmarkReceive sub-benchmark: it sends the requests of
// reqs, one op after the other, to h, request j with brs[j], and returns
// the timestamp of the last op sent (its first request's). The series
// exist (steady state): before timing, one op's requests are written.
//
// Without conflict, every op carries new samples, OpStep after the
// previous op's, encoded ahead, up to QueueBytes of them at a time, with
// the timer stopped. With conflict, every op carries samples older than
// those written, which the handler answers with 400 and
// storage.ErrOutOfOrderSample; nothing is written, so the same bytes are
// sent again. partial says that the handler answers the valid requests
// with a 400 partial write. rng, if not nil, reorders the series of every
// op it encodes (Reshard); with conflict, the stale ops are then encoded
// ahead like the others, each in its own order, all at the same old
// timestamp.
func Receive(b *testing.B, h http.Handler, brs []*Request, reqs []*workload.Request, conflict, partial bool, rng *rand.Rand) (ts int64) {
	encode := func(ts int64, reuse [][]byte) [][]byte {
		if rng != nil {
			Reshard(reqs, rng)
		}
		return EncodeOp(b, reqs, ts, reuse)
	}
	serve := func(bodies [][]byte, text bool) {
		for j, br := range brs {
			br.Serve(h, bodies[j])
			br.Check(b, conflict, partial, text)
		}
	}
	base := time.Now().Add(-2 * time.Hour).UnixMilli()
	// Steady state: the series exist, with samples at first (later than
	// base, for conflicts).
	first := base
	if conflict {
		first = base + 10*OpStep
	}
	warm := encode(first, nil)
	for j, br := range brs {
		br.Serve(h, warm[j])
		br.Check(b, false, partial, false)
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
	queue := make([][][]byte, max(1, min(256, QueueBytes/max(opBytes, 1))))
	next := len(queue)
	ts = first

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
				ts += OpStep
				queue[k] = encode(ts, queue[k])
			}
			next = 0
			b.StartTimer()
		}
		serve(queue[next], false)
		next++
	}
	// The ops encoded but not sent.
	return ts - int64(len(queue)-next)*OpStep
}
