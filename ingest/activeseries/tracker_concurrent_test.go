package activeseries

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestTrackerConcurrent runs writers, purges and readers at once, for the
// race detector: updates of tracked series, new series, histogram changes,
// collisions, purges that drop a few series or nearly all (and so shrink
// the stripes' tables), and reads of every count. Then it checks the
// tracker's invariants.
func TestTrackerConcurrent(t *testing.T) {
	sets := trackerTestLabels(4000)
	hashes := make([]uint64, len(sets))
	for i, ls := range sets {
		hashes[i] = ls.Hash()
		if i%10 == 0 {
			hashes[i] = uint64(i % 3) // collisions
		}
	}
	tr := newTestTracker(t, Options{Stripes: 2, Custom: []CustomTracker{
		{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}},
	}, ByLabel: "team", MaxLabelValues: 2}) // of 3 teams: one in the overflow
	const writers, updates = 4, 50_000
	var clock atomic.Int64
	clock.Store(100)
	latest := make([]atomic.Int64, len(sets)) // the latest time each series was given
	var maxKeepFrom atomic.Int64              // of the purges so far
	var writing, others sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		writing.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for j := range updates {
				i := r.IntN(len(sets))
				now := clock.Load() - int64(r.IntN(3))
				if j%5 == 0 {
					tr.UpdateHistogram(hashes[i], sets[i], r.IntN(10), now)
				} else {
					tr.Update(hashes[i], sets[i], now)
				}
				trackerAdvance(&latest[i], now)
				if j%100 == 0 {
					clock.Add(1)
				}
			}
		})
	}
	// Reloads cycle through custom trackers that keep, move, change, drop
	// and add some.
	teamA := CustomTracker{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}}
	reloads := [][]CustomTracker{
		{teamA, {Name: "seven", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "i", ".*7")}}},
		{{Name: "all"}, teamA},
		{{Name: "seven", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "i", "1.*")}}, teamA},
		{teamA},
	}
	others.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
				if err := tr.ReloadCustomTrackers(reloads[k%len(reloads)]); err != nil {
					t.Errorf("ReloadCustomTrackers = %v", err)
					return
				}
			}
		}
	})
	others.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
				keepFrom := clock.Load() - 20
				if k%10 == 9 {
					keepFrom = clock.Load() // nearly all
				}
				trackerAdvance(&maxKeepFrom, keepFrom)
				tr.Purge(keepFrom)
			}
		}
	})
	for range 2 {
		others.Go(func() {
			var st Stats
			for {
				select {
				case <-stop:
					return
				default:
					tr.UpdateStats(&st)
					n := tr.Active()
					a, _ := tr.ActiveCustom("team-a")
					if n < 0 || n > len(sets) || a < 0 || a > n+len(sets) || st.NativeHistograms < 0 || st.NativeHistogramBuckets < 0 {
						t.Errorf("counts out of range: Active() = %d, team-a %d, %+v", n, a, st.Counts)
						return
					}
				}
			}
		})
	}
	writing.Wait()
	close(stop)
	others.Wait()
	tr.check(t)
	// No update was lost: a series given a time at least every purge's
	// keepFrom is tracked, at the latest time it was given.
	kept := 0
	for i, ls := range sets {
		m := latest[i].Load()
		if m < maxKeepFrom.Load() {
			continue
		}
		kept++
		s := &tr.stripes[hashes[i]&tr.mask]
		var got int64 = math.MinInt64
		if tb := s.table.Load(); tb != nil {
			if e, _ := tb.find(uint32(hashes[i]>>32), ls); e != nil {
				got = e.last
			}
		}
		if got != m {
			t.Fatalf("series %d last updated at %d, not before any purge's keepFrom (at most %d): tracked at %d", i, m, maxKeepFrom.Load(), got)
		}
	}
	t.Logf("%d series updated at or after every purge's keepFrom, all tracked at their latest time", kept)
}

// trackerAdvance moves *v forward to now.
func trackerAdvance(v *atomic.Int64, now int64) {
	for {
		prev := v.Load()
		if prev >= now || v.CompareAndSwap(prev, now) {
			return
		}
	}
}
