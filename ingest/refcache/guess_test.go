package refcache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// TestAppenderGuessPurged: the series a guess points to is purged from the
// cache; the lookup must not use the dropped entry, and must find the
// series by GetRef and relearn it.
func TestAppenderGuessPurged(t *testing.T) {
	head := newHead(t)
	cache := New(Options{Stripes: 2})
	sets := seriesSet(3)
	series := []SeriesLabels{newPairSeries(sets[0]), newPairSeries(sets[1]), newPairSeries(sets[2])}
	appendRound(t, head, cache, series, 1000) // guesses: 0 -> 1 -> 2
	// Seen later without the appender, so no guess changes; 1 goes idle.
	for _, i := range []int{0, 2} {
		if _, _, ok := cache.Lookup(series[i].Hash(), series[i], 5000); !ok {
			t.Fatalf("Lookup(%s) missed", sets[i])
		}
	}
	if got := cache.Purge(3000); got != 1 {
		t.Fatalf("Purge(3000) = %d, want 1", got)
	}
	st := appendRound(t, head, cache, series, 2000)
	if want := (AppenderStats{CacheHits: 2, RefLookups: 1, CacheStores: 1}); st != want {
		t.Fatalf("with the guessed series purged: Stats() = %+v, want %+v", st, want)
	}
	if got, want := appendRound(t, head, cache, series, 3000), (AppenderStats{CacheHits: 3, Guessed: 2}); got != want {
		t.Fatalf("after relearning: Stats() = %+v, want %+v", got, want)
	}
	got := queryHead(t, head)
	for i, ls := range sets {
		want := []fsample{{1000, float64(i) + 1000}, {2000, float64(i) + 2000}, {3000, float64(i) + 3000}}
		if fmt.Sprint(got[ls.String()]) != fmt.Sprint(want) {
			t.Fatalf("samples of %s = %v, want %v", ls, got[ls.String()], want)
		}
	}
}

// TestAppenderGuessOrders: guesses hold for a repeated order, fail for a new
// one, and a wrong guess costs nothing but the guess.
func TestAppenderGuessOrders(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	sets := seriesSet(200)
	series := make([]SeriesLabels, len(sets))
	for i, ls := range sets {
		series[i] = newPairSeries(ls)
	}
	appendRound(t, head, cache, series, 1000)
	reversed := slices.Clone(series)
	slices.Reverse(reversed)
	if got, want := appendRound(t, head, cache, reversed, 2000), (AppenderStats{CacheHits: 200}); got != want {
		t.Fatalf("reversed order: Stats() = %+v, want %+v", got, want)
	}
	if got, want := appendRound(t, head, cache, reversed, 3000), (AppenderStats{CacheHits: 200, Guessed: 199}); got != want {
		t.Fatalf("reversed order again: Stats() = %+v, want %+v", got, want)
	}
	// Every other series: none of the guesses learnt holds.
	var odd []SeriesLabels
	for i := 1; i < len(series); i += 2 {
		odd = append(odd, series[i])
	}
	if got, want := appendRound(t, head, cache, odd, 4000), (AppenderStats{CacheHits: 100}); got != want {
		t.Fatalf("every other series: Stats() = %+v, want %+v", got, want)
	}
}

// TestAppenderConcurrentGuesses runs appenders over one head and one cache
// from several goroutines, in repeated and in shuffled orders, half of them
// resolving series with LookupBatch, with purges,
// so that guesses are read and changed from all sides at once; run it with
// -race. Every sample in the head must be one that an Append accepted for
// that series, with its value. (Not every accepted sample is kept: a commit
// drops the samples that another writer's commit made out of order.)
func TestAppenderConcurrentGuesses(t *testing.T) {
	head := newHead(t)
	cache := New(Options{Stripes: 4})
	sets := seriesSet(300)
	const writers, rounds = 4, 30
	type key struct {
		series string
		t      int64
	}
	var mu sync.Mutex
	accepted := map[key]float64{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			order := slices.Clone(sets)
			for round := range rounds {
				if w%2 == 1 {
					rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				}
				ts := int64(round*writers+w) * 1000
				a := NewAppenderV2(context.Background(), head, cache, ts)
				// Writers 2 and 3 resolve 70 series at a time with
				// LookupBatch, the others one by one.
				series := make([]SeriesLabels, len(order))
				for i, ls := range order {
					series[i] = newPairSeries(ls)
				}
				hs := make([]Handle, len(order))
				errs := make([]error, len(order))
				for i, ls := range order {
					if w >= 2 && i%70 == 0 {
						end := min(i+70, len(order))
						a.LookupBatch(series[i:end], hs[i:end], errs[i:end])
					} else if w < 2 {
						hs[i], errs[i] = a.Lookup(series[i])
					}
					if errs[i] != nil {
						t.Errorf("lookup of %s: %v", ls, errs[i])
						return
					}
					h := &hs[i]
					v := float64(ts) + float64(i)
					err := a.Append(h, 0, ts, v, nil, nil, storage.AOptions{})
					switch {
					case err == nil:
						if !labels.Equal(h.Labels(), ls) {
							t.Errorf("appended %s with labels %s", ls, h.Labels())
							return
						}
						mu.Lock()
						accepted[key{ls.String(), ts}] = v
						mu.Unlock()
					case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrTooOldSample):
						// Another writer got further in time: Prometheus's answer.
					default:
						t.Errorf("Append(%s, t=%d): %v", ls, ts, err)
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
		for i := range 100 {
			cache.Purge(int64(i) * 1000)
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}
	got := queryHead(t, head)
	n := 0
	for s, samples := range got {
		for _, smp := range samples {
			v, ok := accepted[key{s, smp.t}]
			if !ok || v != smp.v {
				t.Fatalf("head holds %s %v, accepted value %v (%v)", s, smp, v, ok)
			}
			n++
		}
	}
	if n == 0 || n > len(accepted) {
		t.Fatalf("head holds %d samples, %d were accepted", n, len(accepted))
	}
	if got := head.NumSeries(); got != uint64(len(sets)) {
		t.Fatalf("head.NumSeries() = %d, want %d", got, len(sets))
	}
}
