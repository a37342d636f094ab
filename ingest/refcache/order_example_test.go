package refcache_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/refcache"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// A fork that holds a whole decoded request looks its series up in one
// batch and appends them in the order AppendOrder gives, the series the
// head holds by ascending ref, keeping each append's error by index so that
// it reads them in request order, as appending in request order reports
// them.
func ExampleAppender_AppendOrder() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer head.Close()

	series := func(pod string, ts int64) prompb.TimeSeries {
		return prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "pod", Value: pod}},
			Samples: []prompb.Sample{{Value: 1, Timestamp: ts}},
		}
	}
	requests := [][]prompb.TimeSeries{
		{series("a", 1000), series("b", 1000), series("c", 1000)},
		// The sender resharded: a new order, and one sample older than
		// the one its series holds.
		{series("c", 2000), series("b", 500), series("a", 2000), series("d", 2000)},
	}

	cache := refcache.New(refcache.Options{})
	var (
		builders []iklabels.HashedBuilder // one per series of the request, reused
		sl       []refcache.SeriesLabels
		hs       []refcache.Handle
		errs     []error
	)
	for i, req := range requests {
		a := refcache.NewAppender(context.Background(), head, cache, time.Now().UnixMilli())
		builders = append(builders[:0], make([]iklabels.HashedBuilder, len(req))...)
		sl, hs, errs = sl[:0], make([]refcache.Handle, len(req)), make([]error, len(req))
		for j, ts := range req {
			for _, l := range ts.Labels {
				builders[j].AddString(l.Name, l.Value)
			}
			sl = append(sl, &builders[j])
		}
		a.LookupBatch(sl, hs, errs)
		order := a.AppendOrder(hs)
		for _, j := range order {
			if errs[j] != nil {
				continue // the series did not resolve; errs[j] says why
			}
			for _, s := range req[j].Samples {
				if err := a.Append(&hs[j], s.Timestamp, s.Value); err != nil {
					errs[j] = err
				}
			}
		}
		fmt.Printf("request %d: append order %v\n", i+1, order)
		for j, err := range errs { // request order
			if errors.Is(err, storage.ErrOutOfOrderSample) {
				fmt.Printf("  series %d (%s): %v\n", j, req[j].Labels[1].Value, err)
			}
		}
		if err := a.Commit(); err != nil {
			panic(err)
		}
	}
	// Output:
	// request 1: append order [0 1 2]
	// request 2: append order [2 1 0 3]
	//   series 1 (b): out of order sample
}
