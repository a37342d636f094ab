package activeseries

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
)

// DefaultStripes is the stripe count of a [Tracker] whose options
// leave it zero. BenchmarkTrackerStripes (stripe counts from 16 to 1024)
// finds no trend in update or insert time beyond the noise up to 512
// stripes, and TestTrackerMemoryPerSeries finds the bytes held per series
// flat up to 128 stripes and rising past it (see BENCHMARKS.md); an empty
// tracker costs 128 bytes a stripe. So the default is the count that keeps
// an empty tracker small, 16 KiB, a quarter of 512's, for the many small
// tenants of a multi-tenant ingester, with room for cores to update
// different stripes. A tenant of millions of series
// fed by many cores can take 512 or more; a small one, 16.
const DefaultStripes = 128

// MaxCustomTrackers is the most [CustomTracker]s a [Tracker] takes: each
// series records which of them it matched in a 32-bit mask.
const MaxCustomTrackers = 32

// maxStripes bounds Options.Stripes: more stripes than this
// only cost memory.
const maxStripes = 1 << 16

// Options are the settings of a [Tracker]. The zero value means the
// defaults: [DefaultStripes] stripes and no custom trackers.
//
// It is a plain value, safe for concurrent use once built and not
// modified afterwards.
type Options struct {
	// Stripes is the number of independently locked parts, rounded up to a
	// power of two, at most 65536. Zero means [DefaultStripes].
	Stripes int

	// Custom are counts of the active series that match sets of matchers,
	// such as one per team or per product, at most [MaxCustomTrackers].
	// The matchers are evaluated once, when a series is first seen, and
	// again by [Tracker.ReloadCustomTrackers] for the custom trackers it
	// adds or changes.
	Custom []CustomTracker

	// ByLabel, if not empty, names a label by whose values the tracker
	// counts its active series apart (Stats.Values): one count per team,
	// say, or per namespace. A series without the label counts under the
	// empty value. Empty, the default, counts nothing more and costs
	// nothing: no check on the path of a tracked series, one comparison
	// for a new one.
	ByLabel string

	// MaxLabelValues caps the values of ByLabel counted apart, at most
	// 65536; zero means [DefaultMaxLabelValues]. It bounds the counts, and
	// the gauges a [Collector] exports, whatever the values of ByLabel.
	// A value seen first while MaxLabelValues values are counted, or
	// while Stats.Overflow counts any series, counts in the overflow, and
	// stays there while any of its series there is active: a value counted
	// apart keeps its counts for as long as any of its series is active,
	// and loses them at the purge that drops its last. So the overflow
	// drains as its series go idle, and values then take their places.
	MaxLabelValues int
}

// CustomTracker names a set of matchers whose matching active series a
// [Tracker] counts apart. A series matches when every matcher accepts the
// value of its label (the empty string for a label it does not have), as in
// a PromQL selector. The ParseMetricSelector method of the parser of
// package github.com/prometheus/prometheus/promql/parser makes matchers
// from a selector string such as `{namespace=~"team-a-.*"}`.
//
// [New] keeps a copy of the slice of CustomTrackers it is given, and
// the matchers themselves, which must not be modified afterwards. A
// CustomTracker is a plain value, safe for concurrent use once built and
// not modified afterwards.
type CustomTracker struct {
	// Name identifies the custom tracker in [Stats] and
	// [Tracker.ActiveCustom]. It must not be empty, nor used twice.
	Name string
	// Matchers must all match a series for it to be counted. An empty
	// list matches every series, as in Cortex, so that a custom tracker can
	// count all of a tenant's series beside narrower ones.
	Matchers []*labels.Matcher
}

// Counts are the active series of a [Tracker], or of one of its
// custom trackers: a plain value, a copy not updated afterwards, safe for
// concurrent use.
type Counts struct {
	Series                 int // active series, of any type
	NativeHistograms       int // of those, native histogram series
	NativeHistogramBuckets int // buckets of those native histograms, as last given
}

// CustomTrackerCounts are the counts of one [CustomTracker]: a plain
// value, a copy not updated afterwards, safe for concurrent use.
type CustomTrackerCounts struct {
	Name   string // the CustomTracker's
	Counts        // of the active series it matched
}

// Stats are the counts [Tracker.UpdateStats] reports: a plain
// value that the tracker fills and does not update afterwards; it is not
// safe for concurrent use while UpdateStats writes it.
type Stats struct {
	Counts                       // all active series
	Custom []CustomTrackerCounts // one per Options.Custom, in that order

	// Values are the counts of the active series by value of
	// Options.ByLabel, in the order of the values, and Overflow those of
	// the series whose values are not among them (see
	// Options.MaxLabelValues); both are empty without ByLabel.
	Values   []LabelValueCounts
	Overflow Counts
}

// Tracker counts the active series of a tenant: those seen by
// [Tracker.Update], [Tracker.UpdateBatch] or [Tracker.UpdateHistogram]
// since the last
// [Tracker.Purge] that could have dropped them. It takes the hash the caller
// computed and the TSDB's own labels.Labels, which it keeps by reference,
// never copying them, and uses only to tell apart series whose hashes
// collide: such series are counted each.
//
// Counts are maintained as series come and go, so [Tracker.Active] and
// [Tracker.UpdateStats] read totals and walk nothing. Custom trackers
// ([Options]) count the series that match their matchers, and
// [Tracker.ReloadCustomTrackers] replaces them without losing counts; an
// optional count by the value of one label (Options.ByLabel) counts the
// series of each value, up to a cap. Native histogram series and their
// buckets are counted apart, overall, per custom tracker and per value.
//
// With Options.ByLabel, a new series, a change of a series' type or
// bucket count, and a series dropped by a purge also look the series'
// value up in a map under a read lock; the first series of a new value
// takes the lock, adds the value and copies it. Updates of tracked series
// do not.
//
// Memory: a series costs an entry holding its labels header, its last-seen
// time and its custom-tracker and histogram state, stored by value in chunks
// (32 bytes in the default stringlabels build, 40 under slicelabels and
// dedupelabels), and an 8-byte slot in an open-addressing index kept
// between 70% and 87.5% full. A stripe's first 1024 entries come in chunks
// of 16, the later ones in chunks of 1024, so that a small stripe wastes
// less than 16 entries. TestTrackerMemoryPerSeries measures the bytes held
// per series at 10k to 1M series, and those of Cortex's design, and bounds
// them (the figures are in its log, and the README quotes them): at fewer
// series, the indexes of the stripes are a larger share. Nothing is
// allocated per series: entries and index slots come in chunks and tables
// shared by many series. A purge that drops
// series from a stripe moves the stripe's other series to new tables sized
// for them, so that the memory of dropped series, and their labels, are the
// garbage collector's to free.
//
// A Tracker is safe for concurrent use by multiple goroutines. An update of
// a tracked series takes no lock: it looks the series up in its stripe's
// tables as they were when it started, which writers never change but by
// adding series, and moves the series' time forward with one atomic
// compare-and-swap, which fails if a purge has since moved the series
// elsewhere or dropped it. Only then does the update take its stripe's
// lock, as a new series does, and a change of a series' type or bucket
// count. Purge locks one stripe at a time. So updates of tracked series
// from several cores share nothing but the entries they update: no lock's
// cache line moves between the cores (BenchmarkTrackerUpdate, state=
// existing). A Tracker must not be copied.
//
// The zero value is not usable: a Tracker is made by [New], and an update
// of one that was not panics with "activeseries: Tracker not made by New".
type Tracker struct {
	stripes []trackerStripe // the slice is immutable
	mask    uint64          // len(stripes)-1, immutable
	// custom is the current version of the custom trackers, which readers
	// of the counts use; every stripe's is the same but while
	// ReloadCustomTrackers runs. Stored under purgeMu.
	custom atomic.Pointer[customSet]
	values *labelValues // by Options.ByLabel, nil without; the pointer is immutable

	// Keeps the fields above, read on every update, off the cache line of
	// the counters, written on every new series.
	_ [64]byte

	all trackerCounts // atomic

	purgeMu sync.Mutex
	dropped []trackerDelta // per custom tracker, what a purge of a stripe dropped; guarded by purgeMu
	tags    []uint32       // a purged stripe's tags by entry; guarded by purgeMu
}

// trackerCounts are the counters behind Counts.
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
func (c *trackerCounts) load() Counts {
	return Counts{
		Series:                 int(c.series.Load()),
		NativeHistograms:       int(c.histograms.Load()),
		NativeHistogramBuckets: int(c.buckets.Load()),
	}
}

// trackerDelta is a change of trackerCounts.
type trackerDelta struct{ series, histograms, buckets int64 }

const (
	// trackerDead is the time of an entry that a purge dropped or moved.
	// Updates at that time are taken as at the next one (see Update).
	trackerDead       = math.MinInt64
	maxTrackedBuckets = math.MaxUint32 - 2 // larger counts are saturated
)

const (
	// trackerPages is the number of small chunks of a stripe, of
	// trackerPageLen entries: 512 bytes in the stringlabels build, the
	// largest object with pointers that Go allocates without an 8-byte
	// header before it, in a size class of that size (640 bytes in the
	// others, in one of 704 with the header).
	trackerPages   = 64
	trackerPageLen = 16
	// trackerChunkShift sets the entries of a large chunk, 1024: 32 KiB in
	// the stringlabels build, 40 KiB in the others, which Go allocates in
	// whole pages of memory, without a header. Chunks of 1 to 16 KiB
	// would take the header and the next size class up, 12% to 19% more.
	trackerChunkShift = 10
	trackerSmall      = trackerPages * trackerPageLen // entries in small chunks
)

// New returns an empty tracker. It returns an error wrapping
// [ErrOptions] if opts are invalid. An empty tracker holds its
// stripes (128 bytes each) and nothing else.
func New(opts Options) (*Tracker, error) {
	n := opts.Stripes
	if n <= 0 {
		n = DefaultStripes
	}
	if n > maxStripes {
		return nil, fmt.Errorf("%w: %d stripes, at most %d", ErrOptions, opts.Stripes, maxStripes)
	}
	cs, err := newCustomSet(opts.Custom, nil)
	if err != nil {
		return nil, err
	}
	if opts.MaxLabelValues < 0 || opts.MaxLabelValues > maxLabelValues {
		return nil, fmt.Errorf("%w: %d label values, at most %d", ErrOptions, opts.MaxLabelValues, maxLabelValues)
	}
	if opts.MaxLabelValues != 0 && opts.ByLabel == "" {
		return nil, fmt.Errorf("%w: MaxLabelValues without ByLabel", ErrOptions)
	}
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	t := &Tracker{
		stripes: make([]trackerStripe, n),
		mask:    uint64(n - 1),
		dropped: make([]trackerDelta, len(opts.Custom)),
		values:  newLabelValues(opts.ByLabel, opts.MaxLabelValues),
	}
	t.custom.Store(cs)
	for i := range t.stripes {
		t.stripes[i].oldest.Store(math.MaxInt64)
		t.stripes[i].custom = cs
	}
	return t, nil
}

// Update records that the float series with the given labels was seen at
// now, in milliseconds since the Unix epoch, as Prometheus timestamps, the
// unit [Tracker.Purge] takes too (now = math.MinInt64 is taken as
// math.MinInt64+1). A receiver passes the time it received the request,
// time.Now().UnixMilli(), rather than the samples' timestamps. A series seen before keeps
// the later of its times. hash is the hash of ls, such as
// labels.Labels.Hash, computed by the caller: it must be the same for every
// update of a series and should be well mixed; series whose hashes collide
// are told apart by their labels. ls must be the TSDB's own labels (or an
// immutable copy): for a new series the tracker keeps ls until a purge drops
// it, and compares it with the ls of later updates. A native histogram
// series updated with Update is counted as a float series from then on.
//
// Update reports whether the series was new. It takes no lock and makes no
// allocation for a tracked series; for a new one, it allocates nothing of
// its own but, now and then, a chunk of entries or a larger index for its
// stripe, a small fraction of an allocation per series, amortised, which
// TestTrackerAllocs bounds when 1M series are added.
func (t *Tracker) Update(hash uint64, ls labels.Labels, now int64) (created bool) {
	return t.update(hash, ls, now, 0)
}

// UpdateBatch is [Tracker.Update] of each series hashes[i], lsets[i] in
// turn, all at now, and returns how many of them were new. It makes the
// same updates as those calls, in the same order, with the same
// allocations, but it first reads the index slots and then the entries of
// a few series at a time, before it updates them: the cache misses of
// different series, which Update takes one after the other, then overlap
// (BenchmarkTrackerUpdate, state=existing-batch). UpdateBatch panics if the
// slices differ in length.
func (t *Tracker) UpdateBatch(hashes []uint64, lsets []labels.Labels, now int64) (created int) {
	if len(hashes) != len(lsets) {
		panic("activeseries: Tracker.UpdateBatch with slices of different lengths")
	}
	if t.stripes == nil {
		panic("activeseries: Tracker not made by New")
	}
	for len(hashes) > 0 {
		n := min(len(hashes), trackerBatchLen)
		t.touchBatch(hashes[:n])
		for i, h := range hashes[:n] {
			if t.update(h, lsets[i], now, 0) {
				created++
			}
		}
		hashes, lsets = hashes[n:], lsets[n:]
	}
	return created
}

// trackerBatchLen is the number of series whose memory UpdateBatch reads
// ahead of their updates: enough loads in flight to overlap their misses,
// few enough for a core's out-of-order window to hold them
// (BenchmarkTrackerUpdate, state=existing-batch).
const trackerBatchLen = 16

// touchBatch reads the home slots of the series of hashes, then the entry
// of each one's first slot with its tag, so that their updates find them
// in the cache. It reads with sync/atomic, as a lookup does, and changes
// nothing; the loads of one pass do not depend on one another.
func (t *Tracker) touchBatch(hashes []uint64) {
	var tbs [trackerBatchLen]*trackerTable
	var homes [trackerBatchLen]uint64
	for i, h := range hashes {
		tb := t.stripes[h&t.mask].table.Load()
		if tb == nil {
			continue
		}
		p := trackerHome(uint32(h>>32), uint64(len(tb.index)))
		atomic.LoadUint64(&tb.index[p])
		tbs[i], homes[i] = tb, p
	}
	for i, h := range hashes {
		tb := tbs[i]
		if tb == nil {
			continue
		}
		tag, n := uint32(h>>32), uint64(len(tb.index))
		for p := homes[i]; ; {
			v := atomic.LoadUint64(&tb.index[p])
			if v == 0 {
				break
			}
			if uint32(v>>32) == tag {
				if k, j := trackerChunkOf(uint32(v) - 1); k < len(tb.chunks) {
					atomic.LoadInt64(&tb.chunks[k][j].last)
				}
				break
			}
			if p++; p == n {
				p = 0
			}
		}
	}
}

// UpdateHistogram is [Tracker.Update] for a native histogram series with the
// given number of buckets (such as the lengths of its positive and negative
// bucket slices, summed). The tracker counts native histogram series and the
// buckets each had at its last update; a series updated before as a float
// is counted as a histogram from then on. Counts above 2^32-3 buckets are
// saturated. An update that changes a series' type or bucket count takes
// its stripe's lock. UpdateHistogram panics if buckets is negative.
func (t *Tracker) UpdateHistogram(hash uint64, ls labels.Labels, buckets int, now int64) (created bool) {
	if buckets < 0 {
		panic("activeseries: Tracker.UpdateHistogram with a negative bucket count")
	}
	return t.update(hash, ls, now, uint32(min(uint64(buckets), maxTrackedBuckets)+1))
}

func (t *Tracker) update(hash uint64, ls labels.Labels, now int64, hist uint32) bool {
	if t.stripes == nil {
		panic("activeseries: Tracker not made by New")
	}
	if now == trackerDead {
		now++
	}
	s := &t.stripes[hash&t.mask]
	tag := uint32(hash >> 32)
	tb := s.table.Load()
	slot := -1
	if tb != nil {
		var e *trackerEntry
		e, slot = tb.find(tag, ls)
		if e != nil {
			if trackerTouch(e, now) && uint32(atomic.LoadUint64(&e.meta)>>32) == hist {
				return false
			}
			// Moved or dropped by a purge since the lookup, or a
			// histogram state to change: under the lock.
			return t.updateLocked(s, tag, ls, now, hist, nil, -1, false)
		}
	}
	return t.updateLocked(s, tag, ls, now, hist, tb, slot, true)
}

// trackerTouch moves e's time forward to now. It reports false if e is
// dead: dropped or moved by a purge.
func trackerTouch(e *trackerEntry, now int64) bool {
	for {
		prev := atomic.LoadInt64(&e.last)
		switch {
		case prev == trackerDead:
			return false
		case prev >= now:
			return true
		case atomic.CompareAndSwapInt64(&e.last, prev, now):
			return true
		}
	}
}

// updateLocked is update under the stripe's lock: it adds the series if it
// is new, or moves its time forward and sets its histogram state. tb and
// slot are where a lookup without the lock found the series missing, or nil
// and -1; miss is whether it did.
func (t *Tracker) updateLocked(s *trackerStripe, tag uint32, ls labels.Labels, now int64, hist uint32, tb *trackerTable, slot int, miss bool) bool {
	// A series that was missing is likely new: matched before taking the
	// lock, so that the matchers, which may be regular expressions, hold
	// up no other writer.
	var custom uint32
	pre := t.custom.Load()
	matched := miss && len(pre.custom) > 0
	if matched {
		custom = pre.match(ls)
	}
	s.mu.Lock()
	cs := s.custom
	cur := s.table.Load()
	// Within a version of the table, slots are only ever filled: if the
	// slot where the lookup ended is still empty, the series is still
	// missing.
	if cur != tb || slot < 0 || cur.index[slot] != 0 {
		slot = -1
		if cur != nil {
			var e *trackerEntry
			if e, slot = cur.find(tag, ls); e != nil {
				// The current version's entries are all alive.
				trackerTouch(e, now)
				if m := e.meta; uint32(m>>32) != hist {
					t.setHist(cs, e, m, hist)
				}
				s.mu.Unlock()
				return false
			}
		}
	}
	if (!matched || cs != pre) && len(cs.custom) > 0 {
		// Not matched yet, or with another version than the stripe's,
		// which a reload is moving to a new one.
		custom = cs.match(ls)
	}
	s.insert(cur, slot, tag, ls, now, uint64(hist)<<32|uint64(custom))
	if now < s.oldest.Load() {
		s.oldest.Store(now)
	}
	// Counted under the lock, so that a purge of this stripe, which
	// subtracts under it too, never takes a count below zero.
	d := trackerHistDelta(hist, 1)
	t.all.add(d)
	for ; custom != 0; custom &= custom - 1 {
		cs.counts[bits.TrailingZeros32(custom)].add(d)
	}
	if t.values != nil {
		t.values.insert(ls, d)
	}
	s.mu.Unlock()
	return true
}

// setHist changes e's histogram state, whose meta is m, to hist, and the
// counts with it, those of the custom trackers in cs, its stripe's. It
// requires the stripe's lock.
func (t *Tracker) setHist(cs *customSet, e *trackerEntry, m uint64, hist uint32) {
	atomic.StoreUint64(&e.meta, uint64(hist)<<32|m&math.MaxUint32)
	before, after := trackerHistDelta(uint32(m>>32), 1), trackerHistDelta(hist, 1)
	d := trackerDelta{histograms: after.histograms - before.histograms, buckets: after.buckets - before.buckets}
	t.all.add(d)
	for mask := uint32(m); mask != 0; mask &= mask - 1 {
		cs.counts[bits.TrailingZeros32(mask)].add(d)
	}
	if t.values != nil {
		t.values.change(e.lset, d)
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

// Active returns the number of active series: those updated since the last
// purge that could have dropped them. It reads one counter and makes no
// allocation.
func (t *Tracker) Active() int { return int(t.all.series.Load()) }

// ActiveCustom returns the number of active series that matched the custom
// tracker with the given name, and whether there is such a custom tracker.
// It looks the name up in a map, reads one counter and makes no allocation.
func (t *Tracker) ActiveCustom(name string) (int, bool) {
	cs := t.custom.Load()
	if cs == nil {
		return 0, false
	}
	i, ok := cs.names[name]
	if !ok {
		return 0, false
	}
	return int(cs.counts[i].series.Load()), true
}

// UpdateStats sets *s to the tracker's counts, overall, per custom
// tracker and, with Options.ByLabel, per label value, reusing the arrays
// of s.Custom and s.Values: it allocates only if they are shorter than the
// custom trackers and the label values. It sorts the label values, under a
// read lock that holds up the first series of a new value. Each count is
// exact when read; while updates and purges run, counts read one after
// the other may be from slightly different moments.
func (t *Tracker) UpdateStats(s *Stats) {
	s.Counts = t.all.load()
	s.Values, s.Overflow = s.Values[:0], Counts{}
	if t.values != nil {
		t.values.stats(s)
	}
	s.Custom = s.Custom[:0]
	cs := t.custom.Load()
	if cs == nil {
		return
	}
	s.Custom = slices.Grow(s.Custom, len(cs.custom))[:len(cs.custom)]
	for i := range s.Custom {
		s.Custom[i] = CustomTrackerCounts{Name: cs.custom[i].Name, Counts: cs.counts[i].load()}
	}
}
