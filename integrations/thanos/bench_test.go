//go:build slicelabels

package thanos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/thanos-io/thanos/pkg/extkingpin"
	"github.com/thanos-io/thanos/pkg/receive"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
	"github.com/thanos-io/thanos/pkg/store/storepb/prompb"

	"github.com/ingestkit/ingestkit/ingest"
)

// The benchmarks of this file take the cases of Thanos's own receive
// benchmarks, BenchmarkWriter* and BenchmarkHandlerReceiveHTTP (v0.42.5),
// written from their descriptions, and run each with Thanos's code
// (impl=thanos) and with ingestkit's in its place, side by side:
//
//   - impl=ingestkit-storage: Thanos's Writer, and Handler, over a
//     TenantStorage (nothing of Thanos changed);
//   - impl=ingestkit-writer: the Writer in place of Thanos's (a fork's
//     change to pkg/receive); in BenchmarkWriter only, since Thanos's
//     Handler holds a concrete *receive.Writer;
//   - impl=ingestkit-handler: ingest's TenantWriteHandler in front of the
//     same MultiTSDB, for a single-node receive (no replication nor
//     forwarding, which Thanos's Handler does); in BenchmarkHandlerReceive
//     only.
//   - impl=head-floor: in BenchmarkWriter, the appends of a request by the
//     refs of its series, known beforehand, and the commit, through the
//     same MultiTSDB appender: the head's part of every Write (opening its
//     appender, appending, committing), and the conversion of each
//     histogram the head requires, which no writer can save. Subtract it
//     from each column to compare the writers themselves.
//   - impl=http-floor: in BenchmarkHandlerReceive, a handler that reads the
//     body and answers 204, writing nothing: what the loopback round trip
//     costs every impl per request (the client, the connection, net/http's
//     server), time and bytes that no handler can save. Thanos's own
//     benchmark calls the Handler's unexported receiveHTTP in process;
//     from outside Thanos its Handler is reachable only through the
//     server that Handler.Run starts, so every impl here goes through
//     loopback HTTP, and the floor shows what of each column that is.
//
// In Thanos's cases every series of a request has the same labels, so that
// a request is many samples of one series; series=distinct adds the same
// sizes with distinct series, the case real senders produce.

// BenchmarkWriter runs the cases of Thanos's BenchmarkWriter*: requests of
// 10, 100 and 1,000 series of 1 or 10 labels and the metric name, each
// with one float sample or one histogram, written again and again to one
// tenant of a MultiTSDB (the samples are duplicates after the first write,
// which the head accepts without appending, as in Thanos's), without
// interning.
func BenchmarkWriter(b *testing.B) {
	for _, kind := range []string{"float", "histogram"} {
		for _, nlabels := range []int{1, 10} {
			for _, nseries := range []int{10, 100, 1000} {
				for _, shape := range []string{"same", "distinct"} {
					series := writerSeries(nlabels, nseries, kind == "histogram", shape == "distinct")
					for _, impl := range []string{"thanos", "ingestkit-storage", "ingestkit-writer", "head-floor"} {
						name := fmt.Sprintf("kind=%s/labels=%d/series=%d/shape=%s/impl=%s", kind, nlabels, nseries, shape, impl)
						b.Run(name, func(b *testing.B) {
							m := newMultiTSDB(b)
							w := newWriter(impl, m)
							ctx := context.Background()
							if err := w.Write(ctx, "foo", series); err != nil {
								b.Fatal(err)
							}
							b.ReportAllocs()
							for b.Loop() {
								if err := w.Write(ctx, "foo", series); err != nil {
									b.Fatal(err)
								}
							}
						})
					}
				}
			}
		}
	}
}

// newWriter returns the writer of impl over s.
func newWriter(impl string, s receive.TenantStorage) writer {
	opts := &receive.WriterOptions{}
	switch impl {
	case "thanos":
		return receive.NewWriter(log.NewNopLogger(), s, opts)
	case "ingestkit-storage":
		return receive.NewWriter(log.NewNopLogger(), NewTenantStorage(s), opts)
	case "ingestkit-writer":
		return NewWriter(log.NewNopLogger(), s, opts)
	case "head-floor":
		return &headFloor{storage: s}
	}
	panic("unknown impl " + impl)
}

// headFloor writes a request's samples by the refs of its series and
// commits, as a writer with a free lookup would: its first Write appends
// by labels and keeps the refs, every later one appends the same series by
// those refs. It is BenchmarkWriter's impl=head-floor, valid only for the
// same request written again and again.
type headFloor struct {
	storage receive.TenantStorage
	refs    []storage.SeriesRef
}

func (f *headFloor) Write(ctx context.Context, tenant string, wreq []prompb.TimeSeries) error {
	s, err := f.storage.TenantAppendable(tenant)
	if err != nil {
		return err
	}
	app, err := s.Appender(ctx)
	if err != nil {
		return err
	}
	first := f.refs == nil
	if first {
		f.refs = make([]storage.SeriesRef, len(wreq))
	}
	for i := range wreq {
		lset := labels.EmptyLabels()
		if first {
			lset = labelpb.ZLabelsToPromLabels(wreq[i].Labels).Copy()
		}
		var ref storage.SeriesRef
		if hp := wreq[i].Histograms; len(hp) > 0 {
			// A histogram of its own per append, as every writer must: the
			// head keeps the last one a series appended.
			ref, err = app.AppendHistogram(f.refs[i], lset, hp[0].Timestamp, prompb.HistogramProtoToHistogram(hp[0]), nil)
		} else {
			ref, err = app.Append(f.refs[i], lset, wreq[i].Samples[0].Timestamp, wreq[i].Samples[0].Value)
		}
		if err != nil {
			_ = app.Rollback()
			return err
		}
		f.refs[i] = ref
	}
	return app.Commit()
}

// writerSeries returns nseries series of the metric name and nlabels
// labels, each with one sample at 10 (a float, or a histogram): all one
// series, as in Thanos's cases, or with distinct the last label's value
// the series' number.
func writerSeries(nlabels, nseries int, hist, distinct bool) []prompb.TimeSeries {
	ts := make([]prompb.TimeSeries, nseries)
	h := &histogram.Histogram{
		Count: 12, ZeroCount: 2, ZeroThreshold: 0.001, Sum: 18.4, Schema: 1,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 2}}, PositiveBuckets: []int64{1, 1, -1, 0},
		NegativeSpans: []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 2}}, NegativeBuckets: []int64{1, 1, -1, 0},
	}
	for j := range ts {
		ls := []labelpb.ZLabel{{Name: "__name__", Value: "test"}}
		for i := range nlabels {
			v := strconv.Itoa(i)
			if distinct && i == nlabels-1 {
				v = strconv.Itoa(j)
			}
			ls = append(ls, labelpb.ZLabel{Name: "label_" + string(rune('a'+i)), Value: v})
		}
		ts[j].Labels = ls
		if hist {
			ts[j].Histograms = []prompb.Histogram{prompb.HistogramToHistogramProto(10, h)}
		} else {
			ts[j].Samples = []prompb.Sample{{Value: 1, Timestamp: 10}}
		}
	}
	return ts
}

// BenchmarkHandlerReceive runs the cases of Thanos's
// BenchmarkHandlerReceiveHTTP: snappy-compressed remote-write 1.0 requests
// of 500, 5,000 and 20,000 series of ten labels of ~20-byte names and
// ~50-byte values, one sample each, and of 10 series of one 10 MB label
// value, POSTed over loopback HTTP to a receive handler in front of a
// MultiTSDB whose storage rewrites each sample's timestamp one step later
// than the last (status=ok) or earlier (status=conflict, every sample out
// of order after the first request). Thanos's Handler answers 200 and 409;
// ingest's 204 and 400. The typical cases come as Thanos has them, every
// series of a request the same (series=same), and with distinct series.
func BenchmarkHandlerReceive(b *testing.B) {
	type tcase struct {
		name string
		body []byte
	}
	var cases []tcase
	for _, n := range []int{500, 5000, 20000} {
		for _, shape := range []string{"same", "distinct"} {
			cases = append(cases, tcase{fmt.Sprintf("typical-%d/series=%s", n, shape), typicalRequest(b, n, shape == "distinct")})
		}
	}
	cases = append(cases, tcase{"large-10x10MB/series=distinct", largeRequest(b)})

	for _, c := range cases {
		for _, status := range []string{"ok", "conflict"} {
			for _, impl := range []string{"thanos", "ingestkit-storage", "ingestkit-handler", "http-floor"} {
				b.Run(fmt.Sprintf("case=%s/status=%s/impl=%s", c.name, status, impl), func(b *testing.B) {
					step := int64(1)
					if status == "conflict" {
						step = -1
					}
					m := newMultiTSDB(b)
					storage := &stepStorage{storage: m, step: step, last: 1_000_000}
					url := startHandler(b, impl, storage)
					want := map[string][2]int{
						"thanos":            {http.StatusOK, http.StatusConflict},
						"ingestkit-storage": {http.StatusOK, http.StatusConflict},
						"ingestkit-handler": {http.StatusNoContent, http.StatusBadRequest},
						"http-floor":        {http.StatusNoContent, http.StatusNoContent},
					}[impl]
					// The first request creates the tenant, and its series:
					// it is written in both statuses.
					if code := post(b, url, c.body); code != want[0] {
						b.Fatalf("first request: status %d, want %d", code, want[0])
					}
					code := want[0]
					if status == "conflict" {
						code = want[1]
					}
					b.SetBytes(int64(len(c.body)))
					b.ReportAllocs()
					for b.Loop() {
						if got := post(b, url, c.body); got != code {
							b.Fatalf("status %d, want %d", got, code)
						}
					}
				})
			}
		}
	}
}

// benchClient posts the benchmarks' requests, keeping its connections.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

// post POSTs body to url as tenant "bench" and returns the status.
func post(tb testing.TB, url string, body []byte) int { return postTenant(tb, url, "bench", body) }

// postTenant POSTs body to url as tenant and returns the status.
func postTenant(tb testing.TB, url, tenant string, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set(ingest.DefaultTenantHeader, tenant)
	resp, err := benchClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// startHandler starts impl's handler over s (http-floor writes nothing to
// s) on loopback and returns its write URL.
func startHandler(b *testing.B, impl string, s *stepStorage) string { return startHandlerT(b, impl, s) }

func startHandlerT(b testing.TB, impl string, s *stepStorage) string {
	b.Helper()
	if impl == "http-floor" {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
		}))
		b.Cleanup(srv.Close)
		return srv.URL + "/api/v1/receive"
	}
	if impl == "ingestkit-handler" {
		h := ingest.NewTenantWriteHandler(slog.New(slog.DiscardHandler), s.storages, ingest.TenantOptions{
			Options: func(string) ingest.Options {
				// Thanos's handler takes the 100 MB of the large case.
				return ingest.Options{MaxBodySize: 256 << 20, MaxDecodedSize: 256 << 20, MaxInflightBytes: 1 << 30}
			},
		})
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		return srv.URL + "/api/v1/receive"
	}
	var ts receive.TenantStorage = s
	if impl == "ingestkit-storage" {
		ts = NewTenantStorage(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // Handler.Run listens on the address itself
	limiter, err := receive.NewLimiter(extkingpin.NewNopConfig(), nil, receive.RouterIngestor, log.NewNopLogger(), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	h := receive.NewHandler(log.NewNopLogger(), &receive.Options{
		Limiter:           limiter,
		Writer:            receive.NewWriter(log.NewNopLogger(), ts, &receive.WriterOptions{}),
		ListenAddress:     addr,
		Endpoint:          addr,
		ReplicationFactor: 1,
		TenantHeader:      ingest.DefaultTenantHeader,
		DefaultTenantID:   ingest.DefaultTenant,
		ReceiverMode:      receive.RouterIngestor,
		ForwardTimeout:    10 * time.Second,
	})
	ring, err := receive.NewMultiHashring(receive.AlgorithmHashmod, 1, []receive.HashringConfig{{Endpoints: []receive.Endpoint{{Address: addr}}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	h.Hashring(ring)
	done := make(chan error, 1)
	go func() { done <- h.Run() }()
	b.Cleanup(func() {
		h.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.Error(err)
		}
	})
	url := "http://" + addr + "/api/v1/receive"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return url
		} else if time.Now().After(deadline) {
			b.Fatal(err)
		}
	}
}

// typicalRequest returns the compressed request of n series of ten labels
// of ~20-byte names and ~50-byte values, the first the metric name, one
// sample each: every series the same, as in Thanos's case, or with
// distinct the last value the series' number.
func typicalRequest(tb testing.TB, n int, distinct bool) []byte {
	series := make([]prompb.TimeSeries, n)
	for s := range series {
		ls := make([]labelpb.ZLabel, 10)
		for i := range ls {
			ls[i] = labelpb.ZLabel{Name: "abcdefghijabcdefghij" + strconv.Itoa(i), Value: strings.Repeat("abcdefghij", 5) + strconv.Itoa(i)}
		}
		// A metric name, which Thanos's case lacks: Prometheus's handler,
		// and so ingest's, drop a series without one.
		ls[0].Name = "__name__"
		if distinct {
			ls[9].Value += "-" + strconv.Itoa(s)
		}
		series[s] = prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}}
	}
	return encode(tb, series)
}

// largeRequest returns the compressed request of 10 series, each a metric
// name of 10 MB, distinct, with one sample.
func largeRequest(tb testing.TB) []byte {
	series := make([]prompb.TimeSeries, 10)
	for s := range series {
		name := strconv.Itoa(s) + strings.Repeat("abcdefghij", 1<<20)
		series[s] = prompb.TimeSeries{Labels: []labelpb.ZLabel{{Name: "__name__", Value: name}}, Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}}
	}
	return encode(tb, series)
}

func encode(tb testing.TB, series []prompb.TimeSeries) []byte {
	b, err := (&prompb.WriteRequest{Timeseries: series}).Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return snappy.Encode(nil, b)
}

// stepStorage is a receive.TenantStorage over a MultiTSDB whose appenders
// rewrite each float sample's timestamp to step after the last one given
// (across tenants and requests), so that a request of many samples of one
// series is all appended (step 1) or, after the first, all out of order
// (step -1); step 0 keeps the timestamps. Each tenant's appendable is the same value across requests,
// so that the caches keep it. It serves ingest's TenantWriteHandler too
// (storages).
type stepStorage struct {
	storage receive.TenantStorage
	step    int64
	last    int64 // atomically

	mu   sync.Mutex
	apps map[receive.Appendable]*stepAppendable
}

func (s *stepStorage) TenantAppendable(tenant string) (receive.Appendable, error) {
	a, err := s.storage.TenantAppendable(tenant)
	if err != nil {
		return nil, err
	}
	return s.appendable(a), nil
}

func (s *stepStorage) appendable(a receive.Appendable) *stepAppendable {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apps == nil {
		s.apps = map[receive.Appendable]*stepAppendable{}
	}
	sa := s.apps[a]
	if sa == nil {
		sa = &stepAppendable{Appendable: a, s: s}
		sa.v1 = &stepV1{sa}
		s.apps[a] = sa
	}
	return sa
}

// storages is s as ingest's TenantStorage.
func (s *stepStorage) storages(_ context.Context, tenant string) (storage.Appendable, func(), error) {
	a, err := s.storage.TenantAppendable(tenant)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ingest.ErrTenantUnavailable, err)
	}
	return s.appendable(a).v1, nil, nil
}

type stepAppendable struct {
	receive.Appendable
	s  *stepStorage
	v1 *stepV1
}

// Appender is receive.Appendable's.
func (a *stepAppendable) Appender(ctx context.Context) (storage.Appender, error) {
	app, err := a.Appendable.Appender(ctx)
	if err != nil {
		return nil, err
	}
	return &stepAppender{Appender: app, s: a.s}, nil
}

// stepV1 is a stepAppendable as a storage.Appendable, for ingest.
type stepV1 struct{ a *stepAppendable }

// Appender opens a transaction on the tenant's TSDB, which the benchmark
// has ready.
func (v *stepV1) Appender(ctx context.Context) storage.Appender {
	app, err := v.a.Appender(ctx)
	if err != nil {
		panic(fmt.Sprintf("benchmark tenant not ready: %v", err))
	}
	return app
}

type stepAppender struct {
	storage.Appender
	s *stepStorage
}

func (a *stepAppender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if a.s.step != 0 {
		t = a.s.next()
	}
	return a.Appender.Append(ref, l, t, v)
}

func (a *stepAppender) GetRef(lset labels.Labels, hash uint64) (storage.SeriesRef, labels.Labels) {
	return a.Appender.(storage.GetRef).GetRef(lset, hash)
}

func (s *stepStorage) next() int64 { return atomic.AddInt64(&s.last, s.step) }
