package refcache_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/refcache"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// A fork that decodes requests with its own code (Thanos's labelpb,
// Mimir's mimirpb, or gogo's generated prompb as here) still uses the cache
// and the appender: it adds each series' decoded labels to an
// iklabels.HashedBuilder, which is an [refcache.SeriesLabels], what Lookup
// takes, and appends through the handle. Only the first request builds
// labels; the second finds every series in the cache.
func Example_forkDecoded() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer head.Close()

	// What the fork's decoder has made of two requests' bodies.
	decoded := func(ts int64) *prompb.WriteRequest {
		sent := &prompb.WriteRequest{}
		for _, pod := range []string{"api-0", "api-1"} {
			sent.Timeseries = append(sent.Timeseries, prompb.TimeSeries{
				Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "api"}, {Name: "pod", Value: pod}},
				Samples: []prompb.Sample{{Value: float64(ts / 1000), Timestamp: ts}},
			})
		}
		body, err := sent.Marshal()
		if err != nil {
			panic(err)
		}
		var req prompb.WriteRequest
		if err := req.Unmarshal(body); err != nil {
			panic(err)
		}
		return &req
	}

	cache := refcache.New(refcache.Options{}) // one per TSDB, kept across requests
	var b iklabels.HashedBuilder              // one per worker, reset per series
	for i, ts := range []int64{1000, 2000} {
		req := decoded(ts)
		// now: when the request arrived, which the cache's purges compare.
		a := refcache.NewAppender(context.Background(), head, cache, time.Now().UnixMilli())
		for _, series := range req.Timeseries {
			b.Reset()
			for _, l := range series.Labels {
				b.AddString(l.Name, l.Value)
			}
			h, err := a.Lookup(&b) // a cache hit builds and copies nothing
			if err != nil {
				panic(err) // a HashedBuilder has no error; a fork's own series type might
			}
			for _, s := range series.Samples {
				if err := a.Append(&h, s.Timestamp, s.Value); err != nil {
					panic(err)
				}
			}
		}
		if err := a.Commit(); err != nil {
			panic(err)
		}
		fmt.Printf("request %d: %+v\n", i+1, a.Stats())
	}

	q, err := tsdb.NewBlockQuerier(head, math.MinInt64, math.MaxInt64)
	if err != nil {
		panic(err)
	}
	defer q.Close()
	set := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "job", "api"))
	for set.Next() {
		var values []float64
		it := set.At().Iterator(nil)
		for it.Next() != 0 {
			_, v := it.At()
			values = append(values, v)
		}
		fmt.Println(set.At().Labels(), values)
	}
	if err := set.Err(); err != nil {
		panic(err)
	}
	// Output:
	// request 1: {CacheHits:0 Guessed:0 RefLookups:0 NewSeries:2 CacheStores:2}
	// request 2: {CacheHits:2 Guessed:1 RefLookups:0 NewSeries:0 CacheStores:0}
	// {__name__="up", job="api", pod="api-0"} [1 2]
	// {__name__="up", job="api", pod="api-1"} [1 2]
}
