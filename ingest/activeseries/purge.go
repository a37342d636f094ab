package activeseries

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// Purge drops the series last seen before keepFrom, in milliseconds since
// the Unix epoch, as Prometheus timestamps (such as
// time.Now().Add(-idleTimeout).UnixMilli()), and returns how many it
// dropped. It
// locks one stripe at a time, for a pass over the stripe's entries in
// memory order and, if it finds series to drop, one over its index and one
// over its entries that copies the others to new tables sized for them
// (BenchmarkTrackerPurge). Updates of tracked series take no lock and go on
// meanwhile, but for those of the series of the stripe being purged, which
// wait for it: about a stripe count's share of the purge's time. A stripe
// in which
// no series was older than keepFrom at its last purge, and none was added
// older since, is skipped without locking it. Concurrent calls of Purge run
// one at a time.
//
// Purge allocates the new tables of the stripes it drops series from, four
// objects a stripe, as large as the stripe's remaining series need
// (TestTrackerAllocs, and BenchmarkTrackerPurge's bytes per op); the old
// tables are garbage.
func (t *Tracker) Purge(keepFrom int64) (purged int) {
	t.purgeMu.Lock()
	defer t.purgeMu.Unlock()
	for i := range t.stripes {
		s := &t.stripes[i]
		if keepFrom <= s.oldest.Load() {
			continue
		}
		s.mu.Lock()
		purged += t.purgeStripe(s, keepFrom)
		s.mu.Unlock()
	}
	if t.values != nil && purged > 0 {
		t.values.sweep()
	}
	return purged
}

// purgeStripe drops s's entries last seen before keepFrom. It requires
// s.mu and t.purgeMu.
func (t *Tracker) purgeStripe(s *trackerStripe, keepFrom int64) int {
	tb := s.table.Load()
	if tb == nil {
		s.oldest.Store(math.MaxInt64)
		return 0
	}
	// The first pass, over the entries in memory order, counts the idle
	// ones. Updates may make some of them active again before the second.
	idle := uint32(0)
	oldest := int64(math.MaxInt64)
	for i, left := 0, s.used; left > 0; i++ {
		chunk := tb.chunks[i]
		chunk = chunk[:min(uint32(len(chunk)), left)]
		left -= uint32(len(chunk))
		for j := range chunk {
			if last := atomic.LoadInt64(&chunk[j].last); last < keepFrom {
				idle++
			} else {
				oldest = min(oldest, last)
			}
		}
	}
	if idle == 0 {
		s.oldest.Store(oldest)
		return 0
	}

	// A pass over the index notes each entry's tag, so that the last pass
	// can walk the entries in memory order, not the index's: at 1M series,
	// that is 2 MiB of entries a stripe read in order rather than at
	// random.
	if cap(t.tags) < int(s.used) {
		t.tags = make([]uint32, s.used)
	}
	tags := t.tags[:s.used]
	for _, v := range tb.index {
		if v != 0 {
			tags[uint32(v)-1] = uint32(v >> 32)
		}
	}

	// The last pass kills each entry: it swaps its time for trackerDead,
	// so that the time it drops or keeps is the last any update set. It
	// copies the ones it keeps to new chunks, in the same order, and
	// places them in a new index.
	kept := s.used - idle // as far as the first pass knows
	chunks := trackerNewChunks(kept)
	index := make([]uint64, trackerIndexLen(kept))
	clear(t.dropped)
	var dropped trackerDelta
	oldest = math.MaxInt64
	n := uint32(0)
	if t.values != nil {
		// For the pass, so that dropping a series does not lock it each
		// time.
		t.values.mu.RLock()
	}
	for i, left := 0, s.used; left > 0; i++ {
		chunk := tb.chunks[i]
		chunk = chunk[:min(uint32(len(chunk)), left)]
		first := s.used - left
		left -= uint32(len(chunk))
		for j := range chunk {
			from := &chunk[j]
			last := atomic.SwapInt64(&from.last, trackerDead)
			m := from.meta
			if last < keepFrom {
				d := trackerHistDelta(uint32(m>>32), -1)
				dropped.series += d.series
				dropped.histograms += d.histograms
				dropped.buckets += d.buckets
				for mask := uint32(m); mask != 0; mask &= mask - 1 {
					c := &t.dropped[bits.TrailingZeros32(mask)]
					c.series += d.series
					c.histograms += d.histograms
					c.buckets += d.buckets
				}
				if t.values != nil {
					t.values.counts(from.lset).add(d)
				}
				continue
			}
			if k, j := trackerChunkOf(n); j == 0 && (k >= len(chunks) || chunks[k] == nil) {
				// Made active again since the first pass.
				chunks, _ = trackerAddChunk(chunks, k)
			}
			if (uint64(n)+1)*8 > uint64(len(index))*7 {
				index = trackerRehash(index, trackerIndexLen(n+1))
			}
			e := trackerEntryAt(chunks, n)
			e.last, e.meta, e.lset = last, m, from.lset
			trackerPlace(index, tags[first+uint32(j)], n)
			oldest = min(oldest, last)
			n++
		}
	}
	if t.values != nil {
		t.values.mu.RUnlock()
	}
	if n == 0 {
		// Nothing left: the next series starts small.
		s.table.Store(nil)
	} else {
		s.table.Store(&trackerTable{index: index, chunks: chunks})
	}
	s.used = n
	s.oldest.Store(oldest)
	t.all.add(dropped)
	// Purges and reloads exclude each other: every stripe has the
	// current version of the custom trackers.
	for i, d := range t.dropped {
		s.custom.counts[i].add(d)
	}
	return int(-dropped.series)
}
