package ingest

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
)

// DefaultTrackerStripes is the stripe count of a [Tracker] whose options
// leave it zero. At 1M series on this project's 2-core machines,
// BenchmarkTrackerStripes (medians of 4 interleaved runs) measures updates
// of existing series at 126-142 ns for any count from 16 to 512, and
// additions of new series at 350-405 ns up to 128 stripes and 303-308 ns at
// 256 and 512, where a stripe holds its write lock for less time while its
// index grows. TestTrackerMemoryPerSeries measures 42 to 45 bytes per
// series up to 128 stripes and 46.8 at 512, and an empty tracker costs 128
// bytes a stripe. 128 stripes keep an empty tracker at 16 KiB, a quarter of
// 512's, for the many small tenants of a multi-tenant ingester, at
// additions some 15% slower than 512's. A tenant of millions of series fed
// by many cores can take 512; a small one, 16.
const DefaultTrackerStripes = 128

// MaxCustomTrackers is the most [CustomTracker]s a [Tracker] takes: each
// series records which of them it matched in a 32-bit mask.
const MaxCustomTrackers = 32

// maxTrackerStripes bounds TrackerOptions.Stripes: more stripes than this
// only cost memory.
const maxTrackerStripes = 1 << 16

// TrackerOptions are the settings of a [Tracker]. The zero value means the
// defaults: [DefaultTrackerStripes] stripes and no custom trackers.
type TrackerOptions struct {
	// Stripes is the number of independently locked parts, rounded up to a
	// power of two, at most 65536. Zero means [DefaultTrackerStripes].
	Stripes int

	// Custom are counts of the active series that match sets of matchers,
	// such as one per team or per product, at most [MaxCustomTrackers].
	// The matchers are evaluated once, when a series is first seen.
	Custom []CustomTracker
}

// CustomTracker names a set of matchers whose matching active series a
// [Tracker] counts apart. A series matches when every matcher accepts the
// value of its label (the empty string for a label it does not have), as in
// a PromQL selector. The ParseMetricSelector method of the parser of
// package github.com/prometheus/prometheus/promql/parser makes matchers
// from a selector string such as `{namespace=~"team-a-.*"}`.
//
// [NewTracker] keeps a copy of the slice of CustomTrackers it is given, and
// the matchers themselves, which must not be modified afterwards.
type CustomTracker struct {
	// Name identifies the custom tracker in [TrackerStats] and
	// [Tracker.ActiveCustom]. It must not be empty, nor used twice.
	Name string
	// Matchers must all match a series for it to be counted; there must be
	// at least one.
	Matchers []*labels.Matcher
}

// TrackerCounts are the active series of a [Tracker], or of one of its
// custom trackers.
type TrackerCounts struct {
	Series                 int // active series, of any type
	NativeHistograms       int // of those, native histogram series
	NativeHistogramBuckets int // buckets of those native histograms, as last given
}

// CustomTrackerCounts are the counts of one [CustomTracker].
type CustomTrackerCounts struct {
	Name          string // the CustomTracker's
	TrackerCounts        // of the active series it matched
}

// TrackerStats are the counts [Tracker.UpdateStats] reports.
type TrackerStats struct {
	TrackerCounts                       // all active series
	Custom        []CustomTrackerCounts // one per TrackerOptions.Custom, in that order
}

// Tracker counts the active series of a tenant: those seen by
// [Tracker.Update] or [Tracker.UpdateHistogram] since the last
// [Tracker.Purge] that could have dropped them. It takes the hash the caller
// computed and the TSDB's own labels.Labels, which it keeps by reference,
// never copying them, and uses only to tell apart series whose hashes
// collide: such series are counted each.
//
// Counts are maintained as series come and go, so [Tracker.Active] and
// [Tracker.UpdateStats] read totals and walk nothing. Custom trackers
// ([TrackerOptions]) count the series that match their matchers, and native
// histogram series and their buckets are counted apart, overall and per
// custom tracker.
//
// Memory: a series costs an entry holding its labels header, its last-seen
// time and its custom-tracker and histogram state, stored by value in chunks
// of up to 1024 (32 bytes in the default stringlabels build, 40 under
// slicelabels and dedupelabels), and an 8-byte slot in an open-addressing
// index kept between 70% and 87.5% full. TestTrackerMemoryPerSeries
// measures 44.7 bytes per series at 1M series in the default build (52.8
// in the others), and Cortex's tracker at 124 (140); with the default
// stripes, 58.6 at 100k series, where the growing chunks and indexes of 128
// stripes are half full at worst, and 42.9 at 3M. Nothing is allocated per
// series: entries and index slots come in chunks and tables shared by many
// series. Purge gives the memory of dropped series to new ones, and returns
// it when a stripe shrinks to a quarter of its peak.
//
// A Tracker is safe for concurrent use by multiple goroutines. An update of
// a tracked series takes its stripe's read lock and stores the time
// atomically; a new series takes its stripe's write lock; Purge takes one
// stripe's write lock at a time. Updates of series of one stripe from
// several cores at once are bound, as in any striped tracker, by moving the
// stripe's lock, and the entry of a series updated by two cores, between
// the cores' caches. A Tracker must not be copied.
type Tracker struct {
	stripes []trackerStripe // the slice is immutable
	mask    uint64          // len(stripes)-1, immutable
	custom  []CustomTracker // immutable
	names   map[string]int  // index in custom by name, immutable

	// Keeps the fields above, read on every update, off the cache line of
	// the counters, written on every new series.
	_ [64]byte

	all    trackerCounts   // atomic
	counts []trackerCounts // one per custom tracker; the slice is immutable, the counts atomic

	purgeMu sync.Mutex
	idle    []uint64       // marks a stripe's entries dropped by a purge; guarded by purgeMu
	dropped []trackerDelta // per custom tracker, what a purge of a stripe dropped; guarded by purgeMu
}

// trackerCounts are the counters behind TrackerCounts.
type trackerCounts struct {
	series, histograms, buckets atomic.Int64
	_                           [40]byte // a cache line each
}

// add applies d to the counters.
func (c *trackerCounts) add(d trackerDelta) {
	if d.series != 0 {
		c.series.Add(d.series)
	}
	if d.histograms != 0 {
		c.histograms.Add(d.histograms)
	}
	if d.buckets != 0 {
		c.buckets.Add(d.buckets)
	}
}

// load reads the counters, one after the other.
func (c *trackerCounts) load() TrackerCounts {
	return TrackerCounts{
		Series:                 int(c.series.Load()),
		NativeHistograms:       int(c.histograms.Load()),
		NativeHistogramBuckets: int(c.buckets.Load()),
	}
}

// trackerDelta is a change of trackerCounts.
type trackerDelta struct{ series, histograms, buckets int64 }

// trackerStripe is one independently locked part of a Tracker: an
// open-addressing index from hash to entry, and the entries by value.
type trackerStripe struct {
	mu sync.RWMutex

	// oldest is at most the last-seen time of every entry, so that Purge
	// skips the stripe without locking it while keepFrom <= oldest. Times
	// only grow, so updates need not touch it: inserts lower it and purges
	// set it, under mu; Purge reads it without. Atomic.
	oldest atomic.Int64

	// index is a linear-probing table of tag<<32 | (entry number + 1),
	// 0 for an empty slot, where tag is the high half of the series' hash.
	// A slot's home is tag*len(index)>>32, so the table keeps the order of
	// the tags, and growing it is a near-sequential merge. Guarded by mu.
	index []uint64

	// chunks hold the entries: chunk k holds trackerChunkLen(k) of them, 16
	// doubling to 1024, so that a small stripe wastes little and a large one
	// never copies entries. Guarded by mu.
	chunks [][]trackerEntry

	// changes counts inserts and purges, so that an insert that finds the
	// stripe as its lookup under the read lock left it need not look again.
	// Guarded by mu.
	changes uint64

	used uint32 // entries handed out, freed ones included; guarded by mu
	free uint32 // 1 + the first free entry, 0 for none; guarded by mu
	live uint32 // entries in use, and non-empty slots in index; guarded by mu

	_ [28]byte // 128 bytes a stripe: stripes' locks don't share cache lines
}

// trackerEntry is a series: 32 bytes in the stringlabels build, 40 in the
// slicelabels and dedupelabels builds.
//
// last and meta are written with plain stores under the stripe's write
// lock, and with sync/atomic under its read lock, which the lock orders:
// an insert or a purge, which write under the write lock, would pay for an
// atomic exchange per store otherwise.
type trackerEntry struct {
	// 64-bit alignment of last and meta for sync/atomic, on 32-bit
	// platforms too.
	_ [0]atomic.Int64
	// last is the last-seen time. A free entry holds math.MaxInt64, so
	// that purges, which drop entries older than a time, pass over it.
	last int64
	// meta is the custom trackers the series matched (low 32 bits) and its
	// histogram state (high 32 bits; see trackerFree). A free entry holds
	// trackerFree and, in the low bits, the next free entry + 1.
	meta uint64
	// lset is the series' labels, the caller's own (the TSDB's). Written
	// under the stripe's write lock.
	lset labels.Labels
}

// The high half of trackerEntry.meta: 0 for a float series, buckets+1 for a
// native histogram series, trackerFreeHist for a free entry.
const (
	trackerFreeHist   = math.MaxUint32
	trackerFree       = uint64(trackerFreeHist) << 32
	maxTrackedBuckets = math.MaxUint32 - 2 // larger counts are saturated
)

// trackerMaxChunkShift sets the largest chunk of entries, 1024: 32 KiB in
// the stringlabels build, 40 KiB in the others. Go puts an 8-byte header
// before an object with pointers smaller than that, so a 512-entry chunk
// would take the next size class up and waste 12.5%; one of 32 KiB or
// more is allocated in whole pages, without one. The half-filled last
// chunk of each of 128 stripes costs 2 bytes per series at 1M series.
const trackerMaxChunkShift = 10

// trackerChunkLen is the number of entries of chunk k.
func trackerChunkLen(k int) int {
	if k == 0 {
		return 16
	}
	return 8 << min(k, trackerMaxChunkShift-3)
}

// trackerEntryAt returns entry i of chunks: chunks 0 and 1 hold 16 entries,
// chunk k holds 8<<k up to 1024, then every chunk 1024.
func trackerEntryAt(chunks [][]trackerEntry, i uint32) *trackerEntry {
	if i < 1<<trackerMaxChunkShift {
		k := bits.Len32(i >> 4)
		return &chunks[k][i-(8<<k)&^15]
	}
	return &chunks[trackerMaxChunkShift-4+i>>trackerMaxChunkShift][i&(1<<trackerMaxChunkShift-1)]
}

// NewTracker returns an empty tracker. It returns an error wrapping
// [ErrTrackerOptions] if opts are invalid. An empty tracker holds its
// stripes (128 bytes each) and nothing else.
func NewTracker(opts TrackerOptions) (*Tracker, error) {
	n := opts.Stripes
	if n <= 0 {
		n = DefaultTrackerStripes
	}
	if n > maxTrackerStripes {
		return nil, fmt.Errorf("%w: %d stripes, at most %d", ErrTrackerOptions, opts.Stripes, maxTrackerStripes)
	}
	if len(opts.Custom) > MaxCustomTrackers {
		return nil, fmt.Errorf("%w: %d custom trackers, at most %d", ErrTrackerOptions, len(opts.Custom), MaxCustomTrackers)
	}
	names := make(map[string]int, len(opts.Custom))
	for i, c := range opts.Custom {
		if c.Name == "" {
			return nil, fmt.Errorf("%w: custom tracker %d has no name", ErrTrackerOptions, i)
		}
		if _, ok := names[c.Name]; ok {
			return nil, fmt.Errorf("%w: custom tracker %q defined twice", ErrTrackerOptions, c.Name)
		}
		if len(c.Matchers) == 0 {
			return nil, fmt.Errorf("%w: custom tracker %q has no matchers", ErrTrackerOptions, c.Name)
		}
		if slices.Contains(c.Matchers, nil) {
			return nil, fmt.Errorf("%w: custom tracker %q has a nil matcher", ErrTrackerOptions, c.Name)
		}
		names[c.Name] = i
	}
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	t := &Tracker{
		stripes: make([]trackerStripe, n),
		mask:    uint64(n - 1),
		custom:  slices.Clone(opts.Custom),
		names:   names,
		counts:  make([]trackerCounts, len(opts.Custom)),
		dropped: make([]trackerDelta, len(opts.Custom)),
	}
	for i := range t.stripes {
		t.stripes[i].oldest.Store(math.MaxInt64)
	}
	return t, nil
}

// Update records that the float series with the given labels was seen at
// now, any clock in any unit, the same as [Tracker.Purge] is given. A series
// seen before keeps the later of its times. hash is the hash of ls, such as
// labels.Labels.Hash, computed by the caller: it must be the same for every
// update of a series and should be well mixed; series whose hashes collide
// are told apart by their labels. ls must be the TSDB's own labels (or an
// immutable copy): for a new series the tracker keeps ls until a purge drops
// it, and compares it with the ls of later updates. A native histogram
// series updated with Update is counted as a float series from then on.
//
// Update reports whether the series was new. It makes no allocation for a
// tracked series; for a new one, it allocates nothing of its own but, now
// and then, a chunk of entries or a larger index for its stripe, which
// amortises to 0 allocations per series (TestTrackerAllocs).
func (t *Tracker) Update(hash uint64, ls labels.Labels, now int64) (created bool) {
	return t.update(hash, ls, now, 0)
}

// UpdateHistogram is [Tracker.Update] for a native histogram series with the
// given number of buckets (such as the lengths of its positive and negative
// bucket slices, summed). The tracker counts native histogram series and the
// buckets each had at its last update; a series updated before as a float
// is counted as a histogram from then on. Counts above 2^32-3 buckets are
// saturated. UpdateHistogram panics if buckets is negative.
func (t *Tracker) UpdateHistogram(hash uint64, ls labels.Labels, buckets int, now int64) (created bool) {
	if buckets < 0 {
		panic("ingest: Tracker.UpdateHistogram with a negative bucket count")
	}
	return t.update(hash, ls, now, uint32(min(uint64(buckets), maxTrackedBuckets)+1))
}

func (t *Tracker) update(hash uint64, ls labels.Labels, now int64, hist uint32) bool {
	s := &t.stripes[hash&t.mask]
	tag := uint32(hash >> 32)
	s.mu.RLock()
	e, slot := s.find(tag, ls)
	if e == nil {
		changes := s.changes
		s.mu.RUnlock()
		return t.insert(s, tag, ls, now, hist, changes, slot)
	}
	t.touch(e, now, hist)
	s.mu.RUnlock()
	return false
}

// touch moves e's time forward to now and sets its histogram state. It
// requires the stripe's lock held, for reading at least.
func (t *Tracker) touch(e *trackerEntry, now int64, hist uint32) {
	if prev := atomic.LoadInt64(&e.last); prev < now && !atomic.CompareAndSwapInt64(&e.last, prev, now) {
		trackerAdvance(&e.last, now)
	}
	if m := atomic.LoadUint64(&e.meta); uint32(m>>32) != hist {
		t.setHist(e, m, hist)
	}
}

// trackerAdvance moves *last forward to now, for the updaters that lost a
// race to move it.
func trackerAdvance(last *int64, now int64) {
	for {
		prev := atomic.LoadInt64(last)
		if prev >= now || atomic.CompareAndSwapInt64(last, prev, now) {
			return
		}
	}
}

// setHist changes e's histogram state to hist and the counts with it. It
// requires the stripe's lock held, for reading at least: concurrent
// updaters of e each account for the change their CompareAndSwap made.
func (t *Tracker) setHist(e *trackerEntry, m uint64, hist uint32) {
	for !atomic.CompareAndSwapUint64(&e.meta, m, uint64(hist)<<32|m&math.MaxUint32) {
		if m = atomic.LoadUint64(&e.meta); uint32(m>>32) == hist {
			return
		}
	}
	before, after := trackerHistDelta(uint32(m>>32), 1), trackerHistDelta(hist, 1)
	d := trackerDelta{histograms: after.histograms - before.histograms, buckets: after.buckets - before.buckets}
	t.all.add(d)
	for mask := uint32(m); mask != 0; mask &= mask - 1 {
		t.counts[bits.TrailingZeros32(mask)].add(d)
	}
}

// trackerHistDelta returns the counts of sign series with histogram state
// hist (see trackerEntry.meta).
func trackerHistDelta(hist uint32, sign int64) trackerDelta {
	d := trackerDelta{series: sign}
	if hist != 0 {
		d.histograms = sign
		d.buckets = sign * int64(hist-1)
	}
	return d
}

// insert adds the series unless another goroutine did since the lookup
// that found the stripe at changes, and found the series' slot empty.
func (t *Tracker) insert(s *trackerStripe, tag uint32, ls labels.Labels, now int64, hist uint32, changes uint64, slot int) bool {
	// Matched before taking the lock, so that the matchers, which may be
	// regular expressions, hold up no other update.
	var custom uint32
	if len(t.custom) > 0 {
		custom = t.match(ls)
	}
	s.mu.Lock()
	if s.changes != changes {
		// The stripe changed since the lookup: look again.
		var e *trackerEntry
		if e, slot = s.find(tag, ls); e != nil {
			t.touch(e, now, hist)
			s.mu.Unlock()
			return false
		}
	}
	i := s.alloc()
	e := trackerEntryAt(s.chunks, i)
	e.lset, e.last, e.meta = ls, now, uint64(hist)<<32|uint64(custom)
	s.add(tag, i, slot)
	s.changes++
	if now < s.oldest.Load() {
		s.oldest.Store(now)
	}
	// Counted under the lock, so that a purge of this stripe, which
	// subtracts under it too, never takes a count below zero.
	d := trackerHistDelta(hist, 1)
	t.all.add(d)
	for ; custom != 0; custom &= custom - 1 {
		t.counts[bits.TrailingZeros32(custom)].add(d)
	}
	s.mu.Unlock()
	return true
}

// match returns the mask of the custom trackers ls matches.
func (t *Tracker) match(ls labels.Labels) uint32 {
	var mask uint32
next:
	for i, c := range t.custom {
		for _, m := range c.Matchers {
			if !m.Matches(ls.Get(m.Name)) {
				continue next
			}
		}
		mask |= 1 << i
	}
	return mask
}

// find returns the entry of the series with tag and labels ls or, if there
// is none, nil and the empty slot where its lookup ended (-1 if the index
// has no slots). It requires s.mu held, for reading at least.
func (s *trackerStripe) find(tag uint32, ls labels.Labels) (*trackerEntry, int) {
	index := s.index
	n := uint64(len(index))
	if n == 0 {
		return nil, -1
	}
	for p := uint64(tag) * n >> 32; ; {
		v := index[p]
		if v == 0 {
			return nil, int(p)
		}
		if uint32(v>>32) == tag {
			if e := trackerEntryAt(s.chunks, uint32(v)-1); labels.Equal(e.lset, ls) {
				return e, 0
			}
		}
		if p++; p == n {
			p = 0
		}
	}
}

// alloc returns a free entry's number, reusing purged entries first. It
// requires s.mu held for writing.
func (s *trackerStripe) alloc() uint32 {
	if s.free != 0 {
		i := s.free - 1
		s.free = uint32(trackerEntryAt(s.chunks, i).meta)
		return i
	}
	i := s.used
	if i == math.MaxUint32-1 {
		panic("ingest: Tracker stripe holds 2^32-2 series; use more stripes")
	}
	if k := len(s.chunks); i == s.capacity() {
		if k == 0 {
			s.chunks = make([][]trackerEntry, 0, 4) // 16 to 128 entries
		}
		s.chunks = append(s.chunks, make([]trackerEntry, trackerChunkLen(k)))
	}
	s.used++
	return i
}

// capacity returns the number of entries s.chunks hold. It requires s.mu
// held.
func (s *trackerStripe) capacity() uint32 {
	k := len(s.chunks)
	switch {
	case k == 0:
		return 0
	case k <= trackerMaxChunkShift-3:
		return 8 << k
	default:
		return uint32(k-(trackerMaxChunkShift-4)) << trackerMaxChunkShift
	}
}

// add indexes entry i under tag in slot, the empty slot where a lookup of
// the series ended, unless the index would then be more than 7/8 full: at
// 7/8, a lookup reads 4.5 slots on average, all but always in one or two
// cache lines. An index of 1024 slots or more then grows by a quarter,
// which keeps it at least 70% full, at most 11.4 bytes per series; a
// smaller one doubles, which halves the copies and the garbage of growing
// it (BenchmarkTrackerUpdate, state=new) where its slack costs 8 KiB at
// most. It requires s.mu held for writing.
func (s *trackerStripe) add(tag, i uint32, slot int) {
	if n := uint64(len(s.index)); (uint64(s.live)+1)*8 > n*7 {
		if n < 1024 {
			s.resize(max(16, 2*n))
		} else {
			s.resize(n + n/4)
		}
		trackerPlace(s.index, tag, i)
	} else {
		s.index[slot] = uint64(tag)<<32 | uint64(i+1)
	}
	s.live++
}

// resize moves the index to a table of n slots. It requires s.mu held for
// writing.
func (s *trackerStripe) resize(n uint64) {
	old := s.index
	s.index = make([]uint64, n)
	for _, v := range old {
		if v != 0 {
			trackerPlace(s.index, uint32(v>>32), uint32(v)-1)
		}
	}
}

// trackerPlace puts entry i with tag in the first empty slot from its home.
func trackerPlace(index []uint64, tag, i uint32) {
	n := uint64(len(index))
	p := uint64(tag) * n >> 32
	for index[p] != 0 {
		if p++; p == n {
			p = 0
		}
	}
	index[p] = uint64(tag)<<32 | uint64(i+1)
}

// Purge drops the series last seen before keepFrom, in the unit of the
// times given to [Tracker.Update], and returns how many it dropped. It
// takes one stripe's write lock at a time, for a pass over the stripe's
// entries in memory order and one over its index (BenchmarkTrackerPurge:
// 8 ms for 1M series, some 60 µs a stripe), so that updates of series in
// the other stripes go on meanwhile. A stripe in which no series was older
// than keepFrom at its last purge, and none was added older since, is
// skipped without locking it. Concurrent calls of Purge run one at a time.
//
// Purge makes no allocation in the steady state; it allocates when a
// stripe holds more entries than ever before, and when it moves a stripe
// that shrank to a quarter of its peak to smaller tables.
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
	return purged
}

// purgeStripe drops s's entries last seen before keepFrom. It requires
// s.mu held for writing, and t.purgeMu.
func (t *Tracker) purgeStripe(s *trackerStripe, keepFrom int64) int {
	// The first pass walks the entries in memory order, frees the idle
	// ones and marks them in t.idle, a bitmap small enough for the L1
	// cache, for the second pass, over the index, to find their slots.
	words := int(s.used+63) / 64
	if cap(t.idle) < words {
		t.idle = make([]uint64, words)
	}
	idle := t.idle[:words]
	clear(idle)
	clear(t.dropped)
	var dropped trackerDelta
	oldest := int64(math.MaxInt64)
	i, used := uint32(0), s.used
	for _, chunk := range s.chunks {
		if i >= used {
			break
		}
		if used-i < uint32(len(chunk)) {
			chunk = chunk[:used-i]
		}
		for j := range chunk {
			e := &chunk[j]
			// Free entries hold math.MaxInt64, hence pass here.
			if last := e.last; last >= keepFrom {
				oldest = min(oldest, last)
				continue
			}
			n := i + uint32(j)
			m := e.meta
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
			idle[n/64] |= 1 << (n % 64)
			// The labels are the TSDB's to free.
			e.lset, e.last, e.meta = labels.Labels{}, math.MaxInt64, trackerFree|uint64(s.free)
			s.free = n + 1
		}
		i += uint32(len(chunk))
	}
	s.oldest.Store(oldest)
	n := int(-dropped.series)
	if n == 0 {
		return 0
	}
	s.changes++
	s.unindex(idle, n)
	s.live -= uint32(n)
	t.all.add(dropped)
	for i, d := range t.dropped {
		t.counts[i].add(d)
	}
	switch {
	case s.live == 0:
		// Nothing left: give the tables back; the next series starts small.
		s.index, s.chunks = nil, nil
		s.used, s.free = 0, 0
	case s.live < s.used/4 && s.used >= 1<<trackerMaxChunkShift:
		s.compact()
	}
	return n
}

// unindex deletes the n slots of the entries marked in idle from s.index,
// shifting the slots after each one back (no tombstones, so lookups never
// get slower). It requires s.mu held for writing.
func (s *trackerStripe) unindex(idle []uint64, n int) {
	index := s.index
	size := len(index)
	// Start the scan right after an empty slot (the index is never full):
	// then no run of slots wraps around the scan's start, and a delete only
	// moves slots that the scan has yet to reach into the slot it is at,
	// which it checks again.
	start := 0
	for index[start] != 0 {
		start++
	}
	for p, seen := start, 0; n > 0 && seen < size; {
		if v := index[p]; v != 0 && trackerMarked(idle, v) {
			trackerDelete(index, p)
			n--
			continue
		}
		if p++; p == size {
			p = 0
		}
		seen++
	}
}

// trackerMarked reports whether the entry of slot v is marked in idle.
func trackerMarked(idle []uint64, v uint64) bool {
	i := uint32(v) - 1
	return idle[i/64]&(1<<(i%64)) != 0
}

// trackerDelete empties slot p of index, moving back the slots after it
// that may take its place (backward-shift deletion).
func trackerDelete(index []uint64, p int) {
	n := len(index)
	for q := p; ; {
		if q++; q == n {
			q = 0
		}
		v := index[q]
		if v == 0 {
			break
		}
		// v may move to p unless its home is cyclically in (p, q].
		h := int(uint64(uint32(v>>32)) * uint64(n) >> 32)
		if p <= q {
			if p < h && h <= q {
				continue
			}
		} else if p < h || h <= q {
			continue
		}
		index[p] = v
		p = q
	}
	index[p] = 0
}

// compact moves the live entries to new chunks and the index to a table
// sized for them, after a purge left a quarter of the entries or less in
// use. It requires s.mu held for writing.
func (s *trackerStripe) compact() {
	index, chunks, live := s.index, s.chunks, s.live
	s.chunks, s.used, s.free = nil, 0, 0
	s.index = make([]uint64, trackerIndexLen(live))
	for _, v := range index {
		if v == 0 {
			continue
		}
		from := trackerEntryAt(chunks, uint32(v)-1)
		i := s.alloc()
		e := trackerEntryAt(s.chunks, i)
		e.lset, e.last, e.meta = from.lset, from.last, from.meta
		trackerPlace(s.index, uint32(v>>32), i)
	}
}

// trackerIndexLen returns the length of an index for live series, 70%
// full, as right after a growth.
func trackerIndexLen(live uint32) uint64 {
	return max(16, uint64(live)*10/7+1)
}

// Active returns the number of active series: those updated since the last
// purge that could have dropped them. It reads one counter and makes no
// allocation.
func (t *Tracker) Active() int { return int(t.all.series.Load()) }

// ActiveCustom returns the number of active series that matched the custom
// tracker with the given name, and whether there is such a custom tracker.
// It looks the name up in a map, reads one counter and makes no allocation.
func (t *Tracker) ActiveCustom(name string) (int, bool) {
	i, ok := t.names[name]
	if !ok {
		return 0, false
	}
	return int(t.counts[i].series.Load()), true
}

// UpdateStats sets *s to the tracker's counts, overall and per custom
// tracker, reusing s.Custom's array: it allocates only if that is shorter
// than the custom trackers. Each count is exact when read; while updates
// and purges run, counts read one after the other may be from slightly
// different moments.
func (t *Tracker) UpdateStats(s *TrackerStats) {
	s.TrackerCounts = t.all.load()
	s.Custom = slices.Grow(s.Custom[:0], len(t.custom))[:len(t.custom)]
	for i := range s.Custom {
		s.Custom[i] = CustomTrackerCounts{Name: t.custom[i].Name, TrackerCounts: t.counts[i].load()}
	}
}
