package postings_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"

	"github.com/ingestkit/ingestkit/postings"
)

// Example writes a block with Prometheus's block writer, then finds the
// series of a selector by reading its index in byte ranges, as a store
// gateway does from object storage (here a local file; an objstore.Bucket
// would be passed to NewRangeReader as it is), and prints their labels
// with Prometheus's own index reader.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "postings-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	w, err := tsdb.NewBlockWriter(promslog.NewNopLogger(), dir, 2*60*60*1000)
	if err != nil {
		panic(err)
	}
	app := w.Appender(ctx)
	for _, l := range []labels.Labels{
		labels.FromStrings("__name__", "http_requests_total", "job", "api", "path", "/v1/query"),
		labels.FromStrings("__name__", "http_requests_total", "job", "api", "path", "/v1/write"),
		labels.FromStrings("__name__", "http_requests_total", "job", "api", "path", "/metrics"),
		labels.FromStrings("__name__", "http_requests_total", "job", "web", "path", "/v1/query"),
		labels.FromStrings("__name__", "up", "job", "api"),
	} {
		if _, err := app.Append(0, l, 1000, 1); err != nil {
			panic(err)
		}
	}
	if err := app.Commit(); err != nil {
		panic(err)
	}
	id, err := w.Flush(ctx)
	if err != nil {
		panic(err)
	}
	w.Close()
	path := filepath.Join(dir, id.String(), "index")

	f, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		panic(err)
	}
	rr := postings.NewRangeReader(postings.ReaderAtSource(f), postings.RangeOptions{})
	r, err := postings.NewReader(ctx, rr, "index", fi.Size())
	if err != nil {
		panic(err)
	}

	// {__name__="http_requests_total", job="api", path=~"/v1/.+"}
	refs, err := r.ExpandedPostings(ctx, nil,
		labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_requests_total"),
		labels.MustNewMatcher(labels.MatchEqual, "job", "api"),
		labels.MustNewMatcher(labels.MatchRegexp, "path", "/v1/.+"),
	)
	if err != nil {
		panic(err)
	}

	ir, err := index.NewFileReader(path, index.DecodePostingsRaw)
	if err != nil {
		panic(err)
	}
	defer ir.Close()
	var b labels.ScratchBuilder
	var chks []chunks.Meta
	for _, ref := range refs {
		if err := ir.Series(ref, &b, &chks); err != nil {
			panic(err)
		}
		fmt.Println(b.Labels())
	}
	// Output:
	// {__name__="http_requests_total", job="api", path="/v1/query"}
	// {__name__="http_requests_total", job="api", path="/v1/write"}
}
