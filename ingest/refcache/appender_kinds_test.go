package refcache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// TestAppenderKinds sends floats with start timestamps, integer and float
// native histograms and exemplars through the AppenderV2 into a real head with
// exemplar storage and start-timestamp zero samples on, and reads them back;
// Prometheus's errors for out-of-order exemplars come back unchanged.
func TestAppenderKinds(t *testing.T) {
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = t.TempDir()
	opts.EnableExemplarStorage = true
	opts.MaxExemplars.Store(100)
	opts.EnableSTAsZeroSample = true
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		t.Fatalf("NewHead: %v", err)
	}
	if err := head.Init(math.MinInt64); err != nil {
		t.Fatalf("Init: %v", err)
	}
	defer head.Close()

	floatLs := labels.FromStrings("__name__", "requests_total", "job", "api")
	histLs := labels.FromStrings("__name__", "latency_seconds", "job", "api")
	fhistLs := labels.FromStrings("__name__", "size_bytes", "job", "api")
	cache := New(Options{})
	ih := &histogram.Histogram{Count: 3, Sum: 1.5, Schema: 0, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}}
	fh := &histogram.FloatHistogram{Count: 2.5, Sum: 4, Schema: 1, PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []float64{2.5}}
	ex := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "abc"), Value: 0.7, Ts: 2000, HasTs: true}

	for round, ts := range []int64{2000, 3000} {
		a := NewAppenderV2(context.Background(), head, cache, ts)
		hf := mustHandle(a.Lookup(newPairSeries(floatLs)))
		es := []exemplar.Exemplar{ex}
		if round == 1 {
			old := ex
			old.Ts = 1000
			es = []exemplar.Exemplar{old}
		}
		// The head has AppendExemplars from Prometheus v0.316.0 on; before,
		// exemplars go in the options of the sample's append.
		separate := promcompat.HasExemplarAppenderV2(a.Wrapped())
		var opts storage.AOptions
		if !separate {
			opts.Exemplars = es
		}
		// The start timestamp makes the head add a zero sample at st first.
		err := a.Append(&hf, 1000, ts, float64(ts), nil, nil, opts)
		if separate {
			if err != nil {
				t.Fatalf("Append(float, st=1000): %v", err)
			}
			err = a.AppendExemplars(&hf, es)
		} else if err2 := a.AppendExemplars(&hf, es); !errors.Is(err2, ErrExemplarsUnsupported) {
			t.Fatalf("AppendExemplars on a head without it = %v, want ErrExemplarsUnsupported", err2)
		}
		if round == 0 {
			if err != nil {
				t.Fatalf("appending exemplars: %v", err)
			}
		} else {
			var perr *storage.AppendPartialError
			if !errors.As(err, &perr) || len(perr.ExemplarErrors) != 1 || !errors.Is(perr.ExemplarErrors[0], storage.ErrOutOfOrderExemplar) {
				t.Fatalf("appending an older exemplar = %v, want a *storage.AppendPartialError with storage.ErrOutOfOrderExemplar", err)
			}
		}
		hh := mustHandle(a.Lookup(newPairSeries(histLs)))
		if err := a.Append(&hh, 0, ts, 0, ih.Copy(), nil, storage.AOptions{}); err != nil {
			t.Fatalf("Append(histogram): %v", err)
		}
		hfh := mustHandle(a.Lookup(newPairSeries(fhistLs)))
		if err := a.Append(&hfh, 0, ts, 0, nil, fh.Copy(), storage.AOptions{}); err != nil {
			t.Fatalf("Append(float histogram): %v", err)
		}
		if err := a.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		want := AppenderStats{NewSeries: 3, CacheStores: 3}
		if round == 1 {
			want = AppenderStats{CacheHits: 3, Guessed: 2}
		}
		if got := a.Stats(); got != want {
			t.Fatalf("round %d: Stats() = %+v, want %+v", round, got, want)
		}
	}

	q, err := tsdb.NewBlockQuerier(tsdb.NewRangeHead(head, math.MinInt64, math.MaxInt64), math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatalf("NewBlockQuerier: %v", err)
	}
	defer q.Close()
	got := map[string][]string{}
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "job", "api"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			name := s.Labels().Get("__name__")
			switch vt {
			case chunkenc.ValFloat:
				ts, v := it.At()
				got[name] = append(got[name], fmtSample(ts, v))
			case chunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				if !h.Equals(ih) {
					t.Fatalf("histogram of %s at %d = %v, want %v", name, ts, h, ih)
				}
				got[name] = append(got[name], fmtSample(ts, h.Sum))
			case chunkenc.ValFloatHistogram:
				ts, h := it.AtFloatHistogram(nil)
				if !h.Equals(fh) {
					t.Fatalf("float histogram of %s at %d = %v, want %v", name, ts, h, fh)
				}
				got[name] = append(got[name], fmtSample(ts, h.Sum))
			}
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatalf("Select: %v", err)
	}
	for name, want := range map[string][]string{
		// The zero sample at the start timestamp, then the two samples.
		"requests_total":  {"1000=0", "2000=2000", "3000=3000"},
		"latency_seconds": {"2000=1.5", "3000=1.5"},
		"size_bytes":      {"2000=4", "3000=4"},
	} {
		if len(got[name]) != len(want) {
			t.Fatalf("samples of %s = %v, want %v", name, got[name], want)
		}
		for i := range want {
			if got[name][i] != want[i] {
				t.Fatalf("samples of %s = %v, want %v", name, got[name], want)
			}
		}
	}

	eq, err := head.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatalf("ExemplarQuerier: %v", err)
	}
	res, err := eq.Select(0, 10_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "requests_total")})
	if err != nil {
		t.Fatalf("exemplar Select: %v", err)
	}
	if len(res) != 1 || len(res[0].Exemplars) != 1 || !res[0].Exemplars[0].Equals(ex) {
		t.Fatalf("exemplars of requests_total = %v, want [%v]", res, ex)
	}
}

func fmtSample(ts int64, v float64) string { return fmt.Sprintf("%d=%g", ts, v) }

// TestAppenderPassThrough sends through an Appender what
// storage.Appender has beyond samples: the zero samples of float and
// histogram start timestamps, and SetOptions, whose DiscardOutOfOrder makes
// the head refuse an out-of-order sample that its out-of-order window would
// otherwise take. It reads the samples back from the head.
func TestAppenderPassThrough(t *testing.T) {
	dir := t.TempDir()
	opts := tsdb.DefaultOptions()
	opts.EnableSTAsZeroSample = true
	opts.OutOfOrderTimeWindow = 10_000
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cache := New(Options{})
	floatLs := labels.FromStrings("__name__", "requests_total")
	histLs := labels.FromStrings("__name__", "latency_seconds")
	ih := &histogram.Histogram{Count: 3, Sum: 1.5, Schema: 0, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}}

	a := NewAppender(context.Background(), db, cache, 0)
	hf := mustHandle(a.Lookup(newPairSeries(floatLs)))
	if err := a.AppendSTZeroSample(&hf, 20_000, 15_000); err != nil {
		t.Fatalf("AppendSTZeroSample: %v", err)
	}
	if err := a.Append(&hf, 20_000, 1); err != nil {
		t.Fatalf("Append: %v", err)
	}
	hh := mustHandle(a.Lookup(newPairSeries(histLs)))
	if err := a.AppendHistogramSTZeroSample(&hh, 20_000, 15_000, ih.Copy(), nil); err != nil {
		t.Fatalf("AppendHistogramSTZeroSample: %v", err)
	}
	if err := a.AppendHistogram(&hh, 20_000, ih.Copy(), nil); err != nil {
		t.Fatalf("AppendHistogram: %v", err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}

	// Out of order but inside the window: refused only with DiscardOutOfOrder.
	a.Reset(context.Background(), db, 0)
	a.SetOptions(&storage.AppendOptions{DiscardOutOfOrder: true})
	hf = mustHandle(a.Lookup(newPairSeries(floatLs)))
	if err := a.Append(&hf, 19_000, 2); !errors.Is(err, storage.ErrOutOfOrderSample) {
		t.Fatalf("Append(out of order) with DiscardOutOfOrder = %v, want %v", err, storage.ErrOutOfOrderSample)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}

	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	got := map[string][]string{}
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		name := s.Labels().Get("__name__")
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				ts, v := it.At()
				got[name] = append(got[name], fmtSample(ts, v))
			case chunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				got[name] = append(got[name], fmtSample(ts, h.Sum))
			}
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"requests_total":  {"15000=0", "20000=1"},
		"latency_seconds": {"15000=0", "20000=1.5"},
	} {
		if fmt.Sprint(got[name]) != fmt.Sprint(want) {
			t.Errorf("samples of %s = %v, want %v", name, got[name], want)
		}
	}
}
