package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/headerfile"
	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// captureStep is a request of TestCapture and whether it is captured.
type captureStep struct {
	name     string
	method   string
	header   http.Header
	body     []byte
	code     int    // the receiver's answer, with or without the capture
	captured string // the file name it is captured as, or ""
}

// TestCapture sends requests through a capturer in front of a WriteHandler
// and checks the files: the remote-write requests, until the limit, are
// written as testdata/remote-write holds them, body byte for byte and
// only the headers of captureHeaders; the others are not, and every
// request is answered as without the capture. A second capturer on the
// same directory goes on numbering, and counts the files there towards
// its limit.
func TestCapture(t *testing.T) {
	rw1, rw2 := rwtest.Files(t, 1), rwtest.Files(t, 2)
	raw := func(path string, extra ...string) (http.Header, []byte) {
		body, h := rwtest.Raw(t, path)
		for i := 0; i < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return h, body
	}
	const maxBody = 1 << 20
	h1, b1 := raw(rw1[0], "Authorization", "Bearer secret", "THANOS-TENANT", "team-a", "X-Other", "x")
	h2, b2 := raw(rw2[0])
	h3, b3 := raw(rw1[3])
	hGzip, _ := raw(rw1[0], "Content-Encoding", "gzip")
	hText, _ := raw(rw1[0], "Content-Type", "text/plain")
	hNoEnc, _ := raw(rw1[2])
	hNoEnc.Del("Content-Encoding")
	_, b4 := raw(rw1[2])
	big := bytes.Repeat([]byte{0}, maxBody+1)
	steps := []captureStep{
		{name: "rw1 with auth and tenant", header: h1, body: b1, code: 204, captured: "rw1-0001"},
		{name: "GET", method: http.MethodGet, header: h2, body: b2, code: 405},
		{name: "gzip", header: hGzip, body: b1, code: 415},
		{name: "text/plain", header: hText, body: b1, code: 415},
		{name: "over the body limit", header: h3, body: big, code: 413},
		{name: "rw2", header: h2, body: b2, code: 400, captured: "rw2-0002"}, // a partial write (TestDifferential)
		{name: "no Content-Encoding", header: hNoEnc, body: b4, code: 204, captured: "rw1-0003"},
		{name: "past the limit", header: h3, body: b3, code: 204},
	}

	dir := filepath.Join(t.TempDir(), "capture")
	run := func(t *testing.T, max int, steps []captureStep) *capturer {
		t.Helper()
		db := newBenchDB(t)
		r := ingest.NewWriteHandlerV2(nil, db, ingest.Options{MaxBodySize: maxBody})
		c, err := newCapturer(dir, max, maxBody, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		h := c.wrap(newMux(r, db, prometheus.NewRegistry()))
		for _, s := range steps {
			req := httptest.NewRequest(cmp.Or(s.method, http.MethodPost), "/api/v1/write", bytes.NewReader(s.body))
			req.Header = s.header.Clone()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != s.code {
				t.Errorf("%s: status %d, want %d: %.300s", s.name, w.Code, s.code, w.Body)
			}
		}
		if err := c.close(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("first", func(t *testing.T) {
		c := run(t, 3, steps)
		want := `# HELP ingestkit_receiver_capture_written_total Requests written to -capture-dir.
# TYPE ingestkit_receiver_capture_written_total counter
ingestkit_receiver_capture_written_total 3
`
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ingestkit_receiver_capture_written_total"); err != nil {
			t.Error(err)
		}
		checkCaptureDir(t, dir, steps)
	})
	t.Run("again", func(t *testing.T) {
		more := []captureStep{
			{name: "rw2 again", header: h2, body: b2, code: 400, captured: "rw2-0004"},
			{name: "past the limit", header: h3, body: b3, code: 204},
		}
		run(t, 4, more)
		checkCaptureDir(t, dir, append(slices.Clone(steps), more...))
	})
}

// checkCaptureDir checks that dir holds exactly the captured steps, and
// that readCaptureDir reads them back in order.
func checkCaptureDir(t *testing.T, dir string, steps []captureStep) {
	t.Helper()
	var want []string
	var wantSteps []captureStep
	for _, s := range steps {
		if s.captured != "" {
			want = append(want, s.captured+".headers", s.captured+".snappy")
			wantSteps = append(wantSteps, s)
		}
	}
	got := dirNames(t, dir)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	rs, err := readCaptureDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(wantSteps) {
		t.Fatalf("readCaptureDir: %d requests, want %d", len(rs), len(wantSteps))
	}
	for i, r := range rs {
		s := wantSteps[i]
		if r.name != s.captured || !bytes.Equal(r.body, s.body) {
			t.Errorf("request %d: %s, %d bytes; want %s, %d bytes as sent", i, r.name, len(r.body), s.captured, len(s.body))
		}
		for _, name := range captureHeaders {
			if g, w := r.header.Values(name), s.header.Values(name); !slices.Equal(g, w) {
				t.Errorf("%s: header %s = %q, want %q", r.name, name, g, w)
			}
		}
		for name := range r.header {
			if !slices.ContainsFunc(captureHeaders, func(h string) bool { return http.CanonicalHeaderKey(h) == name }) {
				t.Errorf("%s: header %s written, which the capture does not keep", r.name, name)
			}
		}
	}
}

// TestReadCaptureDir reads testdata/remote-write, written by a capture of
// a real Prometheus, in its order of arrival across both versions.
func TestReadCaptureDir(t *testing.T) {
	rs, err := readCaptureDir(rwtest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.name)
		if v := captureVersion(r.header); v != r.version {
			t.Errorf("%s: headers say version %d", r.name, v)
		}
	}
	want := []string{"rw1-0005", "rw2-0006", "rw2-0007", "rw1-0008", "rw1-0019", "rw2-0020", "rw2-0040", "rw1-0045"}
	if !slices.Equal(got, want) {
		t.Errorf("readCaptureDir(testdata) = %q, want %q", got, want)
	}
	if _, err := readCaptureDir(t.TempDir()); !errors.Is(err, errNoCaptured) {
		t.Errorf("readCaptureDir(empty dir) = %v, want errNoCaptured", err)
	}
}

// TestReadCaptureDirLimits checks that readCaptureDir refuses, with
// errCaptureTooLarge and without reading further, a body over
// maxCaptureBody, a .headers file over maxCaptureHeaders and bodies over
// the directory's limit in all, and reads a directory at those limits.
func TestReadCaptureDirLimits(t *testing.T) {
	body, header := rwtest.Raw(t, rwtest.Files(t, 1)[0])
	text := headerfile.Format(header, captureHeaders)
	// write makes a capture directory of n copies of the request, the
	// last with a body of bodySize bytes (a sparse file) and a .headers
	// file of headersSize bytes if not 0.
	write := func(t *testing.T, n int, bodySize, headersSize int64) string {
		dir := t.TempDir()
		for i := range n {
			name := filepath.Join(dir, fmt.Sprintf("rw1-%04d", i+1))
			if err := os.WriteFile(name+".snappy", body, 0o644); err != nil {
				t.Fatal(err)
			}
			h := text
			if i == n-1 && headersSize > 0 {
				pad := int(headersSize) - len(text) - len("X-Pad: \n")
				h = fmt.Appendf(slices.Clone(text), "X-Pad: %s\n", strings.Repeat("p", pad))
			}
			if err := os.WriteFile(name+".headers", h, 0o644); err != nil {
				t.Fatal(err)
			}
			if i == n-1 && bodySize > 0 {
				if err := os.Truncate(name+".snappy", bodySize); err != nil {
					t.Fatal(err)
				}
			}
		}
		return dir
	}
	t.Run("body at the limit", func(t *testing.T) {
		rs, err := readCaptureDir(write(t, 1, maxCaptureBody, 0))
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 1 || len(rs[0].body) != maxCaptureBody {
			t.Fatalf("read %d requests, want one of %d bytes", len(rs), maxCaptureBody)
		}
	})
	t.Run("body over the limit", func(t *testing.T) {
		if _, err := readCaptureDir(write(t, 2, maxCaptureBody+1, 0)); !errors.Is(err, errCaptureTooLarge) || !strings.Contains(err.Error(), "rw1-0002.snappy") {
			t.Fatalf("readCaptureDir = %v, want errCaptureTooLarge for rw1-0002.snappy", err)
		}
	})
	t.Run("headers at the limit", func(t *testing.T) {
		rs, err := readCaptureDir(write(t, 1, 0, maxCaptureHeaders))
		if err != nil {
			t.Fatal(err)
		}
		if got := rs[0].header.Get("Content-Encoding"); got != "snappy" {
			t.Fatalf("Content-Encoding %q, want snappy", got)
		}
	})
	t.Run("headers over the limit", func(t *testing.T) {
		if _, err := readCaptureDir(write(t, 1, 0, maxCaptureHeaders+1)); !errors.Is(err, errCaptureTooLarge) || !strings.Contains(err.Error(), "rw1-0001.headers") {
			t.Fatalf("readCaptureDir = %v, want errCaptureTooLarge for rw1-0001.headers", err)
		}
	})
	t.Run("body claiming too much", func(t *testing.T) {
		dir := write(t, 2, 0, 0)
		hostile := binary.AppendUvarint(nil, maxCaptureDecoded+1)
		if err := os.WriteFile(filepath.Join(dir, "rw1-0002.snappy"), hostile, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readCaptureDir(dir); !errors.Is(err, errCaptureTooLarge) || !strings.Contains(err.Error(), "rw1-0002.snappy") {
			t.Fatalf("readCaptureDir = %v, want errCaptureTooLarge for rw1-0002.snappy", err)
		}
		// A body whose header does not parse is kept, to be replayed.
		if err := os.WriteFile(filepath.Join(dir, "rw1-0002.snappy"), []byte{0xff}, 0o644); err != nil {
			t.Fatal(err)
		}
		if rs, err := readCaptureDir(dir); err != nil || len(rs) != 2 {
			t.Fatalf("readCaptureDir with a cut snappy header = %d requests, %v; want 2", len(rs), err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		dir := write(t, 3, 0, 0)
		limit := 3 * int64(len(body))
		if rs, err := readCaptureDirMax(dir, limit); err != nil || len(rs) != 3 {
			t.Fatalf("readCaptureDirMax(%d) at the limit = %d requests, %v; want 3", limit, len(rs), err)
		}
		_, err := readCaptureDirMax(dir, limit-1)
		if !errors.Is(err, errCaptureTooLarge) || !strings.Contains(err.Error(), "in all") {
			t.Fatalf("readCaptureDirMax(%d) = %v, want errCaptureTooLarge for the directory", limit-1, err)
		}
	})
}

// TestDecodeCapturedBody checks that a body whose snappy header claims
// more than maxCaptureDecoded is refused before any memory is sized from
// it, and that one at the limit decodes.
func TestDecodeCapturedBody(t *testing.T) {
	// A snappy header of a 4 GiB - 1 decoded length, and no data.
	hostile := binary.AppendUvarint(nil, 1<<32-1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := decodeCapturedBody(hostile)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errCaptureTooLarge) {
		t.Fatalf("decodeCapturedBody(header of %d bytes) = %v, want errCaptureTooLarge", uint64(1<<32-1), err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", d)
	}
	over := binary.AppendUvarint(nil, maxCaptureDecoded+1)
	if _, err := decodeCapturedBody(over); !errors.Is(err, errCaptureTooLarge) {
		t.Errorf("decodeCapturedBody(header of %d bytes) = %v, want errCaptureTooLarge", maxCaptureDecoded+1, err)
	}
	at := snappy.Encode(nil, make([]byte, maxCaptureDecoded))
	if b, err := decodeCapturedBody(at); err != nil || len(b) != maxCaptureDecoded {
		t.Errorf("decodeCapturedBody(%d bytes at the limit) = %d bytes, %v", maxCaptureDecoded, len(b), err)
	}
	if _, err := decodeCapturedBody([]byte{0xff}); err == nil || errors.Is(err, errCaptureTooLarge) {
		t.Errorf("decodeCapturedBody(a cut header) = %v, want snappy's error", err)
	}
}

// TestCaptureQueueFull checks that a request that finds the queue full,
// in number or in bytes, is dropped and counted, without waiting for the
// writer (which this capturer does not run).
func TestCaptureQueueFull(t *testing.T) {
	c := &capturer{queue: make(chan capturedRequest, 2)}
	for i, size := range []int{10, captureQueueBytes, 10, 10} {
		c.enqueue(capturedRequest{name: fmt.Sprintf("rw1-%04d", i+1), body: make([]byte, size)})
	}
	// The first is queued; the second is over the bytes; the third is
	// queued; the fourth finds no room.
	if got, want := len(c.queue), 2; got != want {
		t.Errorf("queued %d requests, want %d", got, want)
	}
	if got, want := c.dropped.Load(), int64(2); got != want {
		t.Errorf("dropped = %d, want %d", got, want)
	}
	if got, want := c.queued.Load(), int64(20); got != want {
		t.Errorf("queued bytes = %d, want %d", got, want)
	}
}

// TestCaptureClosed checks that a request captured after close is dropped
// and counted, not sent on the closed queue.
func TestCaptureClosed(t *testing.T) {
	c, err := newCapturer(t.TempDir(), 10, 1<<20, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	c.enqueue(capturedRequest{name: "rw1-0001"})
	if got := c.dropped.Load(); got != 1 {
		t.Errorf("dropped = %d, want 1", got)
	}
}

// TestCaptureTenantHeader checks that a capturer keeps the receiver's own
// -tenant-header beside captureHeaders, once whatever its case, and still
// writes no other header.
func TestCaptureTenantHeader(t *testing.T) {
	body, h := rwtest.Raw(t, rwtest.Files(t, 1)[0])
	h.Set("X-Tenant", "team-b")
	h.Set("Authorization", "Bearer secret")
	for _, tc := range []struct {
		header string
		added  int    // headers added to captureHeaders
		want   string // in the .headers file
	}{
		{"X-Tenant", 1, "X-Tenant: team-b\n"},
		{"x-scope-orgid", 0, ""}, // already one of captureHeaders: not added twice
	} {
		t.Run(tc.header, func(t *testing.T) {
			dir := t.TempDir()
			c, err := newCapturer(dir, 1, 1<<20, tc.header, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(c.headers) - len(captureHeaders); n != tc.added {
				t.Errorf("capturer adds %d headers to captureHeaders for %q, want %d", n, tc.header, tc.added)
			}
			next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
			req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
			req.Header = h.Clone()
			c.wrap(next).ServeHTTP(httptest.NewRecorder(), req)
			if err := c.close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, "rw1-0001.headers"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && !strings.Contains(string(got), tc.want) {
				t.Errorf("rw1-0001.headers = %q, want it to hold %q", got, tc.want)
			}
			if strings.Contains(string(got), "Authorization") || strings.Contains(string(got), "secret") {
				t.Errorf("rw1-0001.headers = %q, holds the Authorization header", got)
			}
		})
	}
}
