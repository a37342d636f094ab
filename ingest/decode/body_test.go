package decode

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/golang/snappy"
	kpsnappy "github.com/klauspost/compress/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// bodyRandom returns n deterministic pseudo-random bytes, the same for every
// call; callers must not modify them.
func bodyRandom(n int) []byte {
	return bodyRandomData()[:n]
}

var bodyRandomData = sync.OnceValue(func() []byte {
	b := make([]byte, DefaultMaxBodySize+2)
	r := rand.NewChaCha8([32]byte{'i', 'n', 'g', 'e', 's', 't'})
	_, _ = r.Read(b)
	return b
})

// bodyOnlyReader hides every method but Read (WriterTo, Seeker, Len), as a
// network body has none.
type bodyOnlyReader struct{ io.Reader }

// bodyCountingReader counts the bytes read from r.
type bodyCountingReader struct {
	r io.Reader
	n int64
}

func (c *bodyCountingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// drain empties br's pool, so that its buffers are garbage now.
func (br *BodyReader) drain() { br.pool.Drain() }

// bodyTestReader returns a BodyReader whose pool is emptied when the test
// ends. sync.Pool keeps what it holds through one GC (its victim cache); a
// test's buffers left there would be freed during a later test that
// measures the heap (TestCacheMemoryPerEntry) and make it shrink.
func bodyTestReader(tb testing.TB, opts BodyOptions) *BodyReader {
	br := NewBodyReader(opts)
	tb.Cleanup(br.drain)
	return br
}

// bodyBuffer returns br.buffer(n), which must not fail.
func bodyBuffer(tb testing.TB, br *BodyReader, n int) *Buffer {
	tb.Helper()
	b, err := br.buffer(n)
	if err != nil {
		tb.Fatalf("buffer(%d) = %v", n, err)
	}
	return b
}

// bodyRaceEnabled reports whether the test binary was built with -race,
// under which sync.Pool drops a quarter of Puts at random, so that
// pool-dependent allocation counts cannot be asserted.
func bodyRaceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// bodyWant returns the most bytes ReadBody may read of a body of size
// bytes announced as announced under limit, and the error it must return.
func bodyWant(size int, announced int64, limit int) (maxRead int64, want error) {
	switch {
	case announced < 0:
		if size > limit {
			return int64(limit) + 1, ErrBodyTooLarge
		}
		return int64(size), nil
	case announced > int64(limit):
		return 0, ErrBodyTooLarge
	case int64(size) < announced:
		return int64(size), ErrBodyTruncated
	case int64(size) > announced:
		return announced + 1, ErrBodyTooLong
	}
	return int64(size), nil
}

func TestReadBody(t *testing.T) {
	const odd = 64<<10 + 3 // a limit that is not a size class
	type tc struct {
		limit int
		size  int
	}
	var cases []tc
	for _, size := range []int{0, 1, 127, 128, 129, 4 << 10, 1 << 20, 10 << 20} {
		cases = append(cases, tc{DefaultMaxBodySize, size})
	}
	for _, limit := range []int{1, 4 << 10, odd, 1 << 20, DefaultMaxBodySize} {
		for _, size := range []int{limit - 1, limit, limit + 1} {
			cases = append(cases, tc{limit, size})
		}
	}
	modes := []struct {
		name      string
		announced func(size int) int64
	}{
		{"exact", func(size int) int64 { return int64(size) }},
		{"short", func(size int) int64 { return int64(size) + 1 }}, // the body is shorter than announced
		{"long", func(size int) int64 { return int64(size) - 1 }},  // the body is longer than announced
		{"unknown", func(int) int64 { return -1 }},
	}
	for _, c := range cases {
		br := bodyTestReader(t, BodyOptions{MaxBodySize: int64(c.limit)})
		if c.limit == DefaultMaxBodySize {
			br = new(BodyReader) // the zero value's default
			t.Cleanup(br.drain)
		}
		for _, m := range modes {
			announced := m.announced(c.size)
			if (m.name == "long" && c.size == 0) || (c.size > 10<<20 && testing.Short()) {
				continue
			}
			t.Run(fmt.Sprintf("limit=%d/size=%d/%s", c.limit, c.size, m.name), func(t *testing.T) {
				maxRead, want := bodyWant(c.size, announced, c.limit)
				data := bodyRandom(c.size)
				r := &bodyCountingReader{r: bodyOnlyReader{bytes.NewReader(data)}}
				b, err := br.ReadBody(r, announced)
				if !errors.Is(err, want) || (want == nil) != (err == nil) {
					t.Fatalf("ReadBody(%d-byte body, %d) = %v, want %v", c.size, announced, err, want)
				}
				if r.n > maxRead {
					t.Errorf("ReadBody(%d-byte body, %d) read %d bytes, want at most %d", c.size, announced, r.n, maxRead)
				}
				if err != nil {
					if b != nil {
						t.Errorf("ReadBody(%d-byte body, %d) = %p, %v; want nil Buffer with the error", c.size, announced, b, err)
					}
					if errors.Is(err, ErrBodyTruncated) && !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Errorf("ReadBody(...) = %v, which is not io.ErrUnexpectedEOF", err)
					}
					return
				}
				if len(b.B) != c.size || !bytes.Equal(b.B, data) {
					t.Fatalf("ReadBody(%d-byte body, %d) = %d bytes (equal: %t), want the body", c.size, announced, len(b.B), bytes.Equal(b.B, data))
				}
				br.Release(b)
			})
		}
	}
}

// TestReadBodyHostileContentLength checks that a client claiming a huge body
// is turned away before anything is allocated or read.
func TestReadBodyHostileContentLength(t *testing.T) {
	for _, announced := range []int64{DefaultMaxBodySize + 1, 10 << 30, 1<<63 - 1} {
		t.Run(fmt.Sprint(announced), func(t *testing.T) {
			br := bodyTestReader(t, BodyOptions{})
			r := &bodyCountingReader{r: strings.NewReader("x")}
			allocs := testing.AllocsPerRun(100, func() {
				if b, err := br.ReadBody(r, announced); b != nil || err != ErrBodyTooLarge {
					t.Fatalf("ReadBody(r, %d) = %v, %v; want nil, ErrBodyTooLarge", announced, b, err)
				}
			})
			if allocs != 0 {
				t.Errorf("ReadBody(r, %d) allocates %v times, want 0", announced, allocs)
			}
			if r.n != 0 {
				t.Errorf("ReadBody(r, %d) read %d bytes, want 0", announced, r.n)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _ = br.ReadBody(r, announced)
			runtime.ReadMemStats(&after)
			if d := after.TotalAlloc - before.TotalAlloc; d > 64<<10 {
				t.Errorf("ReadBody(r, %d) allocated %d bytes, want almost none", announced, d)
			}
		})
	}
}

// bodyEndlessReader is a body that never ends.
type bodyEndlessReader struct{}

func (bodyEndlessReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestReadBodyUnknownLengthOverLimit checks that an endless body of unknown
// length costs limit+1 bytes of reading and about twice the limit of memory.
func TestReadBodyUnknownLengthOverLimit(t *testing.T) {
	for _, limit := range []int{1, 4 << 10, 1<<20 + 1, DefaultMaxBodySize} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			br := bodyTestReader(t, BodyOptions{MaxBodySize: int64(limit)})
			r := &bodyCountingReader{r: bodyEndlessReader{}}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b, err := br.ReadBody(r, -1)
			runtime.ReadMemStats(&after)
			if b != nil || err != ErrBodyTooLarge {
				t.Fatalf("ReadBody(endless, -1) = %v, %v; want nil, ErrBodyTooLarge", b, err)
			}
			if r.n != int64(limit)+1 {
				t.Errorf("ReadBody(endless, -1) read %d bytes, want limit+1 = %d", r.n, limit+1)
			}
			// The growth steps add up to at most 2*limit, or the first
			// 4 KiB; the rest is the Buffers and slack for the runtime.
			if d, most := after.TotalAlloc-before.TotalAlloc, uint64(2*max(limit, 4<<10)+16<<10); d > most {
				t.Errorf("ReadBody(endless, -1) allocated %d bytes, want at most %d", d, most)
			}
		})
	}
}

// bodyStutterReader returns (0, nil) on every other call.
type bodyStutterReader struct {
	r   io.Reader
	odd bool
}

func (s *bodyStutterReader) Read(p []byte) (int, error) {
	if s.odd = !s.odd; s.odd {
		return 0, nil
	}
	return s.r.Read(p)
}

// bodyStuckReader returns (0, nil) forever.
type bodyStuckReader struct{}

func (bodyStuckReader) Read([]byte) (int, error) { return 0, nil }

// bodyCutReader returns io.ErrUnexpectedEOF where r ends, as net/http's
// body does when the connection closes early.
type bodyCutReader struct{ r io.Reader }

func (c bodyCutReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func TestReadBodyReaders(t *testing.T) {
	errBroken := errors.New("broken pipe")
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
		// want is the error wanted for a body of size bytes, nil for
		// the body itself.
		want func(size int) error
	}{
		{"OneByteReader", iotest.OneByteReader, func(int) error { return nil }},
		{"HalfReader", iotest.HalfReader, func(int) error { return nil }},
		{"DataErrReader", iotest.DataErrReader, func(int) error { return nil }},
		{"stutter", func(r io.Reader) io.Reader { return &bodyStutterReader{r: r} }, func(int) error { return nil }},
		{"TimeoutReader", iotest.TimeoutReader, func(size int) error {
			if size == 0 {
				return nil // the first read finds EOF; the timeout is never reached
			}
			return iotest.ErrTimeout
		}},
		{"ErrReader", func(io.Reader) io.Reader { return iotest.ErrReader(errBroken) }, func(int) error { return errBroken }},
		{"stuck", func(io.Reader) io.Reader { return bodyStuckReader{} }, func(int) error { return io.ErrNoProgress }},
		{"cut", func(r io.Reader) io.Reader { return bodyCutReader{r} }, func(int) error { return ErrBodyTruncated }},
	}
	br := bodyTestReader(t, BodyOptions{})
	for _, rd := range readers {
		for _, size := range []int{0, 1, 127, 128, 129, 4 << 10, 4<<10 + 1, 70000} {
			for _, announced := range []int64{int64(size), -1} {
				t.Run(fmt.Sprintf("%s/size=%d/announced=%d", rd.name, size, announced), func(t *testing.T) {
					data := bodyRandom(size)
					want := rd.want(size)
					b, err := br.ReadBody(rd.wrap(bodyOnlyReader{bytes.NewReader(data)}), announced)
					if !errors.Is(err, want) || (want == nil) != (err == nil) {
						t.Fatalf("ReadBody(%s(%d bytes), %d) = %v, want %v", rd.name, size, announced, err, want)
					}
					if err == nil {
						if !bytes.Equal(b.B, data) {
							t.Fatalf("ReadBody(%s(%d bytes), %d) = %d other bytes, want the body", rd.name, size, announced, len(b.B))
						}
						br.Release(b)
					} else if want != ErrBodyTruncated && !strings.HasPrefix(err.Error(), "reading request body: ") {
						t.Errorf("ReadBody(%s(...)) = %q, want it to say what was being done", rd.name, err)
					}
				})
			}
		}
	}
}

// bodyLyingReader claims to have read more than it was given.
type bodyLyingReader struct{}

func (bodyLyingReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

func TestReadBodyInvalidCountPanics(t *testing.T) {
	for _, announced := range []int64{10, -1} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "decode: ") {
					t.Errorf("ReadBody(lying reader, %d) panicked with %v, want an \"decode: ...\" panic", announced, r)
				}
			}()
			br := bodyTestReader(t, BodyOptions{})
			_, _ = br.ReadBody(bodyLyingReader{}, announced)
		}()
	}
}

func TestNewBodyReaderPanics(t *testing.T) {
	for _, opts := range []BodyOptions{{MaxBodySize: -1}, {MaxDecodedSize: -1}, {MaxPreallocSize: -1}, {MaxInflightBytes: -1}} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "decode: ") {
					t.Errorf("NewBodyReader(%+v) panicked with %v, want an \"decode: ...\" panic", opts, r)
				}
			}()
			NewBodyReader(opts)
		}()
	}
}

// bodyHalfCompressible returns n bytes of which half repeat, which snappy
// compresses to about half.
func bodyHalfCompressible(n int) []byte {
	b := bytes.Clone(bodyRandom(n))
	for i := 0; i+64 <= n; i += 128 {
		copy(b[i+64:min(i+128, n)], b[i:i+64])
	}
	return b
}

func TestDecodeSnappy(t *testing.T) {
	const limit = 1<<20 + 5
	br := bodyTestReader(t, BodyOptions{MaxDecodedSize: limit})
	for _, size := range []int{0, 1, 127, 128, 129, 4 << 10, 1 << 20, limit - 1, limit} {
		for _, kind := range []string{"random", "compressible"} {
			t.Run(fmt.Sprintf("size=%d/%s", size, kind), func(t *testing.T) {
				data := bodyRandom(size)
				if kind == "compressible" {
					data = bodyHalfCompressible(size)
				}
				b, err := br.DecodeSnappy(snappy.Encode(nil, data))
				if err != nil {
					t.Fatalf("DecodeSnappy(Encode(%d bytes)) = %v", size, err)
				}
				if !bytes.Equal(b.B, data) {
					t.Fatalf("DecodeSnappy(Encode(%d bytes)) = %d other bytes, want the input", size, len(b.B))
				}
				br.Release(b)
			})
		}
	}
	// Over the limit: the header alone is enough, and nothing is allocated.
	for _, size := range []uint64{limit + 1, 10 << 30 >> 3, 0xffffffff} {
		src := binary.AppendUvarint(nil, size)
		var b *Buffer
		var err error
		allocs := testing.AllocsPerRun(100, func() { b, err = br.DecodeSnappy(src) })
		if b != nil || err != ErrDecodedTooLarge {
			t.Errorf("DecodeSnappy(header of %d) = %v, %v; want nil, ErrDecodedTooLarge", size, b, err)
		}
		if allocs != 0 {
			t.Errorf("DecodeSnappy(header of %d) allocates %v times, want 0", size, allocs)
		}
	}
	var zero BodyReader // defaults to DefaultMaxDecodedSize
	if _, err := zero.DecodeSnappy(binary.AppendUvarint(nil, DefaultMaxDecodedSize+1)); err != ErrDecodedTooLarge {
		t.Errorf("BodyReader{}.DecodeSnappy(header of DefaultMaxDecodedSize+1) = %v, want ErrDecodedTooLarge", err)
	}
}

func TestDecodeSnappyCorrupt(t *testing.T) {
	valid := snappy.Encode(nil, bodyHalfCompressible(10000))
	cases := []struct {
		name string
		src  []byte
	}{
		{"empty", nil},
		{"unterminated-varint", []byte{0x80}},
		{"varint-over-32-bits", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
		{"header-only", []byte{10}},
		{"literal-past-end", []byte{4, 0x0c, 'a', 'b'}},
		{"copy-before-start", []byte{8, 0x01, 0x04}},
		{"shorter-than-header", []byte{8, 0x0c, 'a', 'b', 'c', 'd'}},
		{"longer-than-header", []byte{2, 0x0c, 'a', 'b', 'c', 'd'}},
		{"truncated", valid[:len(valid)-1]},
		{"extra-byte", append(bytes.Clone(valid), 0)},
		// s2's "repeat offset" copy (offset 0): Prometheus's receiver
		// middleware, decoding with klauspost/compress/snappy, accepts it;
		// standard snappy does not.
		{"repeat-offset", []byte{12, 0x0c, 'a', 'b', 'c', 'd', 0x01, 0x04, 0x01, 0x00}},
	}
	br := bodyTestReader(t, BodyOptions{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := br.DecodeSnappy(c.src)
			if b != nil || !errors.Is(err, ErrSnappyCorrupt) || !errors.Is(err, snappy.ErrCorrupt) {
				t.Fatalf("DecodeSnappy(%x) = %v, %v; want an error wrapping ErrSnappyCorrupt and snappy.ErrCorrupt", c.src, b, err)
			}
		})
	}
	// The documented differences from Prometheus's receiver: it decodes
	// the repeat offset, and refuses a padded length header, which
	// DecodeSnappy reads as golang/snappy does.
	if got, err := kpsnappy.Decode(nil, cases[len(cases)-1].src); err != nil || string(got) != "abcdabcdabcd" {
		t.Errorf("klauspost snappy.Decode(repeat-offset) = %q, %v; the comment on DecodeSnappy is out of date", got, err)
	}
	padded := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00} // 0 in 6 bytes
	if b, err := br.DecodeSnappy(padded); err != nil || len(b.B) != 0 {
		t.Errorf("DecodeSnappy(%x) = %v, want an empty body, as golang/snappy decodes it", padded, err)
	}
	// klauspost/compress refuses it from v1.20 on, and v1.18 (which
	// Prometheus v0.309.1 requires) decodes it as golang/snappy does: the
	// module graph a program builds with decides which.
	if got, err := kpsnappy.Decode(nil, padded); err == nil && len(got) != 0 {
		t.Errorf("klauspost snappy.Decode(%x) = %x, want an error or an empty body; the comment on DecodeSnappy is out of date", padded, got)
	}
	// Flipping any byte of a valid block never panics, and whatever it
	// decodes to is what snappy.Decode gives.
	for i := range valid {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			src := bytes.Clone(valid)
			src[i] ^= x
			b, err := br.DecodeSnappy(src)
			want, wantErr := snappy.Decode(nil, src)
			if (err == nil) != (wantErr == nil) || (err == nil && !bytes.Equal(b.B, want)) {
				t.Fatalf("DecodeSnappy(valid with byte %d ^= %#x) = %v, snappy.Decode gives error %v", i, x, err, wantErr)
			}
			br.Release(b)
		}
	}
}

func TestReadRequestContentEncoding(t *testing.T) {
	data := []byte("a remote-write body")
	for _, c := range []struct {
		encoding string
		want     error
	}{
		{"", nil}, // taken to be snappy, as Prometheus's receiver does
		{"snappy", nil},
		{"Snappy", nil},
		{"gzip", ErrContentEncoding},
		{"identity", ErrContentEncoding},
		{"zstd", ErrContentEncoding},
	} {
		t.Run(c.encoding, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(snappy.Encode(nil, data)))
			if c.encoding != "" {
				req.Header.Set("Content-Encoding", c.encoding)
			}
			br := bodyTestReader(t, BodyOptions{})
			b, err := br.ReadRequest(req)
			if err != c.want {
				t.Fatalf("ReadRequest(Content-Encoding %q) = %v, want %v", c.encoding, err, c.want)
			}
			if err == nil && string(b.B) != string(data) {
				t.Fatalf("ReadRequest(Content-Encoding %q) = %q, want %q", c.encoding, b.B, data)
			}
		})
	}
	// A client request without a body.
	req, err := http.NewRequest(http.MethodPost, "http://example.com/", nil)
	if err != nil {
		t.Fatal(err)
	}
	br := bodyTestReader(t, BodyOptions{})
	if _, err := br.ReadRequest(req); !errors.Is(err, ErrSnappyCorrupt) {
		t.Errorf("ReadRequest(request without a body) = %v, want ErrSnappyCorrupt (an empty block)", err)
	}
}

// TestReadRequestCaptured posts the captured remote-write bodies to a real
// HTTP server on 127.0.0.1, with their Content-Length and chunked, and
// compares what ReadRequest gives with snappy.Decode of the file and with
// what Prometheus's own receiver middleware gives.
func TestReadRequestCaptured(t *testing.T) {
	br := bodyTestReader(t, BodyOptions{})
	type result struct {
		body          []byte
		contentLength int64
		err           error
	}
	results := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := br.ReadRequest(r)
		res := result{contentLength: r.ContentLength, err: err}
		if err == nil {
			res.body = bytes.Clone(b.B)
			br.Release(b)
			w.WriteHeader(http.StatusNoContent)
		} else {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
		results <- res
	}))
	defer srv.Close()

	for _, version := range []int{1, 2} {
		for _, path := range rwtest.Files(t, version) {
			raw, header := rwtest.Raw(t, path)
			want := rwtest.Body(t, path)
			t.Run(filepath.Base(path)+"/prometheus-middleware", func(t *testing.T) {
				req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(raw))
				req.Header = header.Clone()
				var got []byte
				next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
					got, _ = io.ReadAll(r.Body)
				})
				remoteapi.SnappyDecodeMiddleware(slog.New(slog.DiscardHandler))(next).ServeHTTP(httptest.NewRecorder(), req)
				if !bytes.Equal(got, want) {
					t.Fatalf("Prometheus's SnappyDecodeMiddleware gives %d bytes, snappy.Decode %d", len(got), len(want))
				}
			})
			for _, chunked := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/chunked=%t", filepath.Base(path), chunked), func(t *testing.T) {
					var body io.Reader = bytes.NewReader(raw)
					wantLength := int64(len(raw))
					if chunked {
						body, wantLength = bodyOnlyReader{body}, -1 // net/http cannot tell its length
					}
					req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/write", body)
					if err != nil {
						t.Fatal(err)
					}
					req.Header = header.Clone()
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					res := <-results
					if res.err != nil || res.contentLength != wantLength {
						t.Fatalf("ReadRequest(Content-Length %d) = %v, want the body with Content-Length %d", res.contentLength, res.err, wantLength)
					}
					if !bytes.Equal(res.body, want) {
						t.Fatalf("ReadRequest(%s) = %d bytes, want the %d of snappy.Decode", path, len(res.body), len(want))
					}
				})
			}
		}
	}
	// http.Post sends no Content-Encoding; like Prometheus's receiver,
	// ReadRequest takes the body as snappy.
	path := rwtest.Files(t, 1)[0]
	raw, _ := rwtest.Raw(t, path)
	resp, err := http.Post(srv.URL, "application/x-protobuf", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if res := <-results; res.err != nil || !bytes.Equal(res.body, rwtest.Body(t, path)) {
		t.Errorf("ReadRequest(http.Post of %s) = %v, want the decoded body", path, res.err)
	}
}

// TestReadRequestRemoteWriteClient receives the captured requests as sent
// by Prometheus's remote-write client library (client_golang/exp), which
// marshals and snappy-encodes them itself.
func TestReadRequestRemoteWriteClient(t *testing.T) {
	br := bodyTestReader(t, BodyOptions{})
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := br.ReadRequest(r)
		if err != nil {
			got <- nil
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- bytes.Clone(b.B)
		br.Release(b)
		for _, h := range []string{"Samples", "Histograms", "Exemplars"} {
			w.Header().Set("X-Prometheus-Remote-Write-"+h+"-Written", "1")
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	api, err := remoteapi.NewAPI(srv.URL, remoteapi.WithAPIHTTPClient(srv.Client()),
		remoteapi.WithAPIBackoff(remoteapi.BackoffConfig{Min: time.Millisecond, Max: time.Millisecond, MaxRetries: 1}))
	if err != nil {
		t.Fatal(err)
	}
	type marshaler interface{ Marshal() ([]byte, error) }
	for _, version := range []int{1, 2} {
		for _, path := range rwtest.Files(t, version) {
			t.Run(filepath.Base(path), func(t *testing.T) {
				var msg marshaler = rwtest.DecodeV1(t, path)
				msgType := remoteapi.WriteV1MessageType
				if version == 2 {
					msg, msgType = rwtest.DecodeV2(t, path), remoteapi.WriteV2MessageType
				}
				want, err := msg.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := api.Write(context.Background(), msgType, msg); err != nil {
					t.Fatalf("remote-write client: %v", err)
				}
				if b := <-got; !bytes.Equal(b, want) {
					t.Fatalf("ReadRequest = %d bytes, want the %d the client marshaled", len(b), len(want))
				}
			})
		}
	}
}

// TestReadBodyHTTPBroken sends malformed or hostile requests over a raw TCP
// connection to a real HTTP server and checks what its handler's ReadBody
// reports.
func TestReadBodyHTTPBroken(t *testing.T) {
	br := bodyTestReader(t, BodyOptions{MaxBodySize: 4 << 10})
	errs := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := br.ReadBody(r.Body, r.ContentLength)
		br.Release(b)
		errs <- err
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	for _, c := range []struct {
		name    string
		request string
		want    error
	}{
		{"short", "Content-Length: 100\r\n\r\n" + strings.Repeat("x", 50), ErrBodyTruncated},
		{"short-chunked", "Transfer-Encoding: chunked\r\n\r\n10\r\n0123456789", ErrBodyTruncated},
		{"hostile-length", "Content-Length: 10737418240\r\n\r\nxx", ErrBodyTooLarge},
		{"over-limit-chunked", "Transfer-Encoding: chunked\r\n\r\n1001\r\n" + strings.Repeat("x", 4<<10+1) + "\r\n0\r\n\r\n", ErrBodyTooLarge},
		{"at-limit-chunked", "Transfer-Encoding: chunked\r\n\r\n1000\r\n" + strings.Repeat("x", 4<<10) + "\r\n0\r\n\r\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\n"+c.request); err != nil {
				t.Fatal(err)
			}
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errs:
				if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
					t.Errorf("ReadBody(%s) = %v, want %v", c.name, err, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the handler did not run")
			}
		})
	}
}

// TestBodyAllocs asserts the steady-state allocation contracts: none, with
// or without an in-flight limit, also for a body announced above
// MaxPreallocSize.
func TestBodyAllocs(t *testing.T) {
	if bodyRaceEnabled() {
		t.Skip("sync.Pool drops buffers at random under the race detector")
	}
	const size = 1 << 20
	const large = 3<<20 + 5 // above DefaultMaxPreallocSize
	data := bodyRandom(large)
	compressed := snappy.Encode(nil, bodyHalfCompressible(size))
	for _, opts := range []BodyOptions{{}, {MaxInflightBytes: 1 << 30}} {
		br := bodyTestReader(t, opts)
		rd := bytes.NewReader(nil)
		var r io.Reader = bodyOnlyReader{rd} // converted once: the conversion allocates
		req := httptest.NewRequest(http.MethodPost, "/api/v1/write", nil)
		req.Header.Set("Content-Encoding", "snappy")
		body := io.NopCloser(r)
		for _, c := range []struct {
			name string
			f    func() (*Buffer, error)
		}{
			{"ReadBody/known", func() (*Buffer, error) { rd.Reset(data[:size]); return br.ReadBody(r, size) }},
			{"ReadBody/known-odd", func() (*Buffer, error) { rd.Reset(data[:size-3]); return br.ReadBody(r, size-3) }},
			{"ReadBody/untrusted", func() (*Buffer, error) { rd.Reset(data); return br.ReadBody(r, large) }},
			{"ReadBody/unknown", func() (*Buffer, error) { rd.Reset(data[:size]); return br.ReadBody(r, -1) }},
			{"DecodeSnappy", func() (*Buffer, error) { return br.DecodeSnappy(compressed) }},
			{"ReadRequest", func() (*Buffer, error) {
				rd.Reset(compressed)
				req.Body, req.ContentLength = body, int64(len(compressed))
				return br.ReadRequest(req)
			}},
		} {
			t.Run(fmt.Sprintf("%s/inflight=%d", c.name, opts.MaxInflightBytes), func(t *testing.T) {
				allocs := testing.AllocsPerRun(100, func() {
					b, err := c.f()
					if err != nil {
						t.Fatal(err)
					}
					br.Release(b)
				})
				if allocs != 0 {
					t.Errorf("%s allocates %v times in the steady state, want 0", c.name, allocs)
				}
			})
		}
		if got := br.inflight.Load(); got != 0 {
			t.Errorf("after the runs, %d bytes are charged, want 0", got)
		}
	}
}

var bodySink []byte

// TestReadBodyFresh checks the memory of a read the pool cannot serve, of a
// trusted Content-Length: the Buffer and exactly the body, 4 KiB at least.
// (TestReadBodyGrowingFresh checks untrusted ones.)
func TestReadBodyFresh(t *testing.T) {
	for _, size := range []int{0, 1, 129, 4 << 10, 4<<10 + 1, 1 << 20, 1<<20 + 3, 10 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			br := bodyTestReader(t, BodyOptions{MaxPreallocSize: DefaultMaxBodySize})
			data := bodyRandom(size)
			rd := bytes.NewReader(data)
			var r io.Reader = bodyOnlyReader{rd}
			// A GC empties the sync.Pools, and the first Get after it
			// allocates the pool's per-P array: keep the GC out.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			allocs := testing.AllocsPerRun(10, func() {
				rd.Reset(data)
				if _, err := br.ReadBody(r, int64(size)); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 2 {
				t.Errorf("ReadBody(%d bytes) without Release allocates %v times, want 2 (the Buffer and its bytes)", size, allocs)
			}
			// TotalAlloc counts other goroutines' allocations too: take
			// the least of a few measurements.
			leastAlloc := func(f func()) uint64 {
				least := uint64(math.MaxUint64)
				for range 5 {
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					f()
					runtime.ReadMemStats(&after)
					least = min(least, after.TotalAlloc-before.TotalAlloc)
				}
				return least
			}
			// What make([]byte, n) costs: Go's allocator rounds up to a
			// size class below 32 KiB, to a page above.
			want := max(size, bodyMinSize)
			made := leastAlloc(func() { bodySink = make([]byte, want) })
			var b *Buffer
			got := leastAlloc(func() {
				rd.Reset(data)
				var err error
				if b, err = br.ReadBody(r, int64(size)); err != nil {
					t.Fatal(err)
				}
			})
			if got < made || got > made+64 {
				t.Errorf("ReadBody(%d bytes) without Release allocated %d bytes, want those of make([]byte, %d), %d, and the Buffer", size, got, want, made)
			}
			if size >= 32<<10 && float64(made) > 1.01*float64(size) {
				t.Errorf("make([]byte, %d) allocated %d bytes, more than 1%% over", size, made)
			}
			if cap(b.B) != int(want) {
				t.Errorf("ReadBody(%d bytes) = cap %d, want %d", size, cap(b.B), want)
			}
		})
	}
}

// TestBodyPoolClasses checks how the pool's classes serve a BodyReader (see
// the comment on BodyReader.pool; internal/bufpool tests the classes
// themselves).
func TestBodyPoolClasses(t *testing.T) {
	if bodyRaceEnabled() {
		t.Skip("sync.Pool drops buffers at random under the race detector")
	}
	br := bodyTestReader(t, BodyOptions{})
	// A buffer of an odd length serves that length again.
	b := bodyBuffer(t, br, 5000)
	if cap(b.B) != 5000 {
		t.Fatalf("fresh buffer(5000) = cap %d, want 5000", cap(b.B))
	}
	br.Release(b)
	if b2 := bodyBuffer(t, br, 5000); b2 != b {
		t.Errorf("buffer(5000) after Release = a new buffer, want the released one")
	}
	// A longer one that looks in its class (4096 to 5119 bytes) does not
	// fit it: rounded up to the class above (5120), it then serves the
	// whole of that class.
	br.Release(b)
	b3 := bodyBuffer(t, br, 5100)
	if cap(b3.B) != 5120 {
		t.Errorf("buffer(5100) with a 5000-byte buffer pooled = cap %d, want 5120", cap(b3.B))
	}
	br.Release(b3)
	for _, n := range []int{4097, 5001, 5120} {
		b4 := bodyBuffer(t, br, n)
		if b4 != b3 || len(b4.B) != n {
			t.Errorf("buffer(%d) = a new buffer, want the 5120-byte one", n)
		}
		br.Release(b4)
	}
	// Bodies shorter than bodyMinSize share its buffers.
	br.drain()
	b5 := bodyBuffer(t, br, 100)
	if cap(b5.B) != bodyMinSize {
		t.Errorf("fresh buffer(100) = cap %d, want %d", cap(b5.B), bodyMinSize)
	}
	br.Release(b5)
	if b6 := bodyBuffer(t, br, 3000); b6 != b5 || len(b6.B) != 3000 {
		t.Errorf("buffer(3000) = a new buffer, want the %d-byte one", bodyMinSize)
	}
	// A buffer grown past the limits is not pooled.
	small := bodyTestReader(t, BodyOptions{MaxBodySize: 8 << 10, MaxDecodedSize: 8 << 10})
	big := &Buffer{B: make([]byte, 16<<10)}
	small.Release(big)
	if b := bodyBuffer(t, small, 16<<10); b == big {
		t.Errorf("Release kept a buffer larger than both limits")
	}
	small.Release(nil) // ignored
}

// TestBodyReaderConcurrent reads bodies of many sizes from many goroutines
// through one BodyReader and checks every byte, so that a buffer handed out
// twice is caught (and, under -race, any data race).
func TestBodyReaderConcurrent(t *testing.T) {
	br := bodyTestReader(t, BodyOptions{})
	sizes := []int{0, 1, 129, 4 << 10, 5000, 6000, 8 << 10, 70000, 1 << 20}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				size := sizes[(g+i)%len(sizes)]
				data := bodyRandom(size + g)[g:]
				announced := int64(size)
				if i%3 == 0 {
					announced = -1
				}
				b, err := br.ReadBody(bodyOnlyReader{bytes.NewReader(data)}, announced)
				if err != nil {
					t.Errorf("ReadBody(%d bytes, %d) = %v", size, announced, err)
					return
				}
				runtime.Gosched()
				if !bytes.Equal(b.B, data) {
					t.Errorf("ReadBody(%d bytes, %d) = other bytes: a buffer was shared", size, announced)
					return
				}
				if i%2 == 0 {
					d, err := br.DecodeSnappy(snappy.Encode(nil, b.B))
					if err != nil || !bytes.Equal(d.B, data) {
						t.Errorf("DecodeSnappy(Encode(%d bytes)) = %v or other bytes", size, err)
						return
					}
					br.Release(d)
				}
				br.Release(b)
			}
		})
	}
	wg.Wait()
}
