//go:build slicelabels

// Thanos's receive.Writer converts its labels with an unsafe cast that is
// only valid in the slicelabels build, the one Thanos ships: these tests run
// in it only (go test -tags slicelabels).

package thanos

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/thanos-io/thanos/pkg/receive"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
	"github.com/thanos-io/thanos/pkg/store/storepb/prompb"
)

// tenants is a receive.TenantStorage over TSDBs of the test's own, one per
// tenant; a tenant with a nil TSDB is not ready, as a MultiTSDB tenant
// still opening is.
type tenants map[string]*receive.ReadyStorage

func (m tenants) TenantAppendable(tenant string) (receive.Appendable, error) {
	rs, ok := m[tenant]
	if !ok {
		return nil, fmt.Errorf("unknown tenant %q", tenant)
	}
	return rs, nil
}

// openTenants opens a TSDB, with exemplar storage, for each tenant named,
// and leaves notReady without one.
func openTenants(t *testing.T, names []string, notReady string) tenants {
	t.Helper()
	m := tenants{notReady: &receive.ReadyStorage{}}
	for _, name := range names {
		opts := tsdb.DefaultOptions()
		opts.EnableExemplarStorage = true
		opts.MaxExemplars = 1000
		db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		rs := &receive.ReadyStorage{}
		rs.Set(db)
		m[name] = rs
	}
	return m
}

// writeRequest is one Writer.Write: a tenant and its series.
type writeRequest struct {
	tenant string
	series []prompb.TimeSeries
}

// float returns series name{i="i"} with one float sample, and an exemplar
// when ex.
func float(name string, i int, ts int64, v float64, ex bool) prompb.TimeSeries {
	s := prompb.TimeSeries{
		Labels:  []labelpb.ZLabel{{Name: "__name__", Value: name}, {Name: "i", Value: fmt.Sprint(i)}, {Name: "job", Value: "test"}},
		Samples: []prompb.Sample{{Timestamp: ts, Value: v}},
	}
	if ex {
		s.Exemplars = []prompb.Exemplar{{Labels: []labelpb.ZLabel{{Name: "trace_id", Value: fmt.Sprint("t", ts, i)}}, Value: v, Timestamp: ts}}
	}
	return s
}

// hist returns series name{i="i"} with an integer histogram sample, or a
// float histogram one when fl.
func hist(name string, i int, ts int64, fl bool) prompb.TimeSeries {
	b := ts / 1000 // two buckets of b each, and one zero
	h := &histogram.Histogram{
		Count: uint64(2*b + 1), ZeroCount: 1, Sum: float64(ts), Schema: 0,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{b, 0},
	}
	hp := prompb.HistogramToHistogramProto(ts, h)
	if fl {
		hp = prompb.FloatHistogramToHistogramProto(ts, h.ToFloat(nil))
	}
	return prompb.TimeSeries{
		Labels:     []labelpb.ZLabel{{Name: "__name__", Value: name}, {Name: "i", Value: fmt.Sprint(i)}},
		Histograms: []prompb.Histogram{hp},
	}
}

// requests are the writes of TestWriterDifferential: new series, the same
// series again (every one a cache hit), new and known series mixed with
// rejected samples (out of order, duplicate, invalid labels), a tenant of
// its own, a tenant not ready and an unknown one.
func requests() []writeRequest {
	round := func(ts int64, from, to int) []prompb.TimeSeries {
		var ss []prompb.TimeSeries
		for i := from; i < to; i++ {
			ss = append(ss, float("up", i, ts, float64(i)+float64(ts)/1000, i%3 == 0))
		}
		ss = append(ss, hist("latency", 0, ts, false), hist("latency", 1, ts, true))
		return ss
	}
	third := round(3000, 5, 15)
	third = append(third,
		float("up", 0, 1500, 1, false),  // out of order
		float("up", 5, 3000, 42, false), // duplicate timestamp, other value
		prompb.TimeSeries{Labels: []labelpb.ZLabel{{Name: "__name__", Value: "bad"}, {Name: "", Value: "x"}}, Samples: []prompb.Sample{{Timestamp: 3000, Value: 1}}},
	)
	reversed := round(4000, 0, 15)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	return []writeRequest{
		{"a", round(1000, 0, 10)},
		{"a", round(2000, 0, 10)},
		{"a", third},
		{"b", round(1000, 0, 5)},
		{"a", reversed},
		{"not-ready", round(1000, 0, 2)},
		{"unknown", round(1000, 0, 2)},
	}
}

// decoded returns series as Thanos's handler has them: unmarshaled from a
// request buffer, their label strings aliasing it, and the buffer.
func decoded(t *testing.T, series []prompb.TimeSeries) ([]prompb.TimeSeries, []byte) {
	t.Helper()
	buf, err := (&prompb.WriteRequest{Timeseries: series}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(buf); err != nil {
		t.Fatal(err)
	}
	return req.Timeseries, buf
}

// dump prints every series of db, its samples and its exemplars.
func dump(t *testing.T, db *tsdb.DB) string {
	t.Helper()
	var b strings.Builder
	all := labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, all)
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		fmt.Fprintf(&b, "%s:", s.Labels())
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				ts, v := it.At()
				fmt.Fprintf(&b, " %d=%g", ts, v)
			case chunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				fmt.Fprintf(&b, " %d=%s", ts, h)
			case chunkenc.ValFloatHistogram:
				ts, h := it.AtFloatHistogram(nil)
				fmt.Fprintf(&b, " %d=%s", ts, h)
			}
		}
		b.WriteString("\n")
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	eq, err := db.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := eq.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{all})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		fmt.Fprintf(&b, "exemplars %s: %v\n", r.SeriesLabels, r.Exemplars)
	}
	return b.String()
}

// TestWriterDifferential sends the same writes to Thanos's receive.Writer
// over a TenantStorage and over the same kind of storage alone, and checks
// that every write returns the same error and that every tenant's TSDB
// ends with the same series, samples, histograms and exemplars; and that
// the series a tenant's earlier requests wrote are found in its cache, even
// though each request's buffer is overwritten once it is written, as a
// handler that reuses its buffers would: the cache must keep no label that
// aliases a request.
func TestWriterDifferential(t *testing.T) {
	names := []string{"a", "b"}
	plainTenants := openTenants(t, names, "not-ready")
	ikTenants := openTenants(t, names, "not-ready")
	wrapped := NewTenantStorage(ikTenants)
	plain := receive.NewWriter(log.NewNopLogger(), plainTenants, nil)
	withCache := receive.NewWriter(log.NewNopLogger(), wrapped, nil)
	ctx := context.Background()

	for i, req := range requests() {
		plainSeries, plainBuf := decoded(t, req.series)
		ikSeries, ikBuf := decoded(t, req.series)
		var hitsBefore int64
		if c := wrapped.Cache(req.tenant); c != nil {
			hitsBefore = c.Stats().Hits
		}

		wantErr := plain.Write(ctx, req.tenant, plainSeries)
		gotErr := withCache.Write(ctx, req.tenant, ikSeries)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("request %d (tenant %s): Write = %v, want %v", i, req.tenant, gotErr, wantErr)
		}
		// Overwritten in both: Thanos's Writer gives the head exemplar
		// labels that alias the request, and the head keeps them, so the
		// exemplars' labels read X in both TSDBs.
		for _, buf := range [][]byte{plainBuf, ikBuf} {
			for j := range buf {
				buf[j] = 'X'
			}
		}

		if i == 2 && wantErr == nil {
			t.Errorf("request %d: Write = nil, want the errors of its rejected samples", i)
		}
		if i == 1 { // the series of request 0 again
			hits := wrapped.Cache(req.tenant).Stats().Hits - hitsBefore
			if want := int64(len(req.series)); hits != want {
				t.Errorf("request %d: %d cache hits, want %d (every series)", i, hits, want)
			}
		}
	}

	for _, name := range names {
		got, want := dump(t, ikTenants[name].Get()), dump(t, plainTenants[name].Get())
		if got != want {
			t.Errorf("tenant %s's TSDB through a TenantStorage:\n%s\nwant, as through Thanos's Writer alone:\n%s", name, got, want)
		}
		if !strings.Contains(got, "exemplars") || !strings.Contains(got, "latency") {
			t.Errorf("tenant %s's TSDB has no exemplars or histograms:\n%s", name, got)
		}
		s := wrapped.Cache(name).Stats()
		t.Logf("tenant %s: cache %+v", name, s)
		if s.Len == 0 || s.Rebinds != 0 {
			t.Errorf("tenant %s: cache stats %+v, want entries and no rebinds", name, s)
		}
	}
	if wrapped.Cache("unknown") != nil {
		t.Errorf("Cache(\"unknown\") is not nil: a tenant the storage refused got a cache")
	}
}

// TestPurgeForgetsTenants checks that Purge drops the series not seen since
// its time and forgets a tenant left with none, whose next request starts
// a new cache.
func TestPurgeForgetsTenants(t *testing.T) {
	s := NewTenantStorage(openTenants(t, []string{"a"}, "not-ready"))
	w := receive.NewWriter(log.NewNopLogger(), s, nil)
	series, _ := decoded(t, []prompb.TimeSeries{float("up", 0, 1000, 1, false), float("up", 1, 1000, 1, false)})
	if err := w.Write(context.Background(), "a", series); err != nil {
		t.Fatal(err)
	}
	c := s.Cache("a")
	if c == nil || c.Len() != 2 {
		t.Fatalf("Cache(\"a\") = %v after writing 2 series, want 2 entries", c)
	}
	if n := s.Purge(math.MinInt64); n != 0 || s.Cache("a") != c {
		t.Errorf("Purge(MinInt64) = %d and dropped the tenant's cache, want 0 and kept", n)
	}
	if n := s.Purge(math.MaxInt64); n != 2 || s.Cache("a") != nil {
		t.Errorf("Purge(MaxInt64) = %d, cache %v, want 2 and the tenant forgotten", n, s.Cache("a"))
	}
}

// TestAppenderAllocs checks that the lookup and the append of a series in
// the cache make no allocation of their own: the path every series of a
// steady request takes.
func TestAppenderAllocs(t *testing.T) {
	s := NewTenantStorage(openTenants(t, []string{"a"}, "not-ready"))
	ctx := context.Background()
	lset := labels.FromStrings("__name__", "up", "job", "test")
	hash := lset.Hash()
	ts := int64(1000)
	appendOne := func() {
		a, err := s.TenantAppendable("a")
		if err != nil {
			t.Fatal(err)
		}
		app, err := a.Appender(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ref, ls := app.(storage.GetRef).GetRef(lset, hash)
		if _, err := app.Append(ref, ls, ts, 1); err != nil {
			t.Fatal(err)
		}
		ts++
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	appendOne() // the series is new: it is created and cached

	a, err := s.TenantAppendable("a")
	if err != nil {
		t.Fatal(err)
	}
	app, err := a.Appender(ctx)
	if err != nil {
		t.Fatal(err)
	}
	getRef := app.(*appender)
	allocs := testing.AllocsPerRun(1000, func() {
		ref, ls := getRef.GetRef(lset, hash)
		if ref == 0 {
			t.Fatal("GetRef of a cached series = 0")
		}
		if _, err := app.Append(ref, ls, ts, 1); err != nil {
			t.Fatal(err)
		}
		ts++
	})
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("GetRef and Append of a cached series: %v allocations, want 0", allocs)
	}
}
