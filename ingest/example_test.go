package ingest_test

import (
	"context"
	"fmt"
	"os"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// A receiver keeps one Cache per TSDB across requests. Each request is
// decoded in place; every series is resolved by the hash computed while
// decoding, and only the first request, which brings the series, builds
// labels.
func Example_decodeAndAppend() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer head.Close()

	request := func(ts int64) []byte {
		req := &prompb.WriteRequest{}
		for _, pod := range []string{"api-0", "api-1", "api-2"} {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
				Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "api"}, {Name: "pod", Value: pod}},
				Samples: []prompb.Sample{{Value: 1, Timestamp: ts}},
			})
		}
		buf, err := req.Marshal()
		if err != nil {
			panic(err)
		}
		return buf
	}

	cache := refcache.New(refcache.Options{})
	var d decode.Decoder
	var a *refcache.AppenderV2
	for i, ts := range []int64{1000, 2000, 3000} {
		if err := d.Reset(request(ts), remoteapi.WriteV1MessageType); err != nil {
			panic(err)
		}
		// The appender opens the transaction on head itself, which binds
		// the cache to head: a cache used with another storage later
		// starts empty rather than hand out head's refs.
		now := time.Now().UnixMilli() // when the request arrived, for the cache's purges
		if a == nil {
			a = refcache.NewAppenderV2(context.Background(), head, cache, now)
		} else {
			a.Reset(context.Background(), head, now)
		}
		for d.Next() {
			s := d.Series()
			h, err := a.Lookup(s)
			if err != nil {
				// A 2.0 series whose references do not resolve
				// (ErrInvalidSeries): skip it, answer 400 at the end.
				continue
			}
			for _, smp := range s.Samples() {
				if err := a.Append(&h, smp.StartTimestamp, smp.Timestamp, smp.Value, nil, nil, storage.AOptions{}); err != nil {
					panic(err)
				}
			}
		}
		if err := d.Err(); err != nil {
			panic(err)
		}
		if err := a.Commit(); err != nil {
			panic(err)
		}
		fmt.Printf("request %d: %+v\n", i+1, a.Stats())
	}
	fmt.Println("series in head:", head.NumSeries(), "cached:", cache.Len())
	// The cache's counts are the appenders' summed, added at each Commit.
	fmt.Printf("cache: %+v\n", cache.Stats())
	// Output:
	// request 1: {CacheHits:0 Guessed:0 RefLookups:0 NewSeries:3 CacheStores:3}
	// request 2: {CacheHits:3 Guessed:2 RefLookups:0 NewSeries:0 CacheStores:0}
	// request 3: {CacheHits:3 Guessed:2 RefLookups:0 NewSeries:0 CacheStores:0}
	// series in head: 3 cached: 3
	// cache: {Len:3 Hits:6 Guessed:4 Misses:3 Stores:3 Purged:0 Rebinds:0 Resets:0}
}
