// Package rwtest gives tests the real remote-write requests kept in the
// repository's testdata/remote-write directory: it finds them from any
// package's test, lists them by protocol version, and decodes them with
// Prometheus's own generated protobufs, which makes them the reference that
// ingestkit's decoders are compared with.
//
// The functions keep no state between calls and are safe for concurrent use
// by multiple goroutines, including from parallel subtests. Every call reads
// the file again and returns memory the caller owns; these are test helpers
// and make no allocation promise. A function that cannot do its job fails the
// test with tb.Fatalf rather than returning an error.
package rwtest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/internal/headerfile"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// Dir returns the absolute path of the repository's testdata/remote-write
// directory. It walks up from the working directory, which is the package's
// directory under go test, to the first directory that holds a go.mod, so it
// works from the test of any package in the module however deep.
func Dir(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatalf("rwtest: finding the working directory: %v", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "remote-write")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("rwtest: no go.mod in %s or any directory above it", wd)
		}
		dir = parent
	}
}

// Files returns the paths of the captured request bodies of remote-write
// version 1 (files rw1-*.snappy, [prompb.WriteRequest]) or 2 (rw2-*.snappy,
// [writev2.Request]), sorted by name. It fails the test if version is neither
// or if there is no such file, so that a test cannot pass by checking nothing.
func Files(tb testing.TB, version int) []string {
	tb.Helper()
	if version != 1 && version != 2 {
		tb.Fatalf("rwtest: Files(%d): remote-write version must be 1 or 2", version)
	}
	dir := Dir(tb)
	paths, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("rw%d-*.snappy", version)))
	if err != nil {
		tb.Fatalf("rwtest: listing %s: %v", dir, err)
	}
	if len(paths) == 0 {
		tb.Fatalf("rwtest: no rw%d-*.snappy in %s", version, dir)
	}
	slices.Sort(paths)
	return paths
}

// Raw returns the body at path exactly as it was sent, still
// snappy-compressed, and the headers of that request, read from the file
// beside it with the extension .headers instead of .snappy. Header names are
// canonicalized as [http.Header.Add] does.
func Raw(tb testing.TB, path string) (body []byte, header http.Header) {
	tb.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("rwtest: reading the body: %v", err)
	}
	hpath := strings.TrimSuffix(path, filepath.Ext(path)) + ".headers"
	text, err := os.ReadFile(hpath)
	if err != nil {
		tb.Fatalf("rwtest: reading the headers: %v", err)
	}
	header, err = headerfile.Parse(text)
	if err != nil {
		tb.Fatalf("rwtest: %s: %v", hpath, err)
	}
	return body, header
}

// Body returns the body at path snappy-decoded: the protobuf bytes of the
// request, as a receiver's decoder sees them. The caller owns the returned
// slice and may modify it.
func Body(tb testing.TB, path string) []byte {
	tb.Helper()
	raw, h := Raw(tb, path)
	if enc := h.Get("Content-Encoding"); enc != "snappy" {
		tb.Fatalf("rwtest: %s: Content-Encoding %q, want \"snappy\"", path, enc)
	}
	b, err := snappy.Decode(nil, raw)
	if err != nil {
		tb.Fatalf("rwtest: snappy-decoding %s: %v", path, err)
	}
	return b
}

// DecodeV1 decodes the remote-write 1.0 body at path with Prometheus's
// generated [prompb.WriteRequest.Unmarshal], as Prometheus's own receiver
// does. The strings of the result do not alias any buffer.
func DecodeV1(tb testing.TB, path string) *prompb.WriteRequest {
	tb.Helper()
	b := Body(tb, path)
	var req prompb.WriteRequest
	if err := req.Unmarshal(b); err != nil {
		tb.Fatalf("rwtest: decoding %s as prometheus.WriteRequest: %v", path, err)
	}
	return &req
}

// DecodeV2 decodes the remote-write 2.0 body at path with Prometheus's
// generated [writev2.Request.Unmarshal]. Label references in the result are
// indexes into its Symbols, as on the wire; the strings do not alias any
// buffer.
func DecodeV2(tb testing.TB, path string) *writev2.Request {
	tb.Helper()
	b := Body(tb, path)
	var req writev2.Request
	if err := req.Unmarshal(b); err != nil {
		tb.Fatalf("rwtest: decoding %s as io.prometheus.write.v2.Request: %v", path, err)
	}
	return &req
}

// Requests returns the captured requests of remote-write version 1 or 2
// (see [Files]) as [workload.Request]s to send again with new timestamps,
// decoded with Prometheus's generated protobufs and named by their files
// (rw1-0005), in the order of their names.
func Requests(tb testing.TB, version int) []*workload.Request {
	tb.Helper()
	msg := remoteapi.WriteV1MessageType
	if version == 2 {
		msg = remoteapi.WriteV2MessageType
	}
	var out []*workload.Request
	for _, path := range Files(tb, version) {
		r, err := workload.Decode(strings.TrimSuffix(filepath.Base(path), ".snappy"), msg, Body(tb, path))
		if err != nil {
			tb.Fatalf("rwtest: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// ColdBytes is the memory that [Cold] spreads a body's copies over: several
// times the last-level cache of today's server CPUs, so that a benchmark
// that takes the copies in turn reads each body from main memory, as a
// receiver reads a request that has just arrived, and not from a cache that
// the previous iteration filled.
const ColdBytes = 256 << 20

// Cold returns copies of body, each in an allocation of its own, that
// together take at least [ColdBytes] (and at least two copies). A
// benchmark that decodes copies[i%len(copies)] in its i-th iteration
// measures the decoder on cold memory.
func Cold(tb testing.TB, body []byte) [][]byte {
	tb.Helper()
	if len(body) == 0 {
		tb.Fatalf("rwtest: Cold of an empty body")
	}
	n := max(2, (ColdBytes+len(body)-1)/len(body))
	copies := make([][]byte, n)
	for i := range copies {
		copies[i] = slices.Clone(body)
	}
	return copies
}
