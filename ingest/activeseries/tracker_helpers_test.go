package activeseries

import (
	"fmt"
	"math/bits"
	"runtime/debug"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// newTestTracker returns a tracker with opts, failing the test on error.
func newTestTracker(tb testing.TB, opts Options) *Tracker {
	tb.Helper()
	tr, err := New(opts)
	if err != nil {
		tb.Fatalf("New(%+v) = %v", opts, err)
	}
	return tr
}

// trackerTestLabels returns n label sets {__name__="m", team=..., i="<i>"},
// built with one symbol table.
func trackerTestLabels(n int) []labels.Labels {
	sb := labels.NewScratchBuilder(3)
	out := make([]labels.Labels, n)
	for i := range out {
		sb.Reset()
		sb.Add("__name__", "m")
		sb.Add("i", fmt.Sprint(i))
		sb.Add("team", [...]string{"a", "b", "c"}[i%3])
		out[i] = sb.Labels()
	}
	return out
}

// trackerRaceEnabled reports whether the test binary was built with -race.
func trackerRaceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// trackerMix is splitmix64's finaliser: distinct, well-mixed hashes for
// tests that need many series but no labels of their own.
func trackerMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// check verifies the tracker's invariants: every index slot reachable from
// its home, each entry in use indexed once and alive, the oldest hints at
// most the entries' times, and the counters equal to counts made from the
// entries.
func (t *Tracker) check(tb testing.TB) {
	tb.Helper()
	var all, overflow trackerDelta
	values := map[string]trackerDelta{}
	cs := t.custom.Load()
	custom := make([]trackerDelta, len(cs.custom))
	for si := range t.stripes {
		s := &t.stripes[si]
		s.mu.Lock()
		if s.custom != cs {
			tb.Fatalf("stripe %d: custom trackers %p, the tracker's %p", si, s.custom, cs)
		}
		table := s.table.Load()
		if table == nil {
			if s.used != 0 {
				tb.Fatalf("stripe %d: no table, %d used", si, s.used)
			}
			s.mu.Unlock()
			continue
		}
		if c := trackerCapacity(trackerChunksIn(table.chunks)); s.used > c || len(table.chunks) > 0 && table.chunks[0] == nil {
			tb.Fatalf("stripe %d: %d used, capacity %d", si, s.used, c)
		}
		n := len(table.index)
		seen := make([]bool, s.used)
		slots := 0
		for p, v := range table.index {
			if v == 0 {
				continue
			}
			slots++
			i := uint32(v) - 1
			if i >= s.used || seen[i] {
				tb.Fatalf("stripe %d slot %d: entry %d out of range or indexed twice", si, p, i)
			}
			seen[i] = true
			for q := int(uint64(uint32(v>>32)) * uint64(n) >> 32); q != p; q = (q + 1) % n {
				if table.index[q] == 0 {
					tb.Fatalf("stripe %d slot %d: empty slot %d between it and its home", si, p, q)
				}
			}
			e := trackerEntryAt(table.chunks, i)
			if e.last == trackerDead {
				tb.Fatalf("stripe %d: entry %d is indexed and dead", si, i)
			}
			if e.last < s.oldest.Load() {
				tb.Fatalf("stripe %d: entry %d seen at %d, before the oldest hint %d", si, i, e.last, s.oldest.Load())
			}
			m := e.meta
			if got, want := uint32(m), cs.match(e.lset); got != want {
				tb.Fatalf("stripe %d: entry %d %s has custom mask %b, matches %b", si, i, e.lset, got, want)
			}
			d := trackerHistDelta(uint32(m>>32), 1)
			all.series += d.series
			all.histograms += d.histograms
			all.buckets += d.buckets
			if t.values != nil {
				// Where the rules of labelValues place the series.
				if v := e.lset.Get(t.values.label); t.values.values[v] != nil {
					c := values[v]
					c.series, c.histograms, c.buckets = c.series+d.series, c.histograms+d.histograms, c.buckets+d.buckets
					values[v] = c
				} else {
					overflow.series += d.series
					overflow.histograms += d.histograms
					overflow.buckets += d.buckets
				}
			}
			for mask := uint32(m); mask != 0; mask &= mask - 1 {
				c := &custom[bits.TrailingZeros32(mask)]
				c.series += d.series
				c.histograms += d.histograms
				c.buckets += d.buckets
			}
		}
		if slots != int(s.used) {
			tb.Fatalf("stripe %d: %d slots, %d used", si, slots, s.used)
		}
		if uint64(s.used)*8 > uint64(n)*7 {
			tb.Fatalf("stripe %d: %d used in an index of %d", si, s.used, n)
		}
		s.mu.Unlock()
	}
	if got := (trackerDelta{t.all.series.Load(), t.all.histograms.Load(), t.all.buckets.Load()}); got != all {
		tb.Fatalf("counters = %+v, entries count %+v", got, all)
	}
	if lv := t.values; lv != nil {
		if got := (trackerDelta{lv.overflow.series.Load(), lv.overflow.histograms.Load(), lv.overflow.buckets.Load()}); got != overflow {
			tb.Fatalf("overflow counters = %+v, entries count %+v", got, overflow)
		}
		if len(lv.values) > lv.max {
			tb.Fatalf("%d label values, at most %d", len(lv.values), lv.max)
		}
		for v, c := range lv.values {
			if got := (trackerDelta{c.series.Load(), c.histograms.Load(), c.buckets.Load()}); got != values[v] {
				tb.Fatalf("label value %q counters = %+v, entries count %+v", v, got, values[v])
			}
		}
	}
	for i := range custom {
		c := cs.counts[i]
		if got := (trackerDelta{c.series.Load(), c.histograms.Load(), c.buckets.Load()}); got != custom[i] {
			tb.Fatalf("custom %q counters = %+v, entries count %+v", cs.custom[i].Name, got, custom[i])
		}
	}
}
