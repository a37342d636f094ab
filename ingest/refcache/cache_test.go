package refcache

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

func TestCacheStripesRoundUp(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{0, DefaultStripes}, {-3, DefaultStripes}, {1, 1}, {3, 4}, {128, 128}, {129, 256}} {
		if got := len(New(Options{Stripes: tc.in}).table.Load().stripes); got != tc.want {
			t.Errorf("New(Stripes: %d) has %d stripes, want %d", tc.in, got, tc.want)
		}
	}
}

func TestCacheCollisionsAndPurge(t *testing.T) {
	c := New(Options{Stripes: 2})
	sets := seriesSet(5)
	// All five share hash 7; each is stored at its own time.
	for i, ls := range sets {
		c.Store(7, storage.SeriesRef(i+1), ls, int64(10*i))
	}
	if c.Len() != 5 {
		t.Fatalf("Len() = %d, want 5", c.Len())
	}
	for i, ls := range sets {
		ref, got, ok := c.Lookup(7, plainSeries{ls}, 0)
		if !ok || ref != storage.SeriesRef(i+1) || !labels.Equal(got, ls) {
			t.Fatalf("Lookup(7, %s) = %d, %s, %v, want %d", ls, ref, got, ok, i+1)
		}
	}
	if _, _, ok := c.Lookup(7, plainSeries{labels.FromStrings("__name__", "other")}, 0); ok {
		t.Fatalf("Lookup of an absent series with a colliding hash: ok = true")
	}
	// Store again: an update, not an addition.
	c.Store(7, 99, sets[2], 25)
	if ref, _, _ := c.Lookup(7, plainSeries{sets[2]}, 0); ref != 99 || c.Len() != 5 {
		t.Fatalf("after re-Store: ref = %d, Len() = %d, want 99, 5", ref, c.Len())
	}
	// Seen at 0, 10, 25, 30, 40: keep from 20 drops the first two, the first
	// being the one the map slot held, so a conflict is promoted.
	if got := c.Purge(20); got != 2 {
		t.Fatalf("Purge(20) = %d, want 2", got)
	}
	for i, ls := range sets {
		_, _, ok := c.Lookup(7, plainSeries{ls}, 0)
		if want := i >= 2; ok != want {
			t.Fatalf("after Purge(20), Lookup(%s) ok = %v, want %v", ls, ok, want)
		}
	}
	// Lookup marks entries seen: a lookup at 100 keeps sets[4] alive.
	c.Lookup(7, plainSeries{sets[4]}, 100)
	if got := c.Purge(50); got != 2 || c.Len() != 1 {
		t.Fatalf("Purge(50) = %d, Len() = %d, want 2, 1", got, c.Len())
	}
	if _, _, ok := c.Lookup(7, plainSeries{sets[4]}, 0); !ok {
		t.Fatalf("entry seen at 100 was purged at 50")
	}
	if got := c.Purge(1000); got != 1 || c.Len() != 0 {
		t.Fatalf("Purge(1000) = %d, Len() = %d, want 1, 0", got, c.Len())
	}
}

func TestCacheLookupAllocs(t *testing.T) {
	c := New(Options{})
	ls := labels.FromStrings("__name__", "up", "job", "api")
	s := newPairSeries(ls)
	c.Store(s.Hash(), 1, ls, 0)
	if got := testing.AllocsPerRun(1000, func() { c.Lookup(s.Hash(), s, 5) }); got != 0 {
		t.Fatalf("Lookup hit: AllocsPerRun = %v, want 0", got)
	}
}

// TestCacheConcurrent runs lookups, stores and purges at once; run it with
// -race.
func TestCacheConcurrent(t *testing.T) {
	c := New(Options{Stripes: 8})
	sets := seriesSet(1000)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				now := int64(round)
				for i := w; i < len(sets); i += 2 {
					ls := sets[i]
					if ref, got, ok := c.Lookup(ls.Hash(), plainSeries{ls}, now); ok {
						if ref != storage.SeriesRef(i+1) || !labels.Equal(got, ls) {
							t.Errorf("Lookup(%s) = %d, %s, want %d", ls, ref, got, i+1)
							return
						}
						continue
					}
					c.Store(ls.Hash(), storage.SeriesRef(i+1), ls, now)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			c.Purge(5)
			_ = c.Len()
		}
	}()
	wg.Wait()
	if n := c.Len(); n < 0 || n > len(sets) {
		t.Fatalf("Len() = %d after concurrent use, want 0..%d", n, len(sets))
	}
}

// TestCacheMemoryPerEntry measures what the cache itself retains per series,
// the labels being the TSDB's and not counted; the doc of Cache quotes it.
func TestCacheMemoryPerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 200k entries")
	}
	const n = 200_000
	sets := make([]labels.Labels, n)
	sb := labels.NewScratchBuilder(2) // one symbol table for all, under dedupelabels
	for i := range sets {
		sb.Reset()
		sb.Add("__name__", "m")
		sb.Add("i", fmt.Sprint(i))
		sets[i] = sb.Labels()
	}
	// Two cycles: sync.Pool keeps what other tests pooled through one.
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := New(Options{})
	for i, ls := range sets {
		c.Store(ls.Hash(), storage.SeriesRef(i+1), ls, 0)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	perEntry := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("cache memory: %.1f bytes per entry (%d entries, %d stripes)", perEntry, n, c.stripes)
	if perEntry > 100 {
		t.Fatalf("cache memory = %.1f bytes per entry, want at most 100", perEntry)
	}
	runtime.KeepAlive(c)
	runtime.KeepAlive(sets)
}

// TestCacheIndex fills one stripe's index past several growths, with runs
// of colliding hashes that wrap around its end, purges every other entry
// and stores again: every series is found by its labels, none that is
// absent is, and the index keeps its bound on fullness.
func TestCacheIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		hash func(i int) uint64
	}{
		{"distinct", 5000, func(i int) uint64 { return uint64(i) * 0x9E3779B97F4A7C15 }},
		// Home slot the last one whatever the size: every probe wraps.
		{"collide-at-end", 300, func(int) uint64 { return ^uint64(0) }},
		{"pairs-collide", 2000, func(i int) uint64 { return uint64(i/2) * 0x9E3779B97F4A7C15 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Options{Stripes: 1})
			sets := seriesSet(tc.n)
			check := func(when string, present func(i int) bool) {
				t.Helper()
				for i, ls := range sets {
					ref, got, ok := c.Lookup(tc.hash(i), plainSeries{ls}, 0)
					if ok != present(i) || ok && (ref != storage.SeriesRef(i+1) || !labels.Equal(got, ls)) {
						t.Fatalf("%s: Lookup(%s) = %d, %s, %v, want %d, %v", when, ls, ref, got, ok, i+1, present(i))
					}
				}
				s := &c.table.Load().stripes[0]
				if tb := s.slots.Load(); tb != nil && s.used*8 > len(tb.slots)*7 {
					t.Fatalf("%s: %d entries in %d slots, more than 7/8", when, s.used, len(tb.slots))
				}
			}
			for i, ls := range sets {
				c.Store(tc.hash(i), storage.SeriesRef(i+1), ls, int64(i%2))
			}
			check("stored", func(int) bool { return true })
			if got, want := c.Purge(1), (tc.n+1)/2; got != want {
				t.Fatalf("Purge(1) = %d, want %d", got, want)
			}
			check("purged", func(i int) bool { return i%2 == 1 })
			for i, ls := range sets {
				if i%2 == 0 {
					c.Store(tc.hash(i), storage.SeriesRef(i+1), ls, 2)
				}
			}
			check("stored again", func(int) bool { return true })
			if got := c.Len(); got != tc.n {
				t.Fatalf("Len() = %d, want %d", got, tc.n)
			}
			if got := c.Purge(10); got != tc.n || c.table.Load().stripes[0].slots.Load() != nil {
				t.Fatalf("Purge(10) = %d, want %d and an empty stripe", got, tc.n)
			}
			check("all purged", func(int) bool { return false })
		})
	}
}
