package activeseries

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// trackerModel is the reference the differential test compares a Tracker
// with: a map by the labels' string.
type trackerModel struct {
	series map[string]*trackerModelSeries
	custom []CustomTracker
}

type trackerModelSeries struct {
	last    int64
	buckets int // -1 for a float series
	custom  []bool
}

func (m *trackerModel) update(ls labels.Labels, buckets int, now int64) bool {
	key := ls.String()
	if s, ok := m.series[key]; ok {
		s.last = max(s.last, now)
		s.buckets = buckets
		return false
	}
	s := &trackerModelSeries{last: now, buckets: buckets}
	for _, c := range m.custom {
		ok := true
		for _, mt := range c.Matchers {
			ok = ok && mt.Matches(ls.Get(mt.Name))
		}
		s.custom = append(s.custom, ok)
	}
	m.series[key] = s
	return true
}

func (m *trackerModel) purge(keepFrom int64) int {
	n := 0
	for k, s := range m.series {
		if s.last < keepFrom {
			delete(m.series, k)
			n++
		}
	}
	return n
}

func (m *trackerModel) stats() Stats {
	var st Stats
	for _, c := range m.custom {
		st.Custom = append(st.Custom, CustomTrackerCounts{Name: c.Name})
	}
	add := func(c *Counts, s *trackerModelSeries) {
		c.Series++
		if s.buckets >= 0 {
			c.NativeHistograms++
			c.NativeHistogramBuckets += s.buckets
		}
	}
	for _, s := range m.series {
		add(&st.Counts, s)
		for i, ok := range s.custom {
			if ok {
				add(&st.Custom[i].Counts, s)
			}
		}
	}
	return st
}

// TestTrackerDifferential runs random updates and purges on a Tracker and
// on a map, with hashes that collide often, times out of order, and pools
// of series around the sizes where chunks and indexes grow, and compares
// every result.
func TestTrackerDifferential(t *testing.T) {
	custom := []CustomTracker{
		{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}},
		{Name: "i-ends-in-7", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "i", ".*7")}},
	}
	for _, tc := range []trackerDiffCase{
		{1, 1, 200, 0},
		{1, 127, 3000, 0},
		{1, 128, 3000, 0.5},
		{1, 129, 3000, 0},
		{2, 1024, 20000, 0.05},
		{1, 5000, 60000, 0},
		{4, 5000, 60000, 0.01},
		{128, 5000, 30000, 0.5},
	} {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("stripes=%d/pool=%d/collide=%v/batch=%v", tc.stripes, tc.pool, tc.collide, batch), func(t *testing.T) {
				testTrackerDifferential(t, custom, tc, batch)
			})
		}
	}
}

type trackerDiffCase struct {
	stripes, pool, ops int
	collide            float64 // fraction of series on one of 3 shared hashes
}

// testTrackerDifferential is a case of TestTrackerDifferential; with batch,
// float updates go through UpdateBatch, up to 40 series at a time.
func testTrackerDifferential(t *testing.T, custom []CustomTracker, tc trackerDiffCase, batch bool) {
	var batchHashes []uint64
	var batchSets []labels.Labels
	r := rand.New(rand.NewPCG(uint64(tc.pool), uint64(tc.stripes)))
	sets := trackerTestLabels(tc.pool)
	hashes := make([]uint64, tc.pool)
	for i, ls := range sets {
		hashes[i] = ls.Hash()
		if r.Float64() < tc.collide {
			hashes[i] = uint64(r.IntN(3))
		}
	}
	tr := newTestTracker(t, Options{Stripes: tc.stripes, Custom: custom})
	m := &trackerModel{series: map[string]*trackerModelSeries{}, custom: custom}
	clock := int64(100)
	for step := range tc.ops {
		switch x := r.IntN(1000); {
		case x < 3: // purge, mostly a little, sometimes nearly all
			keepFrom := clock - int64(r.IntN(50))
			if r.IntN(4) == 0 {
				keepFrom = clock - 2
			}
			if got, want := tr.Purge(keepFrom), m.purge(keepFrom); got != want {
				t.Fatalf("step %d: Purge(%d) = %d, want %d", step, keepFrom, got, want)
			}
			tr.check(t)
		default:
			i := r.IntN(tc.pool)
			if r.IntN(2) == 0 {
				i = r.IntN(1 + tc.pool/10) // a hot set
			}
			now := clock - int64(r.IntN(5)) // a little out of order
			buckets := -1
			if x%7 == 0 {
				buckets = r.IntN(20)
			}
			var got bool
			switch {
			case batch && buckets < 0:
				// A batch whose first series is i, compared by its
				// count of new series.
				batchHashes, batchSets = batchHashes[:0], batchSets[:0]
				want := 0
				for k := range 1 + r.IntN(40) {
					j := i
					if k > 0 {
						j = r.IntN(tc.pool)
					}
					batchHashes, batchSets = append(batchHashes, hashes[j]), append(batchSets, sets[j])
					if m.update(sets[j], -1, now) {
						want++
					}
				}
				if created := tr.UpdateBatch(batchHashes, batchSets, now); created != want {
					t.Fatalf("step %d: UpdateBatch of %d series = %d created, want %d", step, len(batchHashes), created, want)
				}
			case buckets < 0:
				got = tr.Update(hashes[i], sets[i], now)
			default:
				got = tr.UpdateHistogram(hashes[i], sets[i], buckets, now)
			}
			if batch && buckets < 0 {
				// Compared above.
			} else if want := m.update(sets[i], buckets, now); got != want {
				t.Fatalf("step %d: update of series %d = %v, want %v", step, i, got, want)
			}
			if r.IntN(10) == 0 {
				clock++
			}
		}
		if step%97 == 0 {
			var got Stats
			tr.UpdateStats(&got)
			if want := m.stats(); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: UpdateStats() = %+v, want %+v", step, got, want)
			}
		}
	}
	tr.check(t)
	var got Stats
	tr.UpdateStats(&got)
	if want := m.stats(); !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateStats() = %+v, want %+v", got, want)
	}
	// Purge everything: the stripes give their tables back.
	tr.Purge(math.MaxInt64)
	tr.check(t)
	for i := range tr.stripes {
		if s := &tr.stripes[i]; s.table.Load() != nil || s.used != 0 {
			t.Fatalf("stripe %d keeps its table, %d used, after purging all", i, s.used)
		}
	}
}

// TestTrackerCompact shrinks a stripe from 10k series to a few and checks
// that its tables shrink to the size of what is left, that it still finds
// its series, and that the entries of the old tables are dead, so that an
// update that found a series there before the purge looks again.
func TestTrackerCompact(t *testing.T) {
	for _, keep := range []int{0, 1, 100, 2500, 9999} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			const n = 10_000
			sets := trackerTestLabels(n)
			tr := newTestTracker(t, Options{Stripes: 1})
			for i, ls := range sets {
				tr.Update(ls.Hash(), ls, int64(i))
			}
			s := &tr.stripes[0]
			before := s.table.Load()
			last, _ := before.find(uint32(sets[n-1].Hash()>>32), sets[n-1])
			if got := tr.Purge(n - int64(keep)); got != n-keep {
				t.Fatalf("Purge() = %d, want %d", got, n-keep)
			}
			tr.check(t)
			if trackerTouch(last, n) {
				t.Fatalf("the entry of the last series in the tables before the purge is alive")
			}
			after := s.table.Load()
			switch {
			case keep == 0:
				if after != nil {
					t.Fatalf("a table of %d slots after dropping every series", len(after.index))
				}
			case uint64(len(after.index)) != trackerIndexLen(uint32(keep)) || trackerCapacity(trackerChunksIn(after.chunks)-1) >= uint32(keep):
				t.Fatalf("keeping %d of %d: %d slots and %d chunks, want %d slots and the fewest chunks",
					keep, n, len(after.index), trackerChunksIn(after.chunks), trackerIndexLen(uint32(keep)))
			}
			for i, ls := range sets {
				if got, want := tr.Update(ls.Hash(), ls, n), i < n-keep; got != want {
					t.Fatalf("Update(series %d) after purge = %v, want %v", i, got, want)
				}
			}
			tr.check(t)
			if tr.Active() != n {
				t.Fatalf("Active() = %d after adding the dropped series again, want %d", tr.Active(), n)
			}
		})
	}
}
