package refcache

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// dbWriter appends through an AppenderV2 over a real tsdb.DB and remembers
// every sample it sent, to check that each one can be queried back.
type dbWriter struct {
	t     *testing.T
	db    *tsdb.DB
	cache *Cache
	sent  map[string][]fsample
	stats AppenderStats
}

func (w *dbWriter) round(sets []labels.Labels, ts int64) {
	w.t.Helper()
	a := NewAppenderV2(context.Background(), w.db, w.cache, ts)
	for _, ls := range sets {
		h := mustHandle(a.Lookup(newPairSeries(ls)))
		v := float64(ts)/1000 + float64(len(ls.String()))
		if err := a.Append(&h, 0, ts, v, nil, nil, storage.AOptions{}); err != nil {
			w.t.Fatalf("Append(%s, t=%d): %v", ls, ts, err)
		}
		w.sent[ls.String()] = append(w.sent[ls.String()], fsample{ts, v})
	}
	if err := a.Commit(); err != nil {
		w.t.Fatalf("Commit: %v", err)
	}
	w.stats = a.Stats()
}

func (w *dbWriter) check(what string) {
	w.t.Helper()
	q, err := w.db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		w.t.Fatalf("%s: Querier: %v", what, err)
	}
	got := queryAll(w.t, q)
	if len(got) != len(w.sent) {
		w.t.Fatalf("%s: %d series queried, want %d", what, len(got), len(w.sent))
	}
	for s, want := range w.sent {
		if fmt.Sprint(got[s]) != fmt.Sprint(want) {
			w.t.Fatalf("%s: samples of %s = %v, want %v", what, s, got[s], want)
		}
	}
}

// TestAppenderDB writes through the AppenderV2 into a real tsdb.DB, new and
// existing series, across compaction with head garbage collection and a
// restart with WAL replay, and queries every sample back each time.
func TestAppenderDB(t *testing.T) {
	dir := t.TempDir()
	opts := tsdb.DefaultOptions()
	open := func() *tsdb.DB {
		db, err := tsdb.Open(dir, nil, nil, opts, nil)
		if err != nil {
			t.Fatalf("tsdb.Open: %v", err)
		}
		return db
	}
	sets := seriesSet(300)
	early, steady, late := sets[:100], sets[100:250], sets[250:]
	w := &dbWriter{t: t, db: open(), cache: New(Options{Stripes: 16}), sent: map[string][]fsample{}}
	defer func() { _ = w.db.Close() }()

	const step = 30 * 60 * 1000 // 30 minutes
	w.round(append(append([]labels.Labels{}, early...), steady...), 0)
	if want := (AppenderStats{NewSeries: 250, CacheStores: 250}); w.stats != want {
		t.Fatalf("first round: Stats() = %+v, want %+v", w.stats, want)
	}
	w.round(append(append([]labels.Labels{}, early...), steady...), step)
	for ts := int64(2 * step); ts <= 10*step; ts += step {
		w.round(steady, ts)
		if want := (AppenderStats{CacheHits: 150, Guessed: 149}); w.stats != want {
			t.Fatalf("round at %d: Stats() = %+v, want %+v", ts, w.stats, want)
		}
	}
	w.check("before compaction")

	// Compaction writes blocks and truncates the head; the early series,
	// idle since then, are garbage-collected from it while the cache still
	// holds their refs.
	if err := w.db.Compact(context.Background()); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if len(w.db.Blocks()) == 0 {
		t.Fatalf("Compact wrote no block")
	}
	if n := w.db.Head().NumSeries(); n != uint64(len(steady)) {
		t.Fatalf("head holds %d series after compaction, want %d (early series collected)", n, len(steady))
	}
	w.check("after compaction")

	w.round(append(append([]labels.Labels{}, early...), late...), 11*step)
	if want := (AppenderStats{CacheHits: 100, NewSeries: 50, CacheStores: 150}); w.stats != want {
		t.Fatalf("stale refs and new series: Stats() = %+v, want %+v", w.stats, want)
	}
	w.round(sets, 12*step)
	// Guesses learnt in the rounds before hold within early, steady and
	// late, and fail where one group follows another for the first time.
	if want := (AppenderStats{CacheHits: 300, Guessed: 99 + 149 + 49}); w.stats != want {
		t.Fatalf("after relearning: Stats() = %+v, want %+v", w.stats, want)
	}
	w.check("after stale refs")

	// Restart: the head is rebuilt from the WAL. The reopened DB is another
	// storage, so the old cache starts empty (TestCacheTSDBReopen), and it
	// and a new cache learn the refs through GetRef.
	if err := w.db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	w.db = open()
	w.check("after restart")
	w.round(sets, 13*step)
	if want := (AppenderStats{RefLookups: 300, CacheStores: 300}); w.stats != want {
		t.Fatalf("after restart with the old cache: Stats() = %+v, want %+v", w.stats, want)
	}
	if got := w.cache.Stats().Rebinds; got != 1 {
		t.Fatalf("after restart: Cache.Stats().Rebinds = %d, want 1", got)
	}
	w.cache = New(Options{})
	w.round(sets, 14*step)
	if want := (AppenderStats{RefLookups: 300, CacheStores: 300}); w.stats != want {
		t.Fatalf("after restart with a new cache: Stats() = %+v, want %+v", w.stats, want)
	}
	w.check("after restart and new cache")
}
