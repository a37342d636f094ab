package refcache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// appendOne appends one float sample to ls through a new transaction of
// the V2 or V1 appender over db.
func appendOne(t *testing.T, v1 bool, db interface {
	storage.Appendable
	storage.AppendableV2
}, cache *Cache, ls labels.Labels, ts int64, v float64) {
	t.Helper()
	if v1 {
		a := NewAppender(context.Background(), db, cache, ts)
		h := mustHandle(a.Lookup(newPairSeries(ls)))
		if err := a.Append(&h, ts, v); err != nil {
			t.Fatalf("Appender.Append(%s): %v", ls, err)
		}
		if err := a.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		return
	}
	a := NewAppenderV2(context.Background(), db, cache, ts)
	h := mustHandle(a.Lookup(newPairSeries(ls)))
	if err := a.Append(&h, 0, ts, v, nil, nil, storage.AOptions{}); err != nil {
		t.Fatalf("AppenderV2.Append(%s): %v", ls, err)
	}
	if err := a.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// TestCacheOtherHead is the misuse of issue 17: a series cached at ref 1
// of one head, and another series at ref 1 of a second head. Before the
// cache was bound to its storage, appending the first series to the second
// head through the cache wrote its sample into the other series ({b} held
// samples at 2 and 3, {a} none).
func TestCacheOtherHead(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v1=%v", v1), func(t *testing.T) {
			cache := New(Options{})
			a, b := labels.FromStrings("__name__", "a"), labels.FromStrings("__name__", "b")
			head1 := newHead(t)
			appendOne(t, v1, head1, cache, a, 1, 1)

			head2 := newHead(t)
			app := head2.AppenderV2(context.Background())
			if ref, err := app.Append(0, b, 0, 2, 2, nil, nil, storage.AOptions{}); err != nil || ref != 1 {
				t.Fatalf("head2.Append(b) = %d, %v, want ref 1 (the ref a has in head1)", ref, err)
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			appendOne(t, v1, head2, cache, a, 3, 3)

			got := queryHead(t, head2)
			want := map[string][]fsample{a.String(): {{3, 3}}, b.String(): {{2, 2}}}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("head2 holds %v, want %v", got, want)
			}
			if got, want := cache.Stats(), (Stats{Len: 1, Misses: 2, Stores: 2, Rebinds: 1}); got != want {
				t.Fatalf("Stats() = %+v, want %+v", got, want)
			}
			if got := queryHead(t, head1); fmt.Sprint(got) != fmt.Sprint(map[string][]fsample{a.String(): {{1, 1}}}) {
				t.Fatalf("head1 holds %v", got)
			}
		})
	}
}

// TestCacheTSDBReopen closes a tsdb.DB and opens another in the same
// process with the same cache: in a fresh directory (a Thanos tenant pruned
// and come back), in a directory removed and created again, and in the old
// directory, whose head is rebuilt from the WAL. In each case the new head
// is first given series the old one did not have, so that its refs name
// other series than the cache's; every sample is then read back from its
// own series.
func TestCacheTSDBReopen(t *testing.T) {
	sets := seriesSet(200)
	old, other := sets[:100], sets[100:]
	for _, tc := range []struct {
		name string
		// next returns the directory of the second DB, given the first's.
		next func(t *testing.T, dir string) string
		// replay: the second DB holds the first's samples and refs.
		replay bool
	}{
		{"fresh dir", func(t *testing.T, _ string) string { return t.TempDir() }, false},
		{"removed and recreated dir", func(t *testing.T, dir string) string {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			return dir
		}, false},
		{"same dir, WAL replay", func(_ *testing.T, dir string) string { return dir }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open := func(dir string) *tsdb.DB {
				db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
				if err != nil {
					t.Fatalf("tsdb.Open: %v", err)
				}
				return db
			}
			dir := filepath.Join(t.TempDir(), "tenant")
			w := &dbWriter{t: t, db: open(dir), cache: New(Options{Stripes: 16}), sent: map[string][]fsample{}}
			defer func() { _ = w.db.Close() }()
			w.round(old, 1000)
			w.round(old, 2000)
			w.check("first DB")
			refs := map[string]storage.SeriesRef{}
			for _, ls := range old {
				ref, _, ok := w.cache.Lookup(ls.Hash(), plainSeries{ls}, 2000)
				if !ok {
					t.Fatalf("%s not cached", ls)
				}
				refs[ls.String()] = ref
			}
			if err := w.db.Close(); err != nil {
				t.Fatal(err)
			}

			w.db = open(tc.next(t, dir))
			if tc.replay {
				// The WAL gave every series its old ref back: the cache's
				// refs would still be right, and are not used all the same,
				// as the cache cannot tell this directory from a new one.
				getRef := w.db.Head().Appender(context.Background()).(storage.GetRef)
				for _, ls := range old {
					if ref, _ := getRef.GetRef(ls, ls.Hash()); ref != refs[ls.String()] {
						t.Fatalf("after WAL replay, GetRef(%s) = %d, want the old ref %d", ls, ref, refs[ls.String()])
					}
				}
			} else {
				w.sent = map[string][]fsample{}
			}
			w.round(other, 3000)
			if w.stats.CacheHits != 0 {
				t.Fatalf("first round on the new DB: Stats() = %+v, want no cache hit", w.stats)
			}
			w.round(old, 4000)
			if want := (AppenderStats{NewSeries: 100, CacheStores: 100}); tc.replay {
				want = AppenderStats{RefLookups: 100, CacheStores: 100}
				if w.stats != want {
					t.Fatalf("old series on the replayed DB: Stats() = %+v, want %+v", w.stats, want)
				}
			} else if w.stats != want {
				t.Fatalf("old series on the new DB: Stats() = %+v, want %+v", w.stats, want)
			}
			w.round(sets, 5000)
			if want := (AppenderStats{CacheHits: 200, Guessed: 198}); w.stats != want {
				t.Fatalf("all series on the new DB: Stats() = %+v, want %+v", w.stats, want)
			}
			w.check("second DB")
			if got := w.cache.Stats(); got.Len != 200 || got.Rebinds != 1 {
				t.Fatalf("Cache.Stats() = %+v, want Len 200, Rebinds 1", got)
			}
		})
	}
}

// TestCacheHeadGC: in one DB, series garbage-collected from the head keep
// their refs in the cache. New series appended before them must not take
// those refs (the head never hands a ref out twice), and the stale refs,
// appended with their labels, reach their own series again.
func TestCacheHeadGC(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatalf("tsdb.Open: %v", err)
	}
	defer func() { _ = db.Close() }()
	sets := seriesSet(200)
	gone, steady, late := sets[:50], sets[50:150], sets[150:]
	w := &dbWriter{t: t, db: db, cache: New(Options{Stripes: 16}), sent: map[string][]fsample{}}
	const step = 30 * 60 * 1000
	w.round(append(append([]labels.Labels{}, gone...), steady...), 0)
	stale := map[storage.SeriesRef]bool{}
	for _, ls := range gone {
		ref, _, _ := w.cache.Lookup(ls.Hash(), plainSeries{ls}, 0)
		stale[ref] = true
	}
	for ts := int64(step); ts <= 6*step; ts += step {
		w.round(steady, ts)
	}
	// The head is truncated directly (as compaction does) to below the
	// steady series' first samples: gone's series have none left.
	if err := db.Head().Truncate(step); err != nil {
		t.Fatalf("Head.Truncate: %v", err)
	}
	if n := db.Head().NumSeries(); n != uint64(len(steady)) {
		t.Fatalf("head holds %d series after truncation, want %d", n, len(steady))
	}
	for _, ls := range gone {
		delete(w.sent, ls.String()) // truncated away, not compacted to a block
	}
	w.check("after truncation")

	w.round(late, 7*step)
	for _, ls := range late {
		if ref, _, _ := w.cache.Lookup(ls.Hash(), plainSeries{ls}, 7*step); stale[ref] {
			t.Fatalf("new series %s got ref %d of a collected series", ls, ref)
		}
	}
	w.round(gone, 8*step)
	if w.stats.CacheHits != 50 || w.stats.CacheStores != 50 || w.stats.NewSeries != 0 {
		t.Fatalf("stale refs: Stats() = %+v, want 50 cache hits and stores, no new series", w.stats)
	}
	w.round(sets, 9*step)
	w.check("after stale refs")
	if got := w.cache.Stats().Rebinds; got != 0 {
		t.Fatalf("Cache.Stats().Rebinds = %d within one DB, want 0", got)
	}
}

// TestCacheSharedByTwoHeads misuses one cache for two heads from several
// goroutines at once: it keeps emptying itself, and no sample ever lands in
// the other head's series. Run it with -race.
func TestCacheSharedByTwoHeads(t *testing.T) {
	heads := []*tsdb.Head{newHead(t), newHead(t)}
	cache := New(Options{Stripes: 4})
	// Goroutine g appends to head g%2 the series sets[g*10:][:10]; head 0
	// creates its series in its own order, so that equal refs name other
	// series in the two heads.
	sets := seriesSet(40)
	const rounds = 30
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			mine := sets[g*10 : g*10+10]
			for r := range rounds {
				ts := int64(1 + r)
				a := NewAppenderV2(context.Background(), heads[g%2], cache, ts)
				for j := range mine {
					ls := mine[(j+g*3)%len(mine)]
					h := mustHandle(a.Lookup(newPairSeries(ls)))
					if err := a.Append(&h, 0, ts, float64(g*1000+r), nil, nil, storage.AOptions{}); err != nil {
						t.Errorf("head %d: Append(%s): %v", g%2, ls, err)
						return
					}
				}
				if err := a.Commit(); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := []map[string][]fsample{queryHead(t, heads[0]), queryHead(t, heads[1])}
	for i := range got {
		if len(got[i]) != 20 {
			t.Fatalf("head %d holds %d series, want 20", i, len(got[i]))
		}
	}
	for g := range 4 {
		for _, ls := range sets[g*10 : g*10+10] {
			var want []fsample
			for r := range rounds {
				want = append(want, fsample{int64(1 + r), float64(g*1000 + r)})
			}
			if s := got[g%2][ls.String()]; fmt.Sprint(s) != fmt.Sprint(want) {
				t.Fatalf("head %d: samples of %s = %v, want %v", g%2, ls, s, want)
			}
		}
	}
	t.Logf("Cache.Stats() = %+v", cache.Stats())
}

// TestCacheBindPanics: a storage the cache cannot compare is a programmer
// error, reported at once rather than by a cache that never hits.
func TestCacheBindPanics(t *testing.T) {
	head := newHead(t)
	for _, tc := range []struct {
		name string
		db   storage.AppendableV2
	}{
		{"nil", nil},
		{"incomparable", funcAppendable{f: head.AppenderV2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("NewAppenderV2 with a %s storage did not panic", tc.name)
				}
			}()
			c := New(Options{})
			c.bind(tc.db)
		})
	}
}

type funcAppendable struct {
	f func(context.Context) storage.AppenderV2
}

func (a funcAppendable) AppenderV2(ctx context.Context) storage.AppenderV2 { return a.f(ctx) }

// TestCacheReset empties the cache and unbinds it: the next storage binds
// it without a rebind.
func TestCacheReset(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	ls := labels.FromStrings("__name__", "up")
	appendOne(t, false, head, cache, ls, 1, 1)
	cache.Reset()
	if got, want := cache.Stats(), (Stats{Misses: 1, Stores: 1, Resets: 1}); got != want {
		t.Fatalf("after Reset: Stats() = %+v, want %+v", got, want)
	}
	if b := cache.table.Load().bound.Load(); b != nil {
		t.Fatalf("after Reset, the cache still holds %T", b.storage)
	}
	head2 := newHead(t)
	appendOne(t, false, head2, cache, ls, 2, 2)
	if got, want := cache.Stats(), (Stats{Len: 1, Misses: 2, Stores: 2, Resets: 1}); got != want {
		t.Fatalf("after Reset and another head: Stats() = %+v, want %+v", got, want)
	}
}

// TestAppenderResetAllocs: binding the cache to the storage it serves
// costs nothing over opening the head's transaction.
func TestAppenderResetAllocs(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	ctx := context.Background()
	base := testing.AllocsPerRun(100, func() { _ = head.AppenderV2(ctx).Rollback() })
	a := NewAppenderV2(ctx, head, cache, 1)
	_ = a.Rollback()
	if got := testing.AllocsPerRun(100, func() { a.Reset(ctx, head, 1); _ = a.Rollback() }); got != base {
		t.Errorf("AppenderV2.Reset+Rollback: AllocsPerRun = %v, want the head's own %v", got, base)
	}
	v1 := NewAppender(ctx, head, cache, 1)
	_ = v1.Rollback()
	base = testing.AllocsPerRun(100, func() { _ = head.Appender(ctx).Rollback() })
	if got := testing.AllocsPerRun(100, func() { v1.Reset(ctx, head, 1); _ = v1.Rollback() }); got != base {
		t.Errorf("Appender.Reset+Rollback: AllocsPerRun = %v, want the head's own %v", got, base)
	}
}
