package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// slowServer serves the receiver's routes on loopback with the command's
// server (newServer) and the timeouts of c, over a receiver with the
// in-flight limit inflight. It returns the address.
func slowServer(t *testing.T, c config, inflight int64) string {
	t.Helper()
	db := newBenchDB(t)
	r := ingest.NewWriteHandlerV2(nil, db, ingest.Options{MaxInflightBytes: inflight})
	srv := newServer(c, newMux(r, db, prometheus.NewRegistry()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// slowResult is how a connection of the attack ended.
type slowResult struct {
	status  int // 0 if the server closed the connection without a response
	elapsed time.Duration
}

// slowConn sends raw on a new connection to addr and reports on results the
// status of the response (or 0 if the server closes without one) and when
// it came. It returns the connection, which the test's end closes.
func slowConn(t *testing.T, addr string, raw []byte, results chan<- slowResult) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	start := time.Now()
	if _, err := conn.Write(raw); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		res := slowResult{}
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			res.status = resp.StatusCode
		}
		res.elapsed = time.Since(start)
		results <- res
	}()
	return conn
}

// heapInuse returns the live heap after two collections: a sync.Pool
// (the body reader's) keeps what it holds through one.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestSlowBodyAttack is the attack of issue 17: 16 connections to the
// receiver's HTTP server each announce a body of 32 MiB-1 and send 3 bytes.
// While they hang, the receiver's heap must stay under the in-flight limit
// (or, without one, under 16 buffers of decode.DefaultMaxPreallocSize) plus
// a small constant; the requests the limit cannot hold are answered 503 at
// once; and the read timeout closes the others, after which the receiver
// serves again. Before the body reader grew untrusted bodies as they
// arrive, the same 16 requests held 512 MB (16 times 32 MiB) until their
// clients gave up, the server having no read timeout.
func TestSlowBodyAttack(t *testing.T) {
	const (
		conns     = 16
		announced = decode.DefaultMaxBodySize - 1
		pinned    = decode.DefaultMaxPreallocSize // what each hanging request holds
		slack     = 8 << 20                       // connections, goroutines, the TSDB's own
	)
	timeouts := config{readHeaderTimeout: time.Second, readTimeout: 1500 * time.Millisecond, idleTimeout: time.Second}
	attack := append(difftest.RawPost(announced, difftest.ContentTypeV1), "abc"...)
	for _, c := range []struct {
		inflight int64
		hang     int // requests the budget holds; the others are answered 503
	}{
		{0, conns},
		{8 * pinned, 8},
	} {
		t.Run(fmt.Sprintf("inflight=%d", c.inflight), func(t *testing.T) {
			addr := slowServer(t, timeouts, c.inflight)
			before := heapInuse()
			results := make(chan slowResult, conns)
			for range conns {
				slowConn(t, addr, attack, results)
			}
			// The requests over the limit are answered at once.
			var early []slowResult
			for range conns - c.hang {
				early = append(early, <-results)
			}
			for _, res := range early {
				if res.status != http.StatusServiceUnavailable || res.elapsed > timeouts.readTimeout/2 {
					t.Errorf("a request over the in-flight limit: status %d after %v, want 503 at once", res.status, res.elapsed)
				}
			}
			// Let the hanging ones reach their buffers, then weigh the heap.
			time.Sleep(300 * time.Millisecond)
			held := heapInuse()
			most := uint64(c.hang*pinned + slack)
			if c.inflight > 0 {
				most = uint64(c.inflight + slack)
			}
			if held > before && held-before > most {
				t.Errorf("with %d requests of %d bytes announced and 3 sent hanging, the heap grew by %d MB, want at most %d MB", c.hang, announced, (held-before)>>20, most>>20)
			}
			t.Logf("heap %d MB before the attack, %d MB while %d requests hang", before>>20, held>>20, c.hang)
			// The read timeout ends the others.
			for range c.hang {
				select {
				case res := <-results:
					if res.status == http.StatusNoContent || res.elapsed < timeouts.readTimeout/2 {
						t.Errorf("a hanging request ended with status %d after %v, want an error at the read timeout (%v)", res.status, res.elapsed, timeouts.readTimeout)
					}
				case <-time.After(timeouts.readTimeout + 5*time.Second):
					t.Fatalf("a hanging request was not ended by the read timeout (%v)", timeouts.readTimeout)
				}
			}
			// The budget is whole again: as many attackers as before now
			// hang rather than get 503; their clients then give up.
			again := make(chan slowResult, c.hang)
			var hanging []net.Conn
			for range c.hang {
				hanging = append(hanging, slowConn(t, addr, attack, again))
			}
			time.Sleep(300 * time.Millisecond)
			select {
			case res := <-again:
				t.Errorf("after the read timeouts, a request the budget should hold was answered %d after %v", res.status, res.elapsed)
			default:
			}
			for _, conn := range hanging {
				conn.Close()
			}
			for range c.hang {
				<-again
			}
			if code := postValid(t, addr); code != http.StatusNoContent {
				t.Errorf("a valid request after the attack: status %d, want 204", code)
			}
			// The clients' side of a closed connection returns before the
			// server's handler has read its end and let go of its buffer:
			// the heap must come back within a few seconds, not at once.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				after := heapInuse()
				if after <= before || after-before <= slack {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("5 s after the attack the heap is %d MB over what it was before, want at most %d MB", (after-before)>>20, slack>>20)
					break
				}
			}
		})
	}
}

// postValid sends a valid remote-write request to addr and returns its
// status.
func postValid(t *testing.T, addr string) int {
	t.Helper()
	body := difftest.V1Step(t, []difftest.Series{difftest.FloatSeries(time.Now().UnixMilli(), 1, "__name__", "still_serving")}).Body
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/write", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", difftest.ContentTypeV1)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the receiver no longer serves: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServerTimeouts checks that the command's server closes a connection
// whose headers do not come in (-read-header-timeout) and a keep-alive
// connection left idle (-idle-timeout).
func TestServerTimeouts(t *testing.T) {
	c := config{readHeaderTimeout: 500 * time.Millisecond, readTimeout: 2 * time.Second, idleTimeout: 700 * time.Millisecond}
	addr := slowServer(t, c, 0)
	valid := difftest.V1Step(t, []difftest.Series{difftest.FloatSeries(time.Now().UnixMilli(), 1, "__name__", "a")}).Body
	for _, tc := range []struct {
		name  string
		raw   []byte
		reply bool // a response comes before the connection closes
		after time.Duration
	}{
		{"headers-unfinished", []byte("POST /api/v1/write HTTP/1.1\r\nHost: receiver\r\n"), false, c.readHeaderTimeout},
		{"idle-keep-alive", append(difftest.RawPost(int64(len(valid)), difftest.ContentTypeV1), valid...), true, c.idleTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Write(tc.raw); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			start := time.Now()
			if tc.reply {
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != http.StatusNoContent {
					t.Fatalf("a valid request: %v, %v; want 204", resp, err)
				}
				resp.Body.Close()
				start = time.Now()
			}
			_, err = br.ReadByte()
			elapsed := time.Since(start)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server kept the connection open past 10s, want it closed after %v", tc.after)
			}
			// A request answered before the timeout would have been
			// answered at once; the connection closes near the timeout.
			if elapsed < tc.after*8/10 || elapsed > tc.after+3*time.Second {
				t.Errorf("the server closed the connection after %v (%v), want about %v", elapsed, err, tc.after)
			}
		})
	}
}

// TestSlowBodyAttackTenants is TestSlowBodyAttack across tenants: the
// tenants' Receivers share one body reader (Options.BodyReader), as serve
// builds them, so that the in-flight limit bounds the process, not each
// tenant. Attackers that each name a tenant of their own hang up to the
// limit together, and the others are answered 503. With a body reader per
// tenant each would have had a budget of its own, and all would hang.
func TestSlowBodyAttackTenants(t *testing.T) {
	const (
		conns     = 8
		hang      = 4
		announced = decode.DefaultMaxBodySize - 1
		pinned    = decode.DefaultMaxPreallocSize
	)
	ro := ingest.Options{MaxInflightBytes: hang * pinned}
	ro.BodyReader = newBodyReader(ro)
	tt := newTestTenants(t, tenantOptions{Receiver: ro})
	c := config{readHeaderTimeout: time.Second, readTimeout: 3 * time.Second, idleTimeout: time.Second}
	srv := newServer(c, tt)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	t.Cleanup(func() { _ = srv.Close() })
	// Every tenant is opened first, so that the attack measures the body
	// reader and not the opening of TSDBs.
	for i := range conns {
		req := difftest.V1Step(t, []difftest.Series{difftest.FloatSeries(1_700_000_000_000, 1, "__name__", "up")}).Request()
		req.Header.Set(ingest.DefaultTenantHeader, fmt.Sprintf("t%d", i))
		w := httptest.NewRecorder()
		tt.ServeHTTP(w, req)
		if w.Code != http.StatusNoContent {
			t.Fatalf("opening tenant t%d: status %d: %s", i, w.Code, w.Body)
		}
	}
	results := make(chan slowResult, conns)
	for i := range conns {
		raw := fmt.Appendf(nil, "POST /api/v1/write HTTP/1.1\r\nHost: receiver\r\n%s: t%d\r\nContent-Type: %s\r\nContent-Encoding: snappy\r\nContent-Length: %d\r\n\r\nabc",
			ingest.DefaultTenantHeader, i, difftest.ContentTypeV1, announced)
		slowConn(t, ln.Addr().String(), raw, results)
	}
	for range conns - hang {
		select {
		case res := <-results:
			if res.status != http.StatusServiceUnavailable {
				t.Errorf("a request over the shared in-flight limit: status %d after %v, want 503", res.status, res.elapsed)
			}
		case <-time.After(c.readTimeout / 2):
			t.Fatalf("fewer than %d of %d requests of different tenants were refused before the read timeout: the tenants do not share the in-flight limit", conns-hang, conns)
		}
	}
	for range hang {
		if res := <-results; res.status == http.StatusServiceUnavailable {
			t.Errorf("more than %d requests answered 503: the budget holds %d", conns-hang, hang)
		}
	}
}
