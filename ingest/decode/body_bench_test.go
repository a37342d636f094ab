package decode

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// reportBodyBytes reports the bytes allocated per body byte, measured around
// the benchmark loop; B/op divided by the body size says the same.
func reportBodyBytes(b *testing.B, before *runtime.MemStats, bodySize int) {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(bodySize)/float64(b.N), "B/body-B")
}

// BenchmarkReadBody reads a body of known length from a reader that offers
// nothing but Read, as a network body does, so that io.Copy cannot take a
// WriterTo or ReaderFrom shortcut:
//
//   - readall: io.ReadAll, as Prometheus's receiver reads the body.
//   - grow: bytes.Buffer.Grow(ContentLength) then io.Copy, as the Thanos
//     receive handler does; ReadFrom's final read, at EOF, finds no room
//     for another 512 bytes and reallocates to twice the size.
//   - ingestkit: ReadBody from a BodyReader whose buffers are never
//     released, so every read allocates its body afresh: B/op must stay
//     within 1% of the body. The 10 MiB body is above
//     DefaultMaxPreallocSize, so it grows as it arrives (1, 4, then
//     10 MiB); the pool serves the growth steps, which are released, so
//     that it costs copies but no more memory.
//   - ingestkit-trusted: the same with MaxPreallocSize at the body limit,
//     so that every Content-Length is trusted and sized once: against
//     ingestkit, what growing as the bytes arrive costs (nothing up to
//     1 MiB, where the two do the same).
//   - ingestkit-pooled: ReadBody and Release: the steady state of a
//     receiver, with no allocation (a pooled buffer that fits serves an
//     untrusted length too).
//   - ingestkit-inflight: ingestkit-pooled under MaxInflightBytes: what
//     counting the bytes in flight costs.
func BenchmarkReadBody(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}, {"10MiB", 10 << 20}} {
		data := bodyRandom(size.n)
		rd := bytes.NewReader(data)
		var r io.Reader = bodyOnlyReader{rd}
		contentLength := int64(size.n)
		bench := func(impl string, read func() int) {
			b.Run("size="+size.name+"/impl="+impl, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(contentLength)
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					rd.Reset(data)
					if n := read(); n != size.n {
						b.Fatalf("read %d bytes, want %d", n, size.n)
					}
				}
				reportBodyBytes(b, &before, size.n)
			})
		}
		bench("readall", func() int {
			buf, err := io.ReadAll(r)
			if err != nil {
				b.Fatal(err)
			}
			return len(buf)
		})
		bench("grow", func() int {
			var buf bytes.Buffer
			buf.Grow(int(contentLength))
			if _, err := io.Copy(&buf, r); err != nil {
				b.Fatal(err)
			}
			return buf.Len()
		})
		unpooled := NewBodyReader(BodyOptions{})
		bench("ingestkit", func() int {
			buf, err := unpooled.ReadBody(r, contentLength)
			if err != nil {
				b.Fatal(err)
			}
			return len(buf.B) // not released: the pool stays empty
		})
		trusted := NewBodyReader(BodyOptions{MaxPreallocSize: DefaultMaxBodySize})
		bench("ingestkit-trusted", func() int {
			buf, err := trusted.ReadBody(r, contentLength)
			if err != nil {
				b.Fatal(err)
			}
			return len(buf.B) // not released: the pool stays empty
		})
		pooled := NewBodyReader(BodyOptions{})
		bench("ingestkit-pooled", func() int {
			buf, err := pooled.ReadBody(r, contentLength)
			if err != nil {
				b.Fatal(err)
			}
			n := len(buf.B)
			pooled.Release(buf)
			return n
		})
		limited := NewBodyReader(BodyOptions{MaxInflightBytes: 256 << 20})
		bench("ingestkit-inflight", func() int {
			buf, err := limited.ReadBody(r, contentLength)
			if err != nil {
				b.Fatal(err)
			}
			n := len(buf.B)
			limited.Release(buf)
			return n
		})
	}
}

// bodyBenchRequest is a captured remote-write request ready to be served
// again and again.
type bodyBenchRequest struct {
	name    string
	raw     []byte
	decoded int
	header  http.Header
}

func bodyBenchRequests(b *testing.B) []bodyBenchRequest {
	var reqs []bodyBenchRequest
	for _, version := range []int{1, 2} {
		path := rwtest.Files(b, version)[0]
		raw, header := rwtest.Raw(b, path)
		reqs = append(reqs, bodyBenchRequest{
			name:    strings.TrimSuffix(filepath.Base(path), ".snappy"),
			raw:     raw,
			decoded: len(rwtest.Body(b, path)),
			header:  header,
		})
	}
	return reqs
}

// BenchmarkReadRequest turns a captured remote-write request into its
// decoded protobuf bytes:
//
//   - prometheus: Prometheus v0.316.0's receiver, that is
//     remoteapi.SnappyDecodeMiddleware (io.ReadAll, snappy.DecodedLen
//     check, snappy.Decode) followed by the io.ReadAll of the decoded body
//     that writeHandler.Store does.
//   - ingestkit: ReadRequest and Release, in the steady state.
//   - ingestkit-inflight: the same under MaxInflightBytes.
//
// SetBytes is the compressed size, as it arrives.
func BenchmarkReadRequest(b *testing.B) {
	for _, rq := range bodyBenchRequests(b) {
		rd := bytes.NewReader(nil)
		body := io.NopCloser(bodyOnlyReader{rd})
		req := httptest.NewRequest(http.MethodPost, "/api/v1/write", nil)
		reset := func() {
			rd.Reset(rq.raw)
			req.Body, req.ContentLength = body, int64(len(rq.raw))
			req.Header = rq.header
		}
		b.Run("file="+rq.name+"/impl=prometheus", func(b *testing.B) {
			var got int
			h := remoteapi.SnappyDecodeMiddleware(slog.New(slog.DiscardHandler))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				decoded, _ := io.ReadAll(r.Body)
				got = len(decoded)
			}))
			w := httptest.NewRecorder()
			b.ReportAllocs()
			b.SetBytes(int64(len(rq.raw)))
			header := rq.header.Clone()
			encoding := header["Content-Encoding"]
			for b.Loop() {
				reset()
				// The middleware deletes Content-Encoding from the
				// header; put it back without allocating.
				req.Header = header
				header["Content-Encoding"] = encoding
				h.ServeHTTP(w, req)
				if got != rq.decoded {
					b.Fatalf("decoded %d bytes, want %d", got, rq.decoded)
				}
			}
		})
		for _, c := range []struct {
			impl string
			opts BodyOptions
		}{{"ingestkit", BodyOptions{}}, {"ingestkit-inflight", BodyOptions{MaxInflightBytes: 256 << 20}}} {
			b.Run("file="+rq.name+"/impl="+c.impl, func(b *testing.B) {
				br := NewBodyReader(c.opts)
				b.ReportAllocs()
				b.SetBytes(int64(len(rq.raw)))
				for b.Loop() {
					reset()
					buf, err := br.ReadRequest(req)
					if err != nil || len(buf.B) != rq.decoded {
						b.Fatalf("ReadRequest = %v, want %d bytes", err, rq.decoded)
					}
					br.Release(buf)
				}
			})
		}
	}
}

// BenchmarkBodyReaderParallel reads and decodes a captured request from all
// Ps at once through one BodyReader, to show that its pool does not
// contend: ns/op should fall with GOMAXPROCS, as for impl=prometheus, which
// shares nothing. impl=ingestkit-inflight adds MaxInflightBytes, whose
// counter all Ps update.
func BenchmarkBodyReaderParallel(b *testing.B) {
	rq := bodyBenchRequests(b)[0]
	b.Run("file="+rq.name+"/impl=prometheus", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(rq.raw)))
		h := remoteapi.SnappyDecodeMiddleware(slog.New(slog.DiscardHandler))
		b.RunParallel(func(pb *testing.PB) {
			rd := bytes.NewReader(nil)
			body := io.NopCloser(bodyOnlyReader{rd})
			req := httptest.NewRequest(http.MethodPost, "/api/v1/write", nil)
			req.Header = rq.header.Clone()
			encoding := req.Header["Content-Encoding"]
			w := httptest.NewRecorder()
			var got int
			next := h(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				decoded, _ := io.ReadAll(r.Body)
				got = len(decoded)
			}))
			for pb.Next() {
				rd.Reset(rq.raw)
				req.Body, req.ContentLength = body, int64(len(rq.raw))
				req.Header["Content-Encoding"] = encoding // deleted by the middleware
				next.ServeHTTP(w, req)
				if got != rq.decoded {
					b.Errorf("decoded %d bytes, want %d", got, rq.decoded)
					return
				}
			}
		})
	})
	for _, c := range []struct {
		impl string
		opts BodyOptions
	}{{"ingestkit", BodyOptions{}}, {"ingestkit-inflight", BodyOptions{MaxInflightBytes: 256 << 20}}} {
		benchBodyReaderParallel(b, rq, c.impl, NewBodyReader(c.opts))
	}
}

func benchBodyReaderParallel(b *testing.B, rq bodyBenchRequest, impl string, br *BodyReader) {
	b.Run("file="+rq.name+"/impl="+impl, func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(rq.raw)))
		b.RunParallel(func(pb *testing.PB) {
			rd := bytes.NewReader(nil)
			body := io.NopCloser(bodyOnlyReader{rd})
			req := httptest.NewRequest(http.MethodPost, "/api/v1/write", nil)
			req.Header = rq.header
			for pb.Next() {
				rd.Reset(rq.raw)
				req.Body, req.ContentLength = body, int64(len(rq.raw))
				buf, err := br.ReadRequest(req)
				if err != nil || len(buf.B) != rq.decoded {
					b.Errorf("ReadRequest = %v, want %d bytes", err, rq.decoded)
					return
				}
				br.Release(buf)
			}
		})
	})
}
