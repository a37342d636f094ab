package activeseries_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/activeseries"
)

// An ingester counts a tenant's active series as it appends them to its
// TSDB head: the tracker takes the hash the receiver already has and the
// labels the head keeps (the head keeps the labels a new series is
// appended with, without copying them), and copies nothing. A purge,
// every minute say, drops the series idle for longer than the timeout.
func ExampleTracker() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer head.Close()
	if err := head.Init(math.MinInt64); err != nil {
		panic(err)
	}

	// A custom tracker from the selector in the tenant's configuration.
	apiMatchers := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "api")}
	tracker, err := activeseries.New(activeseries.Options{
		Stripes: 16, // a small tenant
		Custom:  []activeseries.CustomTracker{{Name: "api", Matchers: apiMatchers}},
	})
	if err != nil {
		panic(err)
	}

	series := []labels.Labels{
		labels.FromStrings("__name__", "http_requests_total", "code", "200", "job", "api"),
		labels.FromStrings("__name__", "http_requests_total", "code", "500", "job", "api"),
		labels.FromStrings("__name__", "up", "job", "db"),
		labels.FromStrings("__name__", "http_request_duration_seconds", "job", "api"),
	}
	latency := &histogram.Histogram{
		Count: 3, Sum: 0.75, Schema: 0, ZeroThreshold: 1e-128,
		PositiveSpans:   []histogram.Span{{Offset: -2, Length: 2}},
		PositiveBuckets: []int64{1, 1}, // deltas: 1 and 2 observations
	}
	// push appends a sample of each of the given series at now, in
	// milliseconds since the Unix epoch, as a remote-write request would,
	// and tracks each series at that time.
	push := func(now int64, which ...int) {
		app := head.AppenderV2(context.Background())
		for _, i := range which {
			ls := series[i]
			var h *histogram.Histogram
			if i == 3 {
				h = latency
			}
			if _, err := app.Append(0, ls, 0, now, 1, h, nil, storage.AOptions{}); err != nil {
				panic(err)
			}
			if h != nil {
				tracker.UpdateHistogram(ls.Hash(), ls, len(h.PositiveBuckets)+len(h.NegativeBuckets), now)
			} else {
				tracker.Update(ls.Hash(), ls, now)
			}
		}
		if err := app.Commit(); err != nil {
			panic(err)
		}
	}

	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	push(start.UnixMilli(), 0, 1, 2, 3)
	push(start.Add(time.Minute).UnixMilli(), 0, 2, 3) // the 500s stop
	now := start.Add(2 * time.Minute)
	push(now.UnixMilli(), 0, 2, 3)

	const idleTimeout = 90 * time.Second
	fmt.Println("purged:", tracker.Purge(now.Add(-idleTimeout).UnixMilli()))
	var stats activeseries.Stats
	tracker.UpdateStats(&stats)
	fmt.Printf("active: %d series, %d native histograms with %d buckets\n",
		stats.Series, stats.NativeHistograms, stats.NativeHistogramBuckets)
	for _, c := range stats.Custom {
		fmt.Printf("active{%s}: %d series\n", c.Name, c.Series)
	}
	fmt.Println("in the head:", head.NumSeries())
	// Output:
	// purged: 1
	// active: 3 series, 1 native histograms with 2 buckets
	// active{api}: 2 series
	// in the head: 4
}

// A tenant's configuration changes while its series are active: the
// tracker matches the series it holds against the new custom trackers, so
// their counts are right at once, and the unchanged one keeps its own.
// The tracker also counts the series per team, at most two teams apart.
func ExampleTracker_ReloadCustomTrackers() {
	// The selectors {job="api"} and up.
	equal := func(name, value string) []*labels.Matcher {
		return []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, name, value)}
	}
	tracker, err := activeseries.New(activeseries.Options{
		Custom:         []activeseries.CustomTracker{{Name: "api", Matchers: equal("job", "api")}},
		ByLabel:        "team",
		MaxLabelValues: 2,
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	for _, ls := range []labels.Labels{
		labels.FromStrings("__name__", "up", "job", "api", "team", "a"),
		labels.FromStrings("__name__", "up", "job", "db", "team", "b"),
		labels.FromStrings("__name__", "up", "job", "web", "team", "c"),
		labels.FromStrings("__name__", "errors_total", "job", "api", "team", "a"),
	} {
		tracker.Update(ls.Hash(), ls, now)
	}

	err = tracker.ReloadCustomTrackers([]activeseries.CustomTracker{
		{Name: "up", Matchers: equal(model.MetricNameLabel, "up")},
		{Name: "api", Matchers: equal("job", "api")},
		{Name: "all"}, // no matchers: every series
	})
	if err != nil {
		panic(err)
	}
	var stats activeseries.Stats
	tracker.UpdateStats(&stats)
	for _, c := range stats.Custom {
		fmt.Printf("custom %s: %d series\n", c.Name, c.Series)
	}
	for _, v := range stats.Values {
		fmt.Printf("team %s: %d series\n", v.Value, v.Series)
	}
	fmt.Printf("other teams: %d series\n", stats.Overflow.Series)
	// Output:
	// custom up: 3 series
	// custom api: 2 series
	// custom all: 4 series
	// team a: 2 series
	// team b: 1 series
	// other teams: 1 series
}

// A receiver that writes many float series per request gathers their
// hashes and labels and tracks them a batch at a time, which reads the
// tracker's memory for several series at once; it counts the same series
// as an Update of each would.
func ExampleTracker_UpdateBatch() {
	tracker, err := activeseries.New(activeseries.Options{})
	if err != nil {
		panic(err)
	}
	var (
		hashes []uint64
		lsets  []labels.Labels
	)
	for _, pod := range []string{"api-0", "api-1", "api-2"} {
		ls := labels.FromStrings("__name__", "up", "pod", pod)
		hashes, lsets = append(hashes, ls.Hash()), append(lsets, ls)
	}
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fmt.Println("new:", tracker.UpdateBatch(hashes, lsets, start.UnixMilli()))
	fmt.Println("new:", tracker.UpdateBatch(hashes[:2], lsets[:2], start.Add(time.Minute).UnixMilli()))
	fmt.Println("purged:", tracker.Purge(start.Add(30*time.Second).UnixMilli()))
	var stats activeseries.Stats
	tracker.UpdateStats(&stats)
	fmt.Println("active:", stats.Series)
	// Output:
	// new: 3
	// new: 0
	// purged: 1
	// active: 2
}
