package main

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/rwbench"
	"github.com/ingestkit/ingestkit/internal/rwtest"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// replayDirEnv names the capture directory (see -capture-dir) that
// BenchmarkReplay replays; go run ./internal/cmd/benchall -requests DIR sets
// it. Unset, it replays testdata/remote-write.
const replayDirEnv = "INGESTKIT_REPLAY_DIR"

// replayBack is how far before now a replay's first op is put: op k
// replays the traffic k times its time span later, so that a benchmark of
// many ops stays in the past, where the handlers take its samples.
const replayBack = 30 * 24 * time.Hour

// replayDir returns the directory BenchmarkReplay replays.
func replayDir(tb testing.TB) string {
	if dir := os.Getenv(replayDirEnv); dir != "" {
		return dir
	}
	return rwtest.Dir(tb)
}

// replayResult is what one handler answered to a replayed request.
type replayResult struct {
	code    int
	written [3]string // the 2.0 response headers
	body    string
}

// replayRequest returns the HTTP request of a captured one.
func replayRequest(c capturedRequest) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(c.body))
	req.Header = c.header.Clone()
	return req
}

// checkReplay sends the captured requests, in order, to Prometheus's
// remote.NewWriteHandler and to the WriteHandler, each over its own fresh
// tsdb.DB, as TestDifferential does, and fails unless both answer each
// request alike (status, 2.0 written headers, error text) and end with
// identical TSDBs: series, samples, histograms and exemplars. It returns
// the status of each request and the dump (difftest.DumpDB) of the TSDBs.
func checkReplay(tb testing.TB, reqs []capturedRequest) (codes []int, dump string) {
	tb.Helper()
	var results [2][]replayResult
	var dumps [2]string
	for i, impl := range []string{"prometheus", "ingestkit"} {
		db := newBenchDB(tb)
		h := newImpl(tb, impl, db)
		for _, c := range reqs {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, replayRequest(c))
			results[i] = append(results[i], replayResult{
				code:    w.Code,
				written: [3]string{w.Header().Get(difftest.HeaderSamplesWritten), w.Header().Get(difftest.HeaderHistogramsWritten), w.Header().Get(difftest.HeaderExemplarsWritten)},
				body:    w.Body.String(),
			})
		}
		dumps[i] = difftest.DumpDB(tb, db)
	}
	for j, c := range reqs {
		p, k := results[0][j], results[1][j]
		if k.code != p.code || k.written != p.written || !difftest.SameErrors(k.body, p.body) {
			tb.Errorf("%s: ingestkit answered %d, written %q: %.300s\nPrometheus %d, written %q: %.300s", c.name, k.code, k.written, k.body, p.code, p.written, p.body)
		}
		codes = append(codes, p.code)
	}
	if dumps[0] != dumps[1] {
		tb.Fatalf("after the replay of %d requests the TSDBs differ:\ningestkit's:\n%.3000s\nPrometheus's:\n%.3000s", len(reqs), dumps[1], dumps[0])
	}
	if tb.Failed() {
		tb.FailNow()
	}
	return codes, dumps[0]
}

// TestReplay replays testdata/remote-write, in its order of arrival,
// through checkReplay.
func TestReplay(t *testing.T) {
	reqs, err := readCaptureDir(rwtest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, dump := checkReplay(t, reqs); dump == "" {
		t.Error("the replay wrote nothing")
	}
}

// decodeCaptured decodes a captured request with Prometheus's generated
// protobufs, for a replay to change its timestamps.
func decodeCaptured(c capturedRequest) (*workload.Request, error) {
	pb, err := decodeCapturedBody(c.body)
	if err != nil {
		return nil, err
	}
	msg := remoteapi.WriteV1MessageType
	if c.version == 2 {
		msg = remoteapi.WriteV2MessageType
	}
	return workload.Decode(c.name, msg, pb)
}

// shift adds delta to every timestamp of r: samples, histograms and
// exemplars.
func shift(r *workload.Request, delta int64) {
	r.Timestamps(func(t *int64, _ bool, _ int) { *t += delta })
}

// timeRange returns the least and the greatest timestamp of the
// request's samples and histograms, and apart those of its exemplars,
// which a sender's exposition may date far from its samples (the
// exemplars of testdata/remote-write are a year older than their
// samples). An empty range is (MaxInt64, MinInt64).
func timeRange(r *workload.Request) (lo, hi, exLo, exHi int64) {
	lo, hi, exLo, exHi = math.MaxInt64, math.MinInt64, math.MaxInt64, math.MinInt64
	r.Timestamps(func(t *int64, exemplar bool, _ int) {
		if exemplar {
			exLo, exHi = min(exLo, *t), max(exHi, *t)
		} else {
			lo, hi = min(lo, *t), max(hi, *t)
		}
	})
	return lo, hi, exLo, exHi
}

// BenchmarkReplay replays a directory of captured requests (-capture-dir;
// $INGESTKIT_REPLAY_DIR, default testdata/remote-write) through
// Prometheus's remote.NewWriteHandler (impl=prometheus) and the WriteHandler
// (impl=ingestkit), each over its own fresh tsdb.DB, in process as
// BenchmarkReceive does. Before timing, checkReplay replays the requests
// as captured through both and fails unless the two TSDBs end identical.
//
// One op is the whole directory in its order of arrival, with the
// captured headers, every timestamp moved by the traffic's time span from
// the op before, so that each op writes new samples to series that exist
// (the first op, before timing, creates them). A body that does not
// decode is sent as captured. Bodies are encoded ahead with the timer
// stopped. Besides per op, it reports time, bytes and allocations per
// request and per sample (float or histogram) of the traffic.
//
// go run ./internal/cmd/benchall -requests DIR runs it and prints the
// benchstat table.
func BenchmarkReplay(b *testing.B) {
	dir := replayDir(b)
	reqs, err := readCaptureDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	codes, _ := checkReplay(b, reqs)
	for _, impl := range []string{"prometheus", "ingestkit"} {
		b.Run("impl="+impl, func(b *testing.B) { benchReplay(b, impl, reqs, codes) })
	}
}

func benchReplay(b *testing.B, impl string, captured []capturedRequest, codes []int) {
	// Decoded copies, whose timestamps each op moves; nil where the body
	// does not decode.
	reqs := make([]*workload.Request, len(captured))
	samples := 0
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	exLo, exHi := lo, hi
	for i, c := range captured {
		r, err := decodeCaptured(c)
		if err != nil {
			continue
		}
		reqs[i] = r
		s, h, _ := r.Counts()
		samples += s + h
		l, u, el, eu := timeRange(r)
		lo, hi, exLo, exHi = min(lo, l), max(hi, u), min(exLo, el), max(exHi, eu)
	}
	if lo > hi {
		lo, hi = 0, 0
	}
	if exLo > exHi {
		exLo, exHi = lo, hi
	}
	// Each op later than the one before, its samples and its exemplars.
	span := max(hi-lo, exHi-exLo) + 1
	now := time.Now().UnixMilli()
	delta := now - replayBack.Milliseconds() - lo // of the next op
	encode := func(reuse [][]byte) [][]byte {
		if max(hi, exHi)+delta > now {
			b.Fatalf("%d ops of this traffic, %d ms long each, reach the present: use a smaller -benchtime", b.N, span)
		}
		out := reuse
		if out == nil {
			out = make([][]byte, len(reqs))
		}
		for i, r := range reqs {
			if r == nil {
				out[i] = captured[i].body
				continue
			}
			shift(r, delta)
			body, err := r.AppendEncoded(out[i])
			if err != nil {
				b.Fatal(err)
			}
			out[i] = body
			shift(r, -delta)
		}
		delta += span
		return out
	}

	db := newBenchDB(b)
	h := newImpl(b, impl, db)
	brs := make([]*rwbench.Request, len(captured))
	for i, c := range captured {
		brs[i] = rwbench.NewRequestHeader(c.header.Clone())
	}
	serve := func(bodies [][]byte) {
		for i, br := range brs {
			br.Serve(h, bodies[i])
		}
	}
	// The first op creates the series, and must be answered as the
	// requests were in checkReplay.
	warm := encode(nil)
	for i, br := range brs {
		br.Serve(h, warm[i])
		if br.W.Code != codes[i] {
			b.Fatalf("%s moved to now-%v: status %d, want %d as captured: %.300s", captured[i].name, replayBack, br.W.Code, codes[i], br.W.Body.String())
		}
	}
	opBytes := 0
	for _, w := range warm {
		opBytes += len(w)
	}
	queue := make([][][]byte, max(1, min(256, rwbench.QueueBytes/max(opBytes, 1))))
	for k := range queue {
		queue[k] = encode(nil)
	}
	next := 0

	// Allocations counted as testing counts them, without the encoding.
	var ms runtime.MemStats
	var mallocs, allocBytes uint64
	mark := func() (uint64, uint64) { runtime.ReadMemStats(&ms); return ms.Mallocs, ms.TotalAlloc }
	m0, b0 := mark()
	ops := 0
	b.ReportAllocs()
	for b.Loop() {
		if ops == 0 {
			m0, b0 = mark() // b.Loop's first call reset the timer
		}
		if next == len(queue) {
			b.StopTimer()
			m1, b1 := mark()
			mallocs, allocBytes = mallocs+m1-m0, allocBytes+b1-b0
			for k := range queue {
				queue[k] = encode(queue[k])
			}
			next = 0
			m0, b0 = mark()
			b.StartTimer()
		}
		serve(queue[next])
		next++
		ops++
	}
	m1, b1 := mark()
	mallocs, allocBytes = mallocs+m1-m0, allocBytes+b1-b0
	perReq, perSample := float64(ops*len(captured)), float64(ops*max(samples, 1))
	ns := float64(b.Elapsed().Nanoseconds())
	b.ReportMetric(ns/perReq, "ns/request")
	b.ReportMetric(float64(allocBytes)/perReq, "B/request")
	b.ReportMetric(float64(mallocs)/perReq, "allocs/request")
	b.ReportMetric(ns/perSample, "ns/sample")
	b.ReportMetric(float64(allocBytes)/perSample, "B/sample")
	b.ReportMetric(float64(mallocs)/perSample, "allocs/sample")
}

// captureDirEnv, if set, names the directory TestCaptureReplay captures
// into and leaves behind, for CI to replay it with benchall -requests.
const captureDirEnv = "INGESTKIT_CAPTURE_DIR"

// TestCaptureReplay is the round trip of a user's traffic: Prometheus's
// remote-write client sends requests of both versions (floats, native
// histograms, exemplars; and the captured requests of testdata) to the
// receiver with a capture (-capture-dir), whose files must hold the
// bodies as sent and the client's headers; then checkReplay replays the
// directory through Prometheus's handler and the WriteHandler, whose TSDBs
// must end identical, and identical to the TSDB of the receiver that
// took the traffic.
func TestCaptureReplay(t *testing.T) {
	dir := os.Getenv(captureDirEnv)
	if dir == "" {
		dir = t.TempDir()
	} else if n, _, err := scanCaptureDir(dir); err == nil && n > 0 {
		t.Fatalf("$%s=%s already holds %d captured requests", captureDirEnv, dir, n)
	}
	db := newBenchDB(t)
	r := ingest.NewWriteHandlerV2(nil, db, ingest.Options{})
	cp, err := newCapturer(dir, defaultCaptureMax, 32<<20, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(cp.wrap(newMux(r, db, prometheus.NewRegistry())))
	defer srv.Close()
	sent := sendWithClient(t, srv.URL+"/api/v1/write")
	if err := cp.close(); err != nil {
		t.Fatal(err)
	}

	reqs, err := readCaptureDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != len(sent) {
		t.Fatalf("captured %d requests, want the %d sent", len(reqs), len(sent))
	}
	for i, c := range reqs {
		s := sent[i]
		if c.version != s.version || !bytes.Equal(c.body, s.body) {
			t.Errorf("%s: version %d, %d bytes; want the request sent %d-th, version %d, %d bytes", c.name, c.version, len(c.body), i, s.version, len(s.body))
		}
		if ua := c.header.Get("User-Agent"); !strings.HasPrefix(ua, "Prometheus/") {
			t.Errorf("%s: User-Agent %q, want Prometheus's client's", c.name, ua)
		}
		if got, want := c.header.Get("X-Prometheus-Remote-Write-Version"), map[int]string{1: "0.1.0", 2: "2.0.0"}[c.version]; got != want {
			t.Errorf("%s: X-Prometheus-Remote-Write-Version %q, want %q", c.name, got, want)
		}
	}
	_, dump := checkReplay(t, reqs)
	if live := difftest.DumpDB(t, db); live != dump {
		t.Errorf("the replay's TSDBs differ from the receiver's that took the traffic:\nreplayed:\n%.3000s\nlive:\n%.3000s", dump, live)
	}
}

// sentRequest is a body that sendWithClient sent.
type sentRequest struct {
	version int
	body    []byte
}

// sendWithClient sends, with Prometheus's remote-write client, difftest.E2ESeries
// in 1.0 and 2.0, then the captured requests of testdata with new
// timestamps, and returns the bodies in the order sent. 2.0 requests may
// be answered with a 400 partial write (the captured ones hold
// exemplar-only series); any other error fails the test.
func sendWithClient(t *testing.T, rawURL string) []sentRequest {
	t.Helper()
	T := time.Now().Add(-time.Hour).UnixMilli()
	var sent []sentRequest
	send := func(v int, body []byte) {
		t.Helper()
		msg := remoteapi.WriteV1MessageType
		if v == 2 {
			msg = remoteapi.WriteV2MessageType
		}
		cl := newWriteClient(t, rawURL, msg)
		if _, err := cl.Store(t.Context(), body, 0); err != nil && (v == 1 || !strings.Contains(err.Error(), "HTTP status 400 ")) {
			t.Fatalf("v%d: Store: %v", v, err)
		}
		sent = append(sent, sentRequest{version: v, body: body})
	}
	send(1, difftest.Compress(difftest.EncodeV1(t, difftest.E2ESeries(1, T))))
	send(2, difftest.Compress(difftest.EncodeV2(t, difftest.E2ESeries(2, T))))
	n := 0
	for _, v := range []int{1, 2} {
		for _, r := range rwtest.Requests(t, v) {
			b, err := r.Body(T + 10_000 + int64(n)*10)
			if err != nil {
				t.Fatal(err)
			}
			send(v, slices.Clone(b))
			n++
		}
	}
	return sent
}

// newWriteClient returns Prometheus's remote-write client of msg to rawURL.
func newWriteClient(t *testing.T, rawURL string, msg remoteapi.WriteMessageType) remote.WriteClient {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := remote.NewWriteClient("capture-"+string(msg), &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(30 * time.Second), WriteProtoMsg: msg})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
