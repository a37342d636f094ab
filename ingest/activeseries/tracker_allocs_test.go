package activeseries

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestTrackerAllocs asserts the allocation contracts: none to update a
// tracked series, none to read the counts, amortised none for a new series
// and none for a purge in the steady state.
func TestTrackerAllocs(t *testing.T) {
	ls := labels.FromStrings("__name__", "up", "job", "api")
	custom := []CustomTracker{{Name: "api", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "job", "a.*")}}}
	tr := newTestTracker(t, Options{Custom: custom})
	const n = 10_000
	for i := range uint64(n) {
		tr.Update(trackerMix(i), ls, 1)
	}
	tr.UpdateHistogram(trackerMix(n), ls, 10, 1)
	byLabel := newTestTracker(t, Options{Custom: custom, ByLabel: "job"})
	for i := range uint64(n) {
		byLabel.Update(trackerMix(i), ls, 1)
	}
	byLabel.UpdateHistogram(trackerMix(n), ls, 10, 1)
	now := int64(2)
	st := Stats{Custom: make([]CustomTrackerCounts, 0, 1)}
	batchHashes, batchSets := make([]uint64, 40), make([]labels.Labels, 40)
	for i := range batchHashes {
		batchHashes[i], batchSets[i] = trackerMix(uint64(i*97)%n), ls
	}
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Update/existing", func() { tr.Update(trackerMix(uint64(now)%n), ls, now); now++ }},
		{"UpdateBatch/existing", func() { tr.UpdateBatch(batchHashes, batchSets, now); now++ }},
		{"UpdateHistogram/existing", func() { tr.UpdateHistogram(trackerMix(n), ls, 10, now); now++ }},
		{"UpdateHistogram/buckets", func() { tr.UpdateHistogram(trackerMix(n), ls, int(now%50), now); now++ }},
		{"Active", func() { _ = tr.Active() }},
		{"ActiveCustom", func() { _, _ = tr.ActiveCustom("api") }},
		{"UpdateStats", func() { tr.UpdateStats(&st) }},
		// With counts by label value.
		{"ByLabel/Update/existing", func() { byLabel.Update(trackerMix(uint64(now)%n), ls, now); now++ }},
		{"ByLabel/UpdateHistogram/buckets", func() { byLabel.UpdateHistogram(trackerMix(n), ls, int(now%50), now); now++ }},
		{"ByLabel/UpdateStats", func() { byLabel.UpdateStats(&st) }},
	} {
		if got := testing.AllocsPerRun(1000, tc.f); got != 0 {
			t.Errorf("%s: %v allocations, want 0", tc.name, got)
		}
	}

	// New series: 1M of them with the default options, in batches of 10k
	// (AllocsPerRun rounds down to whole allocations per run). Each of the
	// 128 stripes allocates a chunk for every 16 of its first 1024 series
	// (0.008 a series here), then one for every 1024, and its index as it
	// grows.
	t.Run("Update/new", func(t *testing.T) {
		if testing.Short() || trackerRaceEnabled() {
			t.Skip("adds 1M series (20 times slower under the race detector)")
		}
		tr := newTestTracker(t, Options{Custom: custom})
		const batch = 10_000
		next := uint64(0)
		perBatch := testing.AllocsPerRun(99, func() {
			for range batch {
				tr.Update(trackerMix(next), ls, 1)
				next++
			}
		})
		perSeries := perBatch / batch
		t.Logf("Update of a new series: %.4f allocations, amortised over %d series", perSeries, next)
		if perSeries > 0.015 {
			t.Errorf("Update of a new series: %.4f allocations amortised, want at most 0.015", perSeries)
		}
	})

	// Purge: drop 4% and add them again. A purge allocates the new tables
	// of the stripes it drops series from, four objects each (the entries'
	// array, the chunks, the index and the table); the old ones are
	// garbage.
	t.Run("Purge", func(t *testing.T) {
		tr := newTestTracker(t, Options{})
		const n = 100_000
		for i := range uint64(n) {
			tr.Update(trackerMix(i), ls, 2)
		}
		got := testing.AllocsPerRun(10, func() {
			for i := range uint64(n / 25) {
				tr.Update(trackerMix(n+i), ls, 1)
			}
			if purged := tr.Purge(2); purged != n/25 {
				t.Fatalf("Purge(2) = %d, want %d", purged, n/25)
			}
		})
		// The updates before each purge grow some stripes by a chunk (1 or
		// 2 allocations each) and, rarely, an index.
		if want := float64(4 * len(tr.stripes)); got < want || got > 2*want {
			t.Errorf("adding 4%% of the series and purging them: %v allocations, want %v for the purge and at most %v for the updates", got, want, want)
		}
	})
}

// TestTrackerMemoryPerSeries measures what a tracker retains per series,
// the labels being the TSDB's and not counted (all series share one label
// set here, each under its own hash), and compares it with the Cortex
// design. The doc of Tracker quotes it.
func TestTrackerMemoryPerSeries(t *testing.T) {
	if testing.Short() || trackerRaceEnabled() {
		t.Skip("adds 1M series (20 times slower under the race detector)")
	}
	ls := labels.FromStrings("__name__", "up", "job", "api")
	measure := func(n int, fill func() any) float64 {
		runtime.GC()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		keep := fill()
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
	}
	// The default build keeps 16-byte labels headers; slicelabels and
	// dedupelabels 24-byte ones, hence 8 more bytes per series.
	limit := 48.0 + float64(reflect.TypeFor[labels.Labels]().Size()-16)
	for _, tc := range []struct {
		impl string
		n    int
	}{
		{"ingestkit", 10_000},
		{"ingestkit", 100_000},
		{"ingestkit", 1_000_000},
		{"cortex", 1_000_000},
	} {
		perSeries := measure(tc.n, func() any {
			if tc.impl == "cortex" {
				c := newCortexTracker()
				for i := range uint64(tc.n) {
					c.UpdateSeries(ls, trackerMix(i), 1, false)
				}
				return c
			}
			tr := newTestTracker(t, Options{})
			for i := range uint64(tc.n) {
				tr.Update(trackerMix(i), ls, 1)
			}
			return tr
		})
		t.Logf("impl=%s: %.1f bytes per series at %d series (labels %d-byte headers)", tc.impl, perSeries, tc.n, reflect.TypeFor[labels.Labels]().Size())
		if tc.impl == "ingestkit" && tc.n == 1_000_000 && perSeries > limit {
			t.Errorf("impl=%s: %.1f bytes per series at %d series, want at most %.0f", tc.impl, perSeries, tc.n, limit)
		}
	}
}
