package exemplars_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
)

// A fork's head commits exemplars to a Ring where Prometheus's commits them
// to its own storage. Here a real head keeps its own, and the ring takes
// the same exemplars, by the hash of each series computed once; both
// answer the same query the same way. Six exemplars went into room for
// four: the two oldest ingested were dropped.
func ExampleRing() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	opts.EnableExemplarStorage = true
	opts.MaxExemplars.Store(4)
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer head.Close()

	ring := exemplars.New(4, exemplars.Options{})
	app := head.Appender(context.Background())
	for i, pod := range []string{"api-0", "api-1", "api-0", "api-1", "api-0", "api-1"} {
		lset := labels.FromStrings("__name__", "http_request_duration_seconds_bucket", "le", "0.5", "pod", pod)
		ts := int64(1000 * (i + 1))
		e := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", fmt.Sprintf("t%d", i)), Value: 0.1 * float64(i+1), Ts: ts, HasTs: true}
		ref, err := app.Append(0, lset, ts, float64(i))
		if err != nil {
			panic(err)
		}
		if _, err := app.AppendExemplar(ref, lset, e); err != nil {
			panic(err)
		}
		if err := ring.AddExemplarHash(lset.Hash(), lset, e); err != nil {
			panic(err)
		}
	}
	if err := app.Commit(); err != nil {
		panic(err)
	}

	matchers := []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, "http_request_duration_seconds_bucket"),
		labels.MustNewMatcher(labels.MatchRegexp, "pod", "api-.*"),
	}
	got, _ := ring.Select(0, 10000, matchers)
	q, _ := head.ExemplarQuerier(context.Background())
	want, _ := q.Select(0, 10000, matchers)
	for _, r := range got {
		fmt.Println(r.SeriesLabels.Get("pod"))
		for _, e := range r.Exemplars {
			fmt.Printf("  %s %.1f at %d\n", e.Labels, e.Value, e.Ts)
		}
	}
	fmt.Println("same as the head's:", reflect.DeepEqual(got, want))
	fmt.Printf("%+v\n", ring.Stats())
	// Output:
	// api-0
	//   {trace_id="t2"} 0.3 at 3000
	//   {trace_id="t4"} 0.5 at 5000
	// api-1
	//   {trace_id="t3"} 0.4 at 4000
	//   {trace_id="t5"} 0.6 at 6000
	// same as the head's: true
	// {Appended:6 OutOfOrder:0 Exemplars:4 Series:2 Size:4 OldestTimestamp:3000}
}

// On a configuration reload, a fork applies the exemplar settings to its
// ring as tsdb.Head.ApplyConfig applies them to Prometheus's storage: the
// ring takes numbers, not a *config.Config, so that package exemplars
// need not import config.
func ExampleRing_Resize() {
	ring := exemplars.New(2, exemplars.Options{})
	cfg, err := config.Load(`
storage:
  exemplars:
    max_exemplars: 5
  tsdb:
    out_of_order_time_window: 10m
`, nil)
	if err != nil {
		panic(err)
	}

	var window int64
	if tc := cfg.StorageConfig.TSDBConfig; tc != nil {
		window = max(tc.OutOfOrderTimeWindow, 0)
	}
	ring.SetOutOfOrderTimeWindow(window)
	ring.Resize(cfg.StorageConfig.ExemplarsConfig.MaxExemplars)

	lset := labels.FromStrings("__name__", "rpc_duration_seconds_bucket", "le", "1")
	newer := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "b"), Value: 0.7, Ts: 600_000, HasTs: true}
	late := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "a"), Value: 0.4, Ts: 100_000, HasTs: true}
	fmt.Println(ring.AddExemplar(lset, newer), ring.AddExemplar(lset, late))
	fmt.Println("size:", ring.Stats().Size)

	// A repeated label name is Prometheus's error, under errors.Is too.
	dup := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "c", "trace_id", "d"), Ts: 700_000}
	err = ring.AddExemplar(lset, dup)
	fmt.Println(err, errors.Is(err, tsdb.ErrInvalidExemplar))
	// Output:
	// <nil> <nil>
	// size: 5
	// label name "trace_id" is not unique: invalid exemplar true
}

// A fork that keeps a real TSDB exports the ring's metrics in the same
// registry under another prefix: the TSDB's head registers Prometheus's
// names for its own exemplar storage, even when that storage is off.
func ExampleCollector() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	reg := prometheus.NewRegistry()
	db, err := tsdb.Open(dir, nil, reg, tsdb.DefaultOptions(), nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()

	ring := exemplars.New(100, exemplars.Options{})
	reg.MustRegister(exemplars.NewCollector(ring, exemplars.CollectorOptions{Prefix: "fork_exemplar_ring_"}))
	lset := labels.FromStrings("__name__", "http_requests_total", "pod", "api-0")
	if err := ring.AddExemplar(lset, exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "t1"), Value: 1, Ts: 1000, HasTs: true}); err != nil {
		panic(err)
	}

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if strings.HasSuffix(mf.GetName(), "exemplars_appended_total") {
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output:
	// fork_exemplar_ring_exemplars_appended_total 1
	// prometheus_tsdb_exemplar_exemplars_appended_total 0
}
