package refcache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/ingest/refcache"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// ordersSets returns n label sets.
func ordersSets(n int) []labels.Labels {
	sets := make([]labels.Labels, n)
	for i := range sets {
		sets[i] = labels.FromStrings("__name__", "up", "instance", fmt.Sprintf("host-%d:9100", i), "job", "node")
	}
	return sets
}

// TestConcurrentOrdersHashes runs appenders over one head and one cache,
// each in an order of its own that it repeats, so that each learns its
// guesses while the others overwrite them, one by one and in batches, with
// purges; run it with -race. Every handle's hash must be that of its
// labels, whichever entry's guess found it.
func TestConcurrentOrdersHashes(t *testing.T) {
	const n, writers, rounds = 400, 4, 25
	head := newTestHead(t)
	cache := refcache.New(refcache.Options{Stripes: 4})
	sets := ordersSets(n)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 19))
			order := rng.Perm(n)
			// Each writer its own builders: an Equaler is used by one
			// goroutine.
			series := make([]refcache.SeriesLabels, n)
			for k, i := range order {
				b := new(iklabels.HashedBuilder)
				sets[i].Range(func(l labels.Label) { b.AddString(l.Name, l.Value) })
				series[k] = b
			}
			hs := make([]refcache.Handle, n)
			errs := make([]error, n)
			for r := range rounds {
				ts := int64(r*writers+w) * 1000
				a := refcache.NewAppenderV2(context.Background(), head, cache, ts)
				lookupAll(a, w%2 == 1, series, hs, errs)
				for k, i := range order {
					if errs[k] != nil {
						t.Errorf("lookup of %s: %v", sets[i], errs[k])
						return
					}
					if got, want := hs[k].Hash(), sets[i].Hash(); got != want {
						t.Errorf("writer %d, round %d: Handle.Hash() of %s = %#x, want %#x", w, r, sets[i], got, want)
						return
					}
					if !labels.Equal(hs[k].Labels(), sets[i]) {
						t.Errorf("writer %d: Handle.Labels() = %s, want %s", w, hs[k].Labels(), sets[i])
						return
					}
					err := a.Append(&hs[k], 0, ts, float64(i), nil, nil, storage.AOptions{})
					if err != nil && !errors.Is(err, storage.ErrOutOfOrderSample) && !errors.Is(err, storage.ErrTooOldSample) {
						t.Errorf("Append(%s, t=%d): %v", sets[i], ts, err)
						return
					}
				}
				if err := a.Commit(); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 50 {
			cache.Purge(int64(i) * 2000)
		}
	}()
	wg.Wait()
	if got := head.NumSeries(); !t.Failed() && got != n {
		t.Fatalf("head.NumSeries() = %d, want %d", got, n)
	}
	if st := cache.Stats(); !t.Failed() && st.Guessed == 0 {
		t.Fatalf("Stats = %+v: no guess held, the test follows no guesses", st)
	}
}
