package labels_test

import (
	"context"
	"fmt"
	"os"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	iklabels "github.com/ingestkit/ingestkit/labels"
)

// A receiver hashes each series' pairs straight from the request buffer,
// looks the series up by that hash in the refs it kept from earlier
// requests, confirms the hit without building anything, and builds labels
// only for a series it has not seen.
func Example() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer head.Close()

	// The (name, value) pairs of one series, as a decoder sees them: slices
	// of a request buffer that is reused for the next request.
	request := [][2][]byte{
		{[]byte("__name__"), []byte("http_requests_total")},
		{[]byte("job"), []byte("api")},
		{[]byte("method"), []byte("GET")},
	}

	type series struct {
		ref  storage.SeriesRef
		lset labels.Labels
	}
	refs := map[uint64]series{} // by hash; a real cache also handles collisions
	var b iklabels.HashedBuilder
	for ts := int64(1000); ts <= 2000; ts += 1000 {
		b.Reset()
		for _, p := range request {
			b.Add(p[0], p[1])
		}
		app := head.AppenderV2(context.Background())
		s, ok := refs[b.Hash()]
		if ok && b.Equal(s.lset) {
			fmt.Println("found by hash:", s.lset)
		} else {
			h := b.Hashed() // copies the bytes once
			s = series{lset: h.Labels()}
			fmt.Println("new series:", s.lset, "hash matches Prometheus:", h.Hash() == s.lset.Hash())
		}
		ref, err := app.Append(s.ref, s.lset, 0, ts, 1, nil, nil, storage.AOptions{})
		if err != nil {
			panic(err)
		}
		refs[b.Hash()] = series{ref: ref, lset: s.lset}
		if err := app.Commit(); err != nil {
			panic(err)
		}
	}
	fmt.Println("series in head:", head.NumSeries())
	// Output:
	// new series: {__name__="http_requests_total", job="api", method="GET"} hash matches Prometheus: true
	// found by hash: {__name__="http_requests_total", job="api", method="GET"}
	// series in head: 1
}

// Table interns label values that outlive a request: the second request's
// bytes give back the string the first one stored.
func ExampleTable() {
	var t iklabels.Table
	first := t.Intern([]byte("api-server-7d9f8b6c5-x2k4p"))
	buf := []byte("api-server-7d9f8b6c5-x2k4p")
	second := t.Intern(buf)
	buf[0] = 'X' // the request buffer is reused; interned strings do not change
	fmt.Println(first, second, t.Stats().Strings)
	// Output: api-server-7d9f8b6c5-x2k4p api-server-7d9f8b6c5-x2k4p 1
}
