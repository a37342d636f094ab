package main

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/internal/headerfile"
)

// captureConfig holds the -capture-* flags.
type captureConfig struct {
	dir string
	max int
}

// defaultCaptureMax is -capture-max's default: a few minutes of one
// Prometheus server's traffic at its defaults, some 50 MiB of files at
// most with Prometheus's request sizes (testdata/remote-write).
const defaultCaptureMax = 100

// captureFlags registers the -capture-* flags into c.
func captureFlags(fs *flag.FlagSet, c *captureConfig) {
	fs.StringVar(&c.dir, "capture-dir", "", "write the first -capture-max remote-write requests received, body and headers, into this directory as testdata/remote-write holds them (rw1-0001.snappy and rw1-0001.headers, ...), for go run ./internal/cmd/benchall -requests DIR")
	fs.IntVar(&c.max, "capture-max", defaultCaptureMax, "with -capture-dir: how many requests to capture, counting those the directory already holds")
}

// captureHeaders are the request headers a capture keeps: those that say
// what the body is, the sender, and the tenant headers of Thanos and of
// Cortex and Mimir, to which a capturer adds the receiver's -tenant-header.
// Others, such as Authorization, are never written.
var captureHeaders = []string{
	"Content-Type", "Content-Encoding", "X-Prometheus-Remote-Write-Version",
	"User-Agent", "THANOS-TENANT", "X-Scope-OrgID",
}

// captureQueue and captureQueueBytes bound the captured requests waiting
// to be written, in number and in bytes of bodies; one that finds the
// queue full is dropped and counted.
const (
	captureQueue      = 16
	captureQueueBytes = 64 << 20
)

// capturer writes the first requests of remote write 1.0 and 2.0 it sees
// into a directory, in the format of testdata/remote-write: the body as
// received in rwV-NNNN.snappy, the headers of captureHeaders in
// rwV-NNNN.headers, where V is the protocol version and NNNN the order of
// arrival (numbering goes on after the files the directory holds). A
// request counts towards the limit once its body is read; one whose body
// is over the limit, whose encoding is not snappy or whose Content-Type is
// neither version's is not captured and does not count. The body is read
// into memory before the handler sees it, and the files are written by a
// goroutine of the capturer after the response, so that a slow disk delays
// no request: a request that finds the queue full is dropped and counted.
//
// A capturer is safe for concurrent use by multiple goroutines. A
// request that its handler serves after close is not captured, and is
// counted as dropped.
type capturer struct {
	dir     string
	maxBody int64
	logger  *slog.Logger
	headers []string // captureHeaders and the receiver's tenant header

	left atomic.Int64 // requests still to capture
	seq  atomic.Int64 // the last sequence number given

	mu     sync.Mutex
	queue  chan capturedRequest // guarded by mu for sends and close
	closed bool                 // guarded by mu
	done   chan struct{}        // closed when the writer has returned
	queued atomic.Int64         // bytes of the bodies in queue

	written, dropped, failed atomic.Int64
}

// capturedRequest is a request of a capture directory.
type capturedRequest struct {
	name    string // rwV-NNNN
	version int    // 1 or 2
	seq     int64
	header  http.Header
	body    []byte // as received, snappy-compressed
}

// captureName matches the body files of a capture directory.
var captureName = regexp.MustCompile(`^rw([12])-([0-9]+)\.snappy$`)

// newCapturer returns a capturer of max requests into dir, which it
// creates if need be, for bodies of up to maxBody bytes. tenantHeader, the
// receiver's -tenant-header, is kept too if captureHeaders lacks it.
func newCapturer(dir string, max int, maxBody int64, tenantHeader string, logger *slog.Logger) (*capturer, error) {
	if max < 0 {
		return nil, fmt.Errorf("-capture-max %d: want 0 or more", max)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	held, last, err := scanCaptureDir(dir)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &capturer{dir: dir, maxBody: maxBody, logger: logger, headers: captureHeaders, queue: make(chan capturedRequest, captureQueue), done: make(chan struct{})}
	if tenantHeader != "" && !slices.ContainsFunc(captureHeaders, func(h string) bool { return strings.EqualFold(h, tenantHeader) }) {
		c.headers = append(slices.Clip(captureHeaders), tenantHeader)
	}
	c.left.Store(int64(max - held))
	c.seq.Store(last)
	go c.writeLoop()
	return c, nil
}

// scanCaptureDir returns how many captured requests dir holds and the
// highest sequence number among them.
func scanCaptureDir(dir string) (n int, last int64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		m := captureName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		seq, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", e.Name(), err)
		}
		n, last = n+1, max(last, seq)
	}
	return n, last, nil
}

// take claims one of the requests still to capture.
func (c *capturer) take() bool {
	for {
		n := c.left.Load()
		if n <= 0 {
			return false
		}
		if c.left.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// captureVersion returns the protocol version of a remote-write request
// that can be captured (snappy-encoded, of either version), or 0.
func captureVersion(h http.Header) int {
	if enc := h.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "snappy") {
		return 0
	}
	switch msg, err := remoteapi.ParseProtoMsg(h.Get("Content-Type")); {
	case err != nil:
		return 0
	case msg == remoteapi.WriteV1MessageType:
		return 1
	default:
		return 2
	}
}

// wrap returns next with the write requests captured.
func (c *capturer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/api/v1/write" || c.left.Load() <= 0 {
			next.ServeHTTP(w, req)
			return
		}
		v := captureVersion(req.Header)
		if v == 0 || !c.take() {
			next.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, c.maxBody+1))
		if err != nil || int64(len(body)) > c.maxBody {
			// Not captured: the handler reads the body as it came.
			c.left.Add(1)
			req.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), req.Body), req.Body}
			next.ServeHTTP(w, req)
			return
		}
		seq := c.seq.Add(1)
		req.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, req)
		h := make(http.Header, len(c.headers))
		for _, name := range c.headers {
			if vs := req.Header.Values(name); len(vs) > 0 {
				h[http.CanonicalHeaderKey(name)] = vs
			}
		}
		c.enqueue(capturedRequest{name: fmt.Sprintf("rw%d-%04d", v, seq), version: v, seq: seq, header: h, body: body})
	})
}

func (c *capturer) enqueue(r capturedRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.queued.Load()+int64(len(r.body)) > captureQueueBytes {
		c.dropped.Add(1)
		return
	}
	select {
	case c.queue <- r:
		c.queued.Add(int64(len(r.body)))
	default:
		c.dropped.Add(1)
	}
}

func (c *capturer) writeLoop() {
	defer close(c.done)
	for r := range c.queue {
		err := writeCaptured(c.dir, c.headers, r)
		c.queued.Add(-int64(len(r.body)))
		if err != nil {
			c.failed.Add(1)
			c.logger.Error("capturing a request", "file", r.name, "err", err)
			continue
		}
		c.written.Add(1)
	}
}

// writeCaptured writes r's headers, then its body, each through a
// temporary file renamed into place, so that a body file, which is what a
// replay lists, is complete and has its headers beside it.
func writeCaptured(dir string, headers []string, r capturedRequest) error {
	if err := writeFileAtomic(filepath.Join(dir, r.name+".headers"), headerfile.Format(r.header, headers)); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, r.name+".snappy"), r.body)
}

func writeFileAtomic(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// close stops taking requests and returns once those queued are written.
func (c *capturer) close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.queue)
	}
	c.mu.Unlock()
	<-c.done
	if n := c.failed.Load(); n > 0 {
		return fmt.Errorf("capture: %d requests could not be written to %s", n, c.dir)
	}
	return nil
}

// errNoCaptured is returned by readCaptureDir for a directory without
// captured requests.
var errNoCaptured = errors.New("receiver: no captured requests (rw1-NNNN.snappy, rw2-NNNN.snappy)")

// errCaptureTooLarge is returned, wrapped with the file and the limit, by
// readCaptureDir for a file, or a directory, over the limits below, or a
// body whose snappy header claims a decoded length over
// maxCaptureDecoded, and by decodeCapturedBody for such a body: nothing
// is read past a limit, and no memory is sized from a length a file
// claims.
var errCaptureTooLarge = errors.New("receiver: captured request over the limit")

// The limits of readCaptureDir, which reads a directory that a capture
// wrote but that anyone may have put files in. A body may be as large as
// the receiver takes by default (decode.DefaultMaxBodySize); a capture
// with a larger -max-body-bytes is not replayed by a receiver of default
// options anyway. A .headers file holds a few lines. The bodies of one
// directory, which a replay holds in memory with their encodings, are at
// most maxCaptureDirBytes: some 3000 requests of Prometheus's default
// size (testdata/remote-write), or 30 times -capture-max's default.
const (
	maxCaptureBody     = decode.DefaultMaxBodySize
	maxCaptureDecoded  = decode.DefaultMaxDecodedSize
	maxCaptureHeaders  = 64 << 10
	maxCaptureDirBytes = 1 << 30
)

// readCaptureDir returns the requests of a capture directory in their
// order of arrival (by sequence number, the version breaking ties), with
// the headers of each request's .headers file. A file over its limit, a
// body that claims to decode to more than maxCaptureDecoded, or bodies
// over maxCaptureDirBytes in all, make an error that wraps
// errCaptureTooLarge.
func readCaptureDir(dir string) ([]capturedRequest, error) {
	return readCaptureDirMax(dir, maxCaptureDirBytes)
}

// readCaptureDirMax is readCaptureDir with dirBytes in place of
// maxCaptureDirBytes.
func readCaptureDirMax(dir string, dirBytes int64) ([]capturedRequest, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []capturedRequest
	var total int64
	for _, e := range entries {
		m := captureName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		seq, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		name := strings.TrimSuffix(e.Name(), ".snappy")
		left := dirBytes - total
		body, err := readFileMax(filepath.Join(dir, e.Name()), min(maxCaptureBody, left))
		if err != nil {
			if errors.Is(err, errCaptureTooLarge) && left < maxCaptureBody {
				err = fmt.Errorf("%w: the bodies of %s are over %d bytes in all (%s is the last read)", errCaptureTooLarge, dir, dirBytes, e.Name())
			}
			return nil, err
		}
		// Prometheus's handler, which the replay sends every body to,
		// sizes its buffer from the snappy header: refused here, such a
		// body reaches neither handler. A body whose header does not
		// parse is replayed as captured, for both to refuse.
		if n, err := snappy.DecodedLen(body); err == nil && n > maxCaptureDecoded {
			return nil, fmt.Errorf("%s: %w: the snappy header claims %d decoded bytes, more than %d", e.Name(), errCaptureTooLarge, n, maxCaptureDecoded)
		}
		total += int64(len(body))
		text, err := readFileMax(filepath.Join(dir, name+".headers"), maxCaptureHeaders)
		if err != nil {
			return nil, err
		}
		h, err := headerfile.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("%s.headers: %w", name, err)
		}
		out = append(out, capturedRequest{name: name, version: int(m[1][0] - '0'), seq: seq, header: h, body: body})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w in %s", errNoCaptured, dir)
	}
	slices.SortFunc(out, func(a, b capturedRequest) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.version, b.version))
	})
	return out, nil
}

// readFileMax reads the file at path, of at most max bytes: a larger one
// is an error that wraps errCaptureTooLarge, of which no more than max+1
// bytes were read.
func readFileMax(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, errCaptureTooLarge, max)
	}
	return b, nil
}

// decodeCapturedBody snappy-decodes a captured body, after checking the
// decoded length its header claims against maxCaptureDecoded, as the
// receiver's body reader does, so that a body of a few bytes cannot make
// a replay allocate gigabytes.
func decodeCapturedBody(body []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return nil, err
	}
	if n > maxCaptureDecoded {
		return nil, fmt.Errorf("%w: the snappy header claims %d decoded bytes, more than %d", errCaptureTooLarge, n, maxCaptureDecoded)
	}
	return snappy.Decode(nil, body)
}

// Describe and Collect make the capturer a prometheus.Collector of its
// counts.
func (c *capturer) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

var (
	captureWrittenDesc = prometheus.NewDesc("ingestkit_receiver_capture_written_total", "Requests written to -capture-dir.", nil, nil)
	captureDroppedDesc = prometheus.NewDesc("ingestkit_receiver_capture_dropped_total", "Requests to capture dropped because the queue of files to write was full.", nil, nil)
	captureFailedDesc  = prometheus.NewDesc("ingestkit_receiver_capture_failed_total", "Requests to capture whose files could not be written.", nil, nil)
)

func (c *capturer) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(captureWrittenDesc, prometheus.CounterValue, float64(c.written.Load()))
	ch <- prometheus.MustNewConstMetric(captureDroppedDesc, prometheus.CounterValue, float64(c.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(captureFailedDesc, prometheus.CounterValue, float64(c.failed.Load()))
}
