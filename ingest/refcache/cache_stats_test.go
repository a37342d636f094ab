package refcache

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// addStats returns the sum of a and b.
func addStats(a, b AppenderStats) AppenderStats {
	return AppenderStats{
		CacheHits:   a.CacheHits + b.CacheHits,
		Guessed:     a.Guessed + b.Guessed,
		RefLookups:  a.RefLookups + b.RefLookups,
		NewSeries:   a.NewSeries + b.NewSeries,
		CacheStores: a.CacheStores + b.CacheStores,
	}
}

// TestCacheStats runs transactions whose hits, guesses, misses and stores
// are known, through both appenders, into a real head, and checks the
// cache's counts after each step and against the sum of the appenders'
// [AppenderStats].
func TestCacheStats(t *testing.T) {
	ctx := context.Background()
	head := newHead(t)
	cache := New(Options{})
	sets := seriesSet(100)
	series := make([]SeriesLabels, len(sets))
	for i, ls := range sets {
		series[i] = newPairSeries(ls)
	}
	var sum AppenderStats
	check := func(step string, want Stats) {
		t.Helper()
		var got Stats
		cache.UpdateStats(&got)
		if got != want {
			t.Fatalf("%s: UpdateStats = %+v, want %+v", step, got, want)
		}
		if got.Hits != int64(sum.CacheHits) || got.Guessed != int64(sum.Guessed) ||
			got.Misses != int64(sum.RefLookups+sum.NewSeries) {
			t.Fatalf("%s: UpdateStats = %+v, not the sum of the appenders' %+v", step, got, sum)
		}
		if s := cache.Stats(); s != got {
			t.Fatalf("%s: Stats() = %+v, UpdateStats %+v", step, s, got)
		}
	}

	// New series: all miss and are stored, counted at Commit only.
	a := NewAppenderV2(ctx, head, cache, 1000)
	for i, s := range series {
		h := mustHandle(a.Lookup(s))
		if err := a.Append(&h, 0, 1000, float64(i), nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	check("before the first Commit", Stats{Len: 100})
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	sum = addStats(sum, a.Stats())
	check("new series", Stats{Len: 100, Misses: 100, Stores: 100})
	// Nothing more once committed: Reset adds only what Commit had not.
	a.Reset(ctx, head, 1500)
	if err := a.Rollback(); err != nil {
		t.Fatal(err)
	}
	check("an empty transaction", Stats{Len: 100, Misses: 100, Stores: 100})

	// The v1 appender, rolled back: all hit, all but the first by the
	// guess of the series before.
	v1 := NewAppender(ctx, head, cache, 2000)
	for i, s := range series {
		h := mustHandle(v1.Lookup(s))
		if err := v1.Append(&h, 2000, float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := v1.Rollback(); err != nil {
		t.Fatal(err)
	}
	sum = addStats(sum, v1.Stats())
	check("v1, rolled back", Stats{Len: 100, Hits: 100, Guessed: 99, Misses: 100, Stores: 100})

	// A batch in the same order: the same guesses hold.
	a.Reset(ctx, head, 3000)
	hs := make([]Handle, len(series))
	errs := make([]error, len(series))
	a.LookupBatch(series, hs, errs)
	for i := range hs {
		if err := a.Append(&hs[i], 0, 3000, float64(i), nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	sum = addStats(sum, a.Stats())
	check("batch", Stats{Len: 100, Hits: 200, Guessed: 198, Misses: 100, Stores: 100})

	// Purged from the cache but held by the head: misses found by GetRef,
	// stored again. Counted by Reset, for a transaction the caller
	// committed on the wrapped appender itself.
	if got := cache.Purge(3001); got != 100 {
		t.Fatalf("Purge(3001) = %d, want 100", got)
	}
	check("purged", Stats{Hits: 200, Guessed: 198, Misses: 100, Stores: 100, Purged: 100})
	a.Reset(ctx, head, 4000)
	for i, s := range series {
		h := mustHandle(a.Lookup(s))
		if err := a.Append(&h, 0, 4000, float64(i), nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Wrapped().Commit(); err != nil {
		t.Fatal(err)
	}
	st := a.Stats()
	if want := (AppenderStats{RefLookups: 100, CacheStores: 100}); st != want {
		t.Fatalf("after the purge: AppenderStats = %+v, want %+v", st, want)
	}
	sum = addStats(sum, st)
	a.Reset(ctx, head, 5000)
	if err := a.Rollback(); err != nil {
		t.Fatal(err)
	}
	check("after the purge", Stats{Len: 100, Hits: 200, Guessed: 198, Misses: 200, Stores: 200, Purged: 100})

	// Cache.Store counts; Cache.Lookup does not.
	ref, lset, ok := cache.Lookup(series[0].Hash(), series[0], 6000)
	if !ok {
		t.Fatalf("Lookup(%s) missed", sets[0])
	}
	cache.Store(series[0].Hash(), ref, lset, 6000)
	check("Cache.Lookup and Cache.Store", Stats{Len: 100, Hits: 200, Guessed: 198, Misses: 200, Stores: 201, Purged: 100})
	if got := head.NumSeries(); got != 100 {
		t.Fatalf("head.NumSeries() = %d, want 100", got)
	}
}

// TestCacheStatsAllocs: reading the counts makes no allocation.
func TestCacheStatsAllocs(t *testing.T) {
	cache := New(Options{})
	appendOne(t, false, newHead(t), cache, labels.FromStrings("__name__", "up"), 1, 1)
	var s Stats
	if got := testing.AllocsPerRun(100, func() { cache.UpdateStats(&s) }); got != 0 {
		t.Fatalf("UpdateStats: AllocsPerRun = %v, want 0", got)
	}
	if s.Len != 1 || s.Stores != 1 {
		t.Fatalf("UpdateStats = %+v, want Len 1, Stores 1", s)
	}
}

// TestCacheZeroValue: a zero Cache is an empty cache with the default
// options, for the appenders and for direct use, from several goroutines
// at once.
func TestCacheZeroValue(t *testing.T) {
	var empty Cache
	ls := labels.FromStrings("__name__", "up", "job", "api")
	s := newPairSeries(ls)
	if _, _, ok := empty.Lookup(s.Hash(), s, 1); ok {
		t.Fatalf("Cache{}.Lookup found a series")
	}
	if got := empty.Purge(10); got != 0 {
		t.Fatalf("Cache{}.Purge(10) = %d, want 0", got)
	}
	if got := empty.Stats(); got != (Stats{}) {
		t.Fatalf("Cache{}.Stats() = %+v, want zero", got)
	}
	empty.Reset()
	if got, want := len(empty.table.Load().stripes), DefaultStripes; got != want {
		t.Fatalf("Cache{} after Reset has %d stripes, want %d", got, want)
	}

	t.Run("appender", func(t *testing.T) {
		var cache Cache
		head := newHead(t)
		sets := seriesSet(50)
		series := make([]SeriesLabels, len(sets))
		for i, ls := range sets {
			series[i] = newPairSeries(ls)
		}
		if got, want := appendRound(t, head, &cache, series, 1000), (AppenderStats{NewSeries: 50, CacheStores: 50}); got != want {
			t.Fatalf("first round: Stats() = %+v, want %+v", got, want)
		}
		if got, want := appendRound(t, head, &cache, series, 2000), (AppenderStats{CacheHits: 50, Guessed: 49}); got != want {
			t.Fatalf("second round: Stats() = %+v, want %+v", got, want)
		}
		if got, want := len(cache.table.Load().stripes), DefaultStripes; got != want {
			t.Fatalf("a zero Cache has %d stripes, want %d", got, want)
		}
		if got, want := cache.Stats(), (Stats{Len: 50, Hits: 50, Guessed: 49, Misses: 50, Stores: 50}); got != want {
			t.Fatalf("Stats() = %+v, want %+v", got, want)
		}
	})

	// The first stores race to make the table; run with -race.
	t.Run("concurrent stores", func(t *testing.T) {
		var cache Cache
		sets := seriesSet(400)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < len(sets); i += 4 {
					cache.Store(sets[i].Hash(), storage.SeriesRef(i+1), sets[i], 1)
				}
			})
		}
		wg.Wait()
		if got := cache.Len(); got != len(sets) {
			t.Fatalf("Len() = %d, want %d", got, len(sets))
		}
		for i, ls := range sets {
			if ref, _, ok := cache.Lookup(ls.Hash(), plainSeries{ls}, 2); !ok || ref != storage.SeriesRef(i+1) {
				t.Fatalf("Lookup(%s) = %d, %v, want %d, true", ls, ref, ok, i+1)
			}
		}
	})
}
