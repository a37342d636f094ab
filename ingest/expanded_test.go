package ingest_test

import (
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
)

// amplifyingRequest is a remote-write 2.0 request of n series, each of
// which references one symbol of size bytes: a body of some tens of KB
// that expands to n*size bytes of labels.
func amplifyingRequest(t *testing.T, n, size int, ts int64) []byte {
	t.Helper()
	st := writev2.NewSymbolTable()
	big := strings.Repeat("x", size)
	req := &writev2.Request{}
	for i := range n {
		req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
			LabelsRefs: []uint32{st.Symbolize("__name__"), st.Symbolize("amplified"), st.Symbolize("i"), st.Symbolize(fmt.Sprint(i)), st.Symbolize("v"), st.Symbolize(big)},
			Samples:    []writev2.Sample{{Timestamp: ts, Value: 1}},
		})
	}
	req.Symbols = st.Symbols()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, b)
}

// dirSize is the bytes of the files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExpandedSizeRefused sends the request of issue 36: 2,000 series each
// referencing one 100 KiB symbol, some 23 KB of body that Prometheus's
// handler expands to 200 MiB of labels and writes. With the default
// Options.MaxExpandedSize (the 32 MiB decoded size limit) it is answered
// 400 and leaves the TSDB as it was: no series, no head time range, not a
// byte more on disk. An ordinary request of as many series is written; so
// is the amplifying one with the limit off (MaxExpandedSize < 0), which
// shows that the limit and nothing else refuses it.
func TestExpandedSizeRefused(t *testing.T) {
	ts := time.Now().Add(-time.Minute).UnixMilli()
	const ct = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
	amplifying := amplifyingRequest(t, 2000, 100<<10, ts)
	if len(amplifying) > 64<<10 {
		t.Fatalf("the amplifying request is %d bytes, want a small one", len(amplifying))
	}

	dir := t.TempDir()
	db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := ingest.NewWriteHandlerV2(nil, db, ingest.Options{})
	before := dirSize(t, dir)
	w := postRefused(h, amplifying, ct)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "larger than the limit") {
		t.Fatalf("amplifying request: %d %q, want 400 naming the limit", w.Code, w.Body.String())
	}
	if n := db.Head().NumSeries(); n != 0 {
		t.Errorf("after the refused request the head holds %d series, want 0", n)
	}
	if mint := db.Head().MinTime(); mint != math.MaxInt64 {
		t.Errorf("after the refused request the head's min time is %d, want none", mint)
	}
	if after := dirSize(t, dir); after != before {
		t.Errorf("the refused request took the data directory from %d to %d bytes", before, after)
	}

	// An ordinary request of as many series (some 40 bytes of labels
	// each) is written.
	ordinary := amplifyingRequest(t, 2000, 8, ts)
	if w := postRefused(h, ordinary, ct); w.Code != http.StatusNoContent {
		t.Fatalf("ordinary request: %d %q, want 204", w.Code, w.Body.String())
	}
	if n := db.Head().NumSeries(); n != 2000 {
		t.Errorf("after the ordinary request the head holds %d series, want 2000", n)
	}

	// Without the limit, as Prometheus's handler, it is written.
	off := ingest.NewWriteHandlerV2(nil, openRefusedDB(t, nil), ingest.Options{MaxExpandedSize: -1})
	if w := postRefused(off, amplifying, ct); w.Code != http.StatusNoContent {
		t.Fatalf("amplifying request without the limit: %d %q, want 204", w.Code, w.Body.String())
	}
}
