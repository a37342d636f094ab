package refcache

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// appendRound appends one sample at ts to every series through a new
// transaction of an AppenderV2 over head, and returns its stats.
func appendRound(t *testing.T, head interface {
	AppenderV2(context.Context) storage.AppenderV2
}, cache *Cache, series []SeriesLabels, ts int64) AppenderStats {
	t.Helper()
	a := NewAppenderV2(context.Background(), head, cache, ts)
	for i, s := range series {
		h := mustHandle(a.Lookup(s))
		if err := a.Append(&h, 0, ts, float64(i)+float64(ts), nil, nil, storage.AOptions{}); err != nil {
			t.Fatalf("Append(series %d, t=%d): %v", i, ts, err)
		}
	}
	if err := a.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return a.Stats()
}

func TestAppenderCachesRefs(t *testing.T) {
	head := newHead(t)
	cache := New(Options{Stripes: 4})
	sets := seriesSet(500)
	series := make([]SeriesLabels, len(sets))
	for i, ls := range sets {
		series[i] = newPairSeries(ls)
	}
	if got, want := appendRound(t, head, cache, series, 1000), (AppenderStats{NewSeries: 500, CacheStores: 500}); got != want {
		t.Fatalf("first round: Stats() = %+v, want %+v", got, want)
	}
	for ts := int64(2000); ts <= 4000; ts += 1000 {
		if got, want := appendRound(t, head, cache, series, ts), (AppenderStats{CacheHits: 500, Guessed: 499}); got != want {
			t.Fatalf("round at %d: Stats() = %+v, want %+v", ts, got, want)
		}
	}
	if got := head.NumSeries(); got != 500 {
		t.Fatalf("head.NumSeries() = %d, want 500", got)
	}
	got := queryHead(t, head)
	for i, ls := range sets {
		want := []fsample{{1000, float64(i) + 1000}, {2000, float64(i) + 2000}, {3000, float64(i) + 3000}, {4000, float64(i) + 4000}}
		if fmt.Sprint(got[ls.String()]) != fmt.Sprint(want) {
			t.Fatalf("samples of %s = %v, want %v", ls, got[ls.String()], want)
		}
	}
}

// TestAppenderGetRef: a series the head holds but the cache does not (a new
// cache, as after a restart) is found with GetRef and not copied.
func TestAppenderGetRef(t *testing.T) {
	head := newHead(t)
	sets := seriesSet(50)
	var series []SeriesLabels
	for _, ls := range sets {
		series = append(series, newPairSeries(ls))
	}
	appendRound(t, head, New(Options{}), series, 1000)
	fresh := New(Options{})
	if got, want := appendRound(t, head, fresh, series, 2000), (AppenderStats{RefLookups: 50, CacheStores: 50}); got != want {
		t.Fatalf("with a new cache: Stats() = %+v, want %+v", got, want)
	}
	if got, want := appendRound(t, head, fresh, series, 3000), (AppenderStats{CacheHits: 50, Guessed: 49}); got != want {
		t.Fatalf("then: Stats() = %+v, want %+v", got, want)
	}
	// A series without scratch labels takes the same path.
	plain := []SeriesLabels{plainSeries{sets[0]}}
	if got, want := appendRound(t, head, New(Options{}), plain, 4000), (AppenderStats{RefLookups: 1, CacheStores: 1}); got != want {
		t.Fatalf("plain series with a new cache: Stats() = %+v, want %+v", got, want)
	}
}

// TestAppenderHashCollision forces two different series to one hash: both
// are stored, found and appended to, each on its own series.
func TestAppenderHashCollision(t *testing.T) {
	head := newHead(t)
	cache := New(Options{Stripes: 1})
	a, b := labels.FromStrings("__name__", "a", "job", "x"), labels.FromStrings("__name__", "b", "job", "y")
	sa, sb := newPairSeries(a), newPairSeries(b)
	sa.forcedHash, sb.forcedHash = 42, 42
	series := []SeriesLabels{sa, sb}
	appendRound(t, head, cache, series, 1000)
	if got, want := appendRound(t, head, cache, series, 2000), (AppenderStats{CacheHits: 2, Guessed: 1}); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
	if cache.Len() != 2 {
		t.Fatalf("cache.Len() = %d, want 2", cache.Len())
	}
	got := queryHead(t, head)
	if want := []fsample{{1000, 1000}, {2000, 2000}}; fmt.Sprint(got[a.String()]) != fmt.Sprint(want) {
		t.Fatalf("samples of %s = %v, want %v", a, got[a.String()], want)
	}
	if want := []fsample{{1000, 1001}, {2000, 2001}}; fmt.Sprint(got[b.String()]) != fmt.Sprint(want) {
		t.Fatalf("samples of %s = %v, want %v", b, got[b.String()], want)
	}
}

// TestAppenderStaleRef: the head drops a series (truncation and GC) while
// the cache still holds its ref; the next sample must land on the right,
// recreated series, and the cache must learn the new ref.
func TestAppenderStaleRef(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	a, b := labels.FromStrings("__name__", "a"), labels.FromStrings("__name__", "b")
	sa, sb := newPairSeries(a), newPairSeries(b)
	appendRound(t, head, cache, []SeriesLabels{sa, sb}, 1000)
	refA, _, _ := cache.Lookup(sa.Hash(), sa, 0)
	// Only b continues; a's only sample falls before the truncation point.
	appendRound(t, head, cache, []SeriesLabels{sb}, 5_000_000)
	if err := head.Truncate(4_000_000); err != nil {
		t.Fatalf("Truncate: %v", err)
	}
	if got := head.NumSeries(); got != 1 {
		t.Fatalf("head.NumSeries() after truncation = %d, want 1 (a collected)", got)
	}
	st := appendRound(t, head, cache, []SeriesLabels{sa, sb}, 5_001_000)
	if want := (AppenderStats{CacheHits: 2, CacheStores: 1}); st != want {
		t.Fatalf("Stats() after a's series was collected = %+v, want %+v", st, want)
	}
	newRefA, _, _ := cache.Lookup(sa.Hash(), sa, 0)
	if newRefA == refA {
		t.Fatalf("cache still holds the collected ref %d for %s", refA, a)
	}
	got := queryHead(t, head)
	if want := []fsample{{5_001_000, 5_001_000}}; fmt.Sprint(got[a.String()]) != fmt.Sprint(want) {
		t.Fatalf("samples of %s = %v, want %v", a, got[a.String()], want)
	}
	// b's chunk still spans its first sample; what matters is the last two.
	if bs, want := got[b.String()], []fsample{{5_000_000, 5_000_000}, {5_001_000, 5_001_001}}; len(bs) < 2 || fmt.Sprint(bs[len(bs)-2:]) != fmt.Sprint(want) {
		t.Fatalf("samples of %s = %v, want them to end with %v", b, bs, want)
	}
}

// TestAppenderErrors: Prometheus's own errors come back unchanged, and a
// new series is validated by the head as always.
func TestAppenderErrors(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	s := newPairSeries(labels.FromStrings("__name__", "m"))
	appendRound(t, head, cache, []SeriesLabels{s}, 2000)

	a := NewAppenderV2(context.Background(), head, cache, 1)
	h := mustHandle(a.Lookup(s))
	if err := a.Append(&h, 0, 1000, 1, nil, nil, storage.AOptions{}); !errors.Is(err, storage.ErrOutOfOrderSample) {
		t.Fatalf("Append(older sample) = %v, want storage.ErrOutOfOrderSample", err)
	}
	if err := a.Append(&h, 0, 2000, 7, nil, nil, storage.AOptions{}); !errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
		t.Fatalf("Append(same timestamp, other value) = %v, want storage.ErrDuplicateSampleForTimestamp", err)
	}
	dup := newPairSeries(labels.EmptyLabels())
	dup.lb.Set.AddString("__name__", "x")
	dup.lb.Set.AddString("__name__", "y")
	hd := mustHandle(a.Lookup(dup))
	if err := a.Append(&hd, 0, 3000, 1, nil, nil, storage.AOptions{}); err == nil {
		t.Fatalf("Append(series with a repeated label name) = nil, want the head's error")
	}
	if cache.Len() != 1 {
		t.Fatalf("cache.Len() after rejected series = %d, want 1", cache.Len())
	}
	if err := a.Rollback(); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
}

func TestAppender(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	sets := seriesSet(100)
	for round, ts := range []int64{1000, 2000} {
		a := NewAppender(context.Background(), head, cache, ts)
		for i, ls := range sets {
			h := mustHandle(a.Lookup(newPairSeries(ls)))
			if err := a.Append(&h, ts, float64(i)); err != nil {
				t.Fatalf("Append: %v", err)
			}
		}
		if err := a.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		want := AppenderStats{NewSeries: 100, CacheStores: 100}
		if round == 1 {
			want = AppenderStats{CacheHits: 100, Guessed: 99}
		}
		if got := a.Stats(); got != want {
			t.Fatalf("round %d: Stats() = %+v, want %+v", round, got, want)
		}
	}
	got := queryHead(t, head)
	for i, ls := range sets {
		if want := []fsample{{1000, float64(i)}, {2000, float64(i)}}; fmt.Sprint(got[ls.String()]) != fmt.Sprint(want) {
			t.Fatalf("samples of %s = %v, want %v", ls, got[ls.String()], want)
		}
	}
}

// TestAppenderAllocs: resolving a cached series makes no allocation, nor
// does resolving one the head holds (GetRef with scratch labels); the
// wrapper adds none to the head's own append.
func TestAppenderAllocs(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	sets := seriesSet(64)
	series := make([]SeriesLabels, len(sets))
	for i, ls := range sets {
		series[i] = newPairSeries(ls)
	}
	appendRound(t, head, cache, series, 1000)

	a := NewAppenderV2(context.Background(), head, cache, 2000)
	i := 0
	if got := testing.AllocsPerRun(1000, func() { _, _ = a.Lookup(series[i%len(series)]); i++ }); got != 0 {
		t.Errorf("Lookup of a cached series: AllocsPerRun = %v, want 0", got)
	}
	a.cache = New(Options{}) // every lookup misses the cache and asks the head
	a.Reset(context.Background(), head, 2000)
	if got := testing.AllocsPerRun(1000, func() { _, _ = a.Lookup(series[i%len(series)]); i++ }); got != 0 {
		t.Errorf("Lookup through GetRef: AllocsPerRun = %v, want 0", got)
	}
	if st := a.Stats(); st.CacheHits != 0 || st.RefLookups == 0 {
		t.Errorf("Lookup through GetRef: Stats() = %+v, want only RefLookups", st)
	}
	_ = a.Rollback()

	// Append through the wrapper against the head's own Append with the same
	// ref and labels: the wrapper must add nothing.
	const runs = 2000
	ts := int64(10_000)
	app := head.AppenderV2(context.Background())
	refs := make([]storage.SeriesRef, len(series))
	lsets := make([]labels.Labels, len(series))
	for j, s := range series {
		refs[j], lsets[j], _ = cache.Lookup(s.Hash(), s, 0)
	}
	base := testing.AllocsPerRun(runs, func() {
		j := i % len(series)
		if j == 0 {
			ts++
		}
		if _, err := app.Append(refs[j], lsets[j], 0, ts, 1, nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		i++
	})
	_ = app.Commit()
	a.cache = cache
	a.Reset(context.Background(), head, 3000)
	i = 0
	ts += 10_000
	got := testing.AllocsPerRun(runs, func() {
		j := i % len(series)
		if j == 0 {
			ts++
		}
		h := mustHandle(a.Lookup(series[j]))
		if err := a.Append(&h, 0, ts, 1, nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		i++
	})
	_ = a.Commit()
	if got > base {
		t.Errorf("Lookup+Append of a cached series: AllocsPerRun = %v, want at most the head's own %v", got, base)
	}
}

func TestHandleCached(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	s := newPairSeries(labels.FromStrings("__name__", "up", "job", "api"))
	for i, want := range []struct{ beforeAppend, afterAppend bool }{{false, true}, {true, true}} {
		ts := int64(1000 * (i + 1))
		a := NewAppenderV2(context.Background(), head, cache, ts)
		h := mustHandle(a.Lookup(s))
		if got := h.Cached(); got != want.beforeAppend {
			t.Fatalf("round %d: Cached() after Lookup = %v, want %v", i, got, want.beforeAppend)
		}
		if err := a.Append(&h, 0, ts, 1, nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := h.Cached(); got != want.afterAppend {
			t.Fatalf("round %d: Cached() after Append = %v, want %v", i, got, want.afterAppend)
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	cache.Purge(10_000)
	a := NewAppenderV2(context.Background(), head, cache, 10_000)
	if h := mustHandle(a.Lookup(s)); h.Cached() {
		t.Fatalf("Cached() after the entry was purged = true")
	}
	_ = a.Rollback()
}
