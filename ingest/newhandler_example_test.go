package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/ingestkit/ingestkit/ingest"
)

// A remote-write endpoint over a TSDB, in place of Prometheus's
// remote.NewWriteHandler: the request is the one Prometheus's sender makes.
func ExampleNewWriteHandler() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()

	h := ingest.NewWriteHandler(nil, db, ingest.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(ingest.NewCollector(h, ingest.CollectorOptions{}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	ts := time.Now().Add(-time.Minute).UnixMilli()
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "api"}},
		Samples: []prompb.Sample{{Timestamp: ts, Value: 1}},
	}}}
	b, _ := req.Marshal()
	post, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(snappy.Encode(nil, b)))
	post.Header.Set("Content-Encoding", "snappy")
	post.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(post)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)

	q, _ := db.Querier(math.MinInt64, math.MaxInt64)
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "job", "api"))
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			_, v := it.At()
			fmt.Println(ss.At().Labels(), v)
		}
	}
	fmt.Println(h.Stats().Samples, "sample written,", h.Stats().NewSeries, "new series")
	// Output:
	// 204
	// {__name__="up", job="api"} 1
	// 1 sample written, 1 new series
}

var _ storage.Appendable = (*tsdb.DB)(nil)
