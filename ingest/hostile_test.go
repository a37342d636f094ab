package ingest_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// Limits of the handler under attack.
const (
	hostileMaxBody    = 4 << 20
	hostileMaxDecoded = 16 << 20
)

// hostileServer is a WriteHandler on loopback with body limits, and label
// limits if limits is true.
func hostileServer(t *testing.T, limits bool) (*httptest.Server, *ingest.WriteHandler) {
	t.Helper()
	db := newBenchDB(t)
	opts := ingest.Options{MaxBodySize: hostileMaxBody, MaxDecodedSize: hostileMaxDecoded}
	if limits {
		opts.MaxLabelsPerSeries, opts.MaxLabelValueLength, opts.MaxLabelNameLength = 100, 64<<10, 1<<10
	}
	r := ingest.NewWriteHandlerV2(nil, db, opts)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv, r
}

// rawExchange writes raw to a new connection to srv, half-closes it if
// closeWrite, and reads the responses until the server closes the
// connection or n responses have come.
func rawExchange(t *testing.T, srv *httptest.Server, raw []byte, closeWrite bool, n int) []*http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write(raw); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	br := bufio.NewReader(conn)
	var out []*http.Response
	for len(out) < n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out = append(out, resp)
	}
	return out
}

// checkServing sends a valid request from another client and expects 204.
func checkServing(t *testing.T, srv *httptest.Server, ts int64) {
	t.Helper()
	body := difftest.V1Step(t, []difftest.Series{difftest.FloatSeries(ts, 1, "__name__", "still_serving")}).Body
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", difftest.ContentTypeV1)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("the handler no longer serves: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a valid request after the attack: status %d, want 204", resp.StatusCode)
	}
}

// TestHostile sends what a hostile or broken client sends, each to a
// WriteHandler on loopback with a 4 MiB body limit and a 16 MiB decoded limit,
// and checks the status, that serving the request allocated no more than
// its bound (runtime.MemStats.TotalAlloc, the whole process's), and that
// the handler still serves valid requests afterwards.
func TestHostile(t *testing.T) {
	ts := time.Now().Add(-time.Hour).UnixMilli()
	bigValue := strings.Repeat("v", 10<<20)
	many := make([]string, 0, 2*100_000+2)
	many = append(many, "__name__", "many_labels")
	for i := range 100_000 {
		many = append(many, fmt.Sprintf("l%06d", i), "v")
	}
	valid := difftest.V1Step(t, []difftest.Series{difftest.FloatSeries(ts, 1, "__name__", "a")}).Body
	validV2 := difftest.EncodeV2(t, []difftest.Series{difftest.FloatSeries(ts, 1, "__name__", "a")})

	cases := []struct {
		name   string
		limits bool // the handler has label limits
		// Either req (sent with srv.Client) or raw bytes on a connection.
		req        func(url string) *http.Request
		raw        []byte
		closeWrite bool
		want       int
		maxAlloc   uint64 // bytes the exchange may allocate
	}{
		{
			name: "Content-Length 10 GiB", raw: append(difftest.RawPost(10<<30, difftest.ContentTypeV1), valid...),
			want: http.StatusRequestEntityTooLarge, maxAlloc: 1 << 20,
		},
		{
			name: "snappy header claims 1 TiB", req: post(difftest.SnappyHeader(1<<40), difftest.ContentTypeV1),
			want: http.StatusBadRequest, maxAlloc: 1 << 20,
		},
		{
			name: "snappy header claims 1 byte over the decoded limit", req: post(difftest.SnappyHeader(hostileMaxDecoded+1), difftest.ContentTypeV1),
			want: http.StatusBadRequest, maxAlloc: 1 << 20,
		},
		{
			name: "body over the limit, length unknown", req: chunked(bytes.Repeat([]byte{0}, hostileMaxBody+1)),
			want: http.StatusRequestEntityTooLarge, maxAlloc: 4 * hostileMaxBody, // the body itself, written by the client in this process
		},
		{
			name: "truncated protobuf", req: post(difftest.Compress(validV2[:len(validV2)-2]), difftest.ContentTypeV2),
			want: http.StatusBadRequest, maxAlloc: 1 << 20,
		},
		{
			name: "garbage protobuf", req: post(difftest.Compress([]byte("\x0a\xff\xff\xff\xff\x0fgarbage")), difftest.ContentTypeV1),
			want: http.StatusBadRequest, maxAlloc: 1 << 20,
		},
		{
			name: "symbol reference out of range", req: post(difftest.RawV2(t, ts, map[int][]uint32{0: {0, 1 << 30}}, []string{"__name__", "a"}).Body, difftest.ContentTypeV2),
			want: http.StatusBadRequest, maxAlloc: 1 << 20,
		},
		{
			name: "label value of 10 MiB, limited", limits: true, req: post(difftest.RawV1(t, ts, []string{"__name__", "big", "v", bigValue}).Body, difftest.ContentTypeV1),
			want: http.StatusBadRequest, maxAlloc: hostileMaxDecoded + hostileMaxBody + 1<<20,
		},
		{
			// Prometheus accepts it; so does the handler without limits,
			// copying the value once for the TSDB and once to look it up.
			name: "label value of 10 MiB, no limits", req: post(difftest.RawV1(t, ts, []string{"__name__", "big", "v", bigValue}).Body, difftest.ContentTypeV1),
			want: http.StatusNoContent, maxAlloc: 4 * hostileMaxDecoded,
		},
		{
			name: "100k labels in one series, limited", limits: true, req: post(difftest.RawV1(t, ts, many).Body, difftest.ContentTypeV1),
			want: http.StatusBadRequest, maxAlloc: 4 * hostileMaxDecoded,
		},
		{
			name: "body shorter than its Content-Length", raw: append(difftest.RawPost(int64(len(valid)+100), difftest.ContentTypeV1), valid...), closeWrite: true,
			want: http.StatusBadRequest, maxAlloc: 1 << 20,
		},
		{
			name: "body longer than its Content-Length", req: func(url string) *http.Request {
				r := post(append(bytes.Clone(valid), "trailing"...), difftest.ContentTypeV1)(url)
				r.ContentLength = int64(len(valid))
				return r
			},
			want: http.StatusBadRequest, maxAlloc: 1 << 20,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := hostileServer(t, c.limits)
			checkServing(t, srv, ts) // warm the pools, so that they are not counted
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var got int
			if c.raw != nil {
				resps := rawExchange(t, srv, c.raw, c.closeWrite, 1)
				if len(resps) == 0 {
					t.Fatal("no response")
				}
				got = resps[0].StatusCode
			} else {
				if c.name == "body longer than its Content-Length" {
					// The client cannot send more than it announces; serve
					// the request in process, as a proxy might pass it on.
					rec := httptest.NewRecorder()
					h := srv.Config.Handler
					h.ServeHTTP(rec, c.req(srv.URL))
					got = rec.Code
				} else {
					resp, err := srv.Client().Do(c.req(srv.URL))
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					got = resp.StatusCode
				}
			}
			runtime.ReadMemStats(&after)
			if got != c.want {
				t.Errorf("status %d, want %d", got, c.want)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("status %d, %d bytes allocated", got, alloc)
			if alloc > c.maxAlloc {
				t.Errorf("serving it allocated %d bytes, want at most %d", alloc, c.maxAlloc)
			}
			checkServing(t, srv, ts+1)
		})
	}
}

// TestHostileSlowClient holds a request open, its body unfinished, and
// checks that other clients are served meanwhile; then a body that goes on
// past its Content-Length over the wire: net/http reads the announced
// bytes, which the handler writes, and answers the rest, parsed as a next
// request, with 400.
func TestHostileSlowClient(t *testing.T) {
	srv, r := hostileServer(t, false)
	ts := time.Now().Add(-time.Hour).UnixMilli()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(append(difftest.RawPost(1<<20, difftest.ContentTypeV1), "partial"...)); err != nil {
		t.Fatal(err)
	}
	checkServing(t, srv, ts)
	conn.Close()

	body := difftest.V1Step(t, []difftest.Series{difftest.FloatSeries(ts+1, 1, "__name__", "longer")}).Body
	raw := append(difftest.RawPost(int64(len(body)), difftest.ContentTypeV1), body...)
	raw = append(raw, "garbage after the body\r\n\r\n"...)
	resps := rawExchange(t, srv, raw, true, 2)
	if len(resps) != 2 || resps[0].StatusCode != http.StatusNoContent || resps[1].StatusCode != http.StatusBadRequest {
		var codes []int
		for _, r := range resps {
			codes = append(codes, r.StatusCode)
		}
		t.Errorf("statuses %v, want [204 400]", codes)
	}
	if s := r.Stats(); s.Samples != 2 {
		t.Errorf("samples written = %d, want 2", s.Samples)
	}
}

// post returns a request maker for a snappy body of the given type.
func post(body []byte, contentType string) func(url string) *http.Request {
	return func(url string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		r.Header.Set("Content-Encoding", "snappy")
		r.Header.Set("Content-Type", contentType)
		return r
	}
}

// chunked returns a request maker that sends body without a
// Content-Length.
func chunked(body []byte) func(url string) *http.Request {
	return func(url string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, url, io.MultiReader(bytes.NewReader(body)))
		r.ContentLength = -1
		r.Header.Set("Content-Encoding", "snappy")
		r.Header.Set("Content-Type", difftest.ContentTypeV1)
		return r
	}
}
