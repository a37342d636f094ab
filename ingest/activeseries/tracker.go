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

// customSet is a version of a tracker's custom trackers: immutable but for
// the counts, which are atomic. A series' entry records the custom
// trackers it matched as a mask of indexes in the version of its stripe
// (trackerStripe.custom). A counter is shared by the versions that keep its
// custom tracker unchanged, so that a reload does not touch it.
type customSet struct {
	custom []CustomTracker
	names  map[string]int   // index in custom by name
	counts []*trackerCounts // one per custom tracker
}

// match returns the mask of the custom trackers of cs that ls matches.
func (cs *customSet) match(ls labels.Labels) uint32 {
	var mask uint32
	for i := range cs.custom {
		if matchesAll(cs.custom[i].Matchers, ls) {
			mask |= 1 << i
		}
	}
	return mask
}

// matchesAll reports whether every matcher of ms accepts ls.
func matchesAll(ms []*labels.Matcher, ls labels.Labels) bool {
	for _, m := range ms {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
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

// trackerStripe is one independently locked part of a Tracker: its series
// in a trackerTable.
type trackerStripe struct {
	// table is the stripe's index and entries, nil while the stripe is
	// empty. A writer that changes more than an empty slot of the index
	// stores a new table (see trackerTable), so that a lookup that loaded
	// the table once sees one consistent version of it. It has a cache
	// line of its own, which updates of tracked series only read, apart
	// from the lock, which every new series writes: a lookup that misses
	// and then locks would otherwise move the line between cores twice.
	table atomic.Pointer[trackerTable]
	_     [56]byte

	// mu serialises the stripe's writers: inserts of new series, changes
	// of a series' histogram state, and purges. Lookups take no lock.
	mu sync.Mutex

	// oldest is at most the last-seen time of every entry, so that Purge
	// skips the stripe without locking it while keepFrom <= oldest. Times
	// only grow, so updates need not touch it: inserts lower it and purges
	// set it, under mu; Purge reads it without. Atomic.
	oldest atomic.Int64

	// custom is the version of the custom trackers that the masks of the
	// stripe's entries refer to, and whose counters its series count in;
	// guarded by mu.
	custom *customSet

	used uint32 // entries of table in use, all indexed; guarded by mu

	_ [36]byte // 128 bytes a stripe, in two cache lines
}

// trackerTable is a version of a stripe's series.
//
// index is a linear-probing table of tag<<32 | (entry number + 1), 0 for an
// empty slot, where tag is the high half of the series' hash. A slot's home
// is tag*len(index)>>32, so the table keeps the order of the tags, and
// growing it is a near-sequential merge. Once the table is stored in its
// stripe, its slots are read and written with sync/atomic, and the only
// change is an empty slot taking a series: lookups without the lock see
// series that are being added or not, and never a slot that moves.
//
// chunks hold the entries: chunk k holds trackerChunkLen(k) of them, 16
// in each of the first 64 chunks and 1024 in each chunk after, so that a
// small stripe wastes less than 16 entries and a large one never copies
// entries. The slice is as long as its array: chunks not yet allocated are
// empty, and a new chunk goes in the array, without a new table while the
// array has room. An entry and its chunk are written before its slot is
// stored, so that a lookup that loads the slot finds them, whatever the
// version it started with: but for an entry in a chunk beyond the
// version's array, which a lookup treats as a miss, to look again under
// the lock. An entry then never changes but for its time and histogram
// state, set with sync/atomic.
//
// Entries are never reused. A purge marks every entry of the old version
// dead (trackerDead) as it drops it or copies it to the new one, so that an
// update that found it through the old version fails its compare-and-swap
// and looks again under the lock, after the purge. The old version is the
// garbage collector's once the lookups that hold it are done.
type trackerTable struct {
	index  []uint64
	chunks [][]trackerEntry
}

// trackerEntry is a series: 32 bytes in the stringlabels build, 40 in the
// slicelabels and dedupelabels builds.
type trackerEntry struct {
	// 64-bit alignment of last and meta for sync/atomic, on 32-bit
	// platforms too.
	_ [0]atomic.Int64
	// last is the last-seen time, trackerDead once a purge has dropped or
	// moved the entry. Written with sync/atomic once the entry is indexed.
	last int64
	// meta is the custom trackers the series matched (low 32 bits) and its
	// histogram state (high 32 bits: 0 for a float series, buckets+1 for a
	// native histogram series). Written under the stripe's lock, with
	// sync/atomic once the entry is indexed, read without the lock.
	meta uint64
	// lset is the series' labels, the caller's own (the TSDB's). Written
	// once, before the entry is indexed.
	lset labels.Labels
}

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

// trackerChunkLen is the number of entries of chunk k.
func trackerChunkLen(k int) int {
	if k < trackerPages {
		return trackerPageLen
	}
	return 1 << trackerChunkShift
}

// trackerCapacity returns the number of entries that the first k chunks
// hold.
func trackerCapacity(k int) uint32 {
	if k <= trackerPages {
		return uint32(k) * trackerPageLen
	}
	return uint32(k-trackerPages+trackerSmall>>trackerChunkShift) << trackerChunkShift
}

// trackerChunkOf returns the chunk of entry i and i's place in it.
func trackerChunkOf(i uint32) (k int, j uint32) {
	if i < trackerSmall {
		return int(i / trackerPageLen), i % trackerPageLen
	}
	i -= trackerSmall
	return trackerPages + int(i>>trackerChunkShift), i & (1<<trackerChunkShift - 1)
}

// trackerEntryAt returns entry i of chunks.
func trackerEntryAt(chunks [][]trackerEntry, i uint32) *trackerEntry {
	k, j := trackerChunkOf(i)
	return &chunks[k][j]
}

// trackerAddChunk allocates chunk k of chunks, in a new array if chunks is
// too short, which it reports.
func trackerAddChunk(chunks [][]trackerEntry, k int) ([][]trackerEntry, bool) {
	grown := k >= len(chunks)
	if grown {
		// Chunks are allocated in order: only chunks[:k] are in use.
		c := make([][]trackerEntry, max(4, 2*len(chunks)))
		copy(c, chunks)
		chunks = c
	}
	chunks[k] = make([]trackerEntry, trackerChunkLen(k))
	return chunks, grown
}

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

// newCustomSet checks custom and returns a version of it, with the
// counters of prev for the custom trackers that prev has unchanged (same
// name and matchers), new ones for the others.
func newCustomSet(custom []CustomTracker, prev *customSet) (*customSet, error) {
	if len(custom) > MaxCustomTrackers {
		return nil, fmt.Errorf("%w: %d custom trackers, at most %d", ErrOptions, len(custom), MaxCustomTrackers)
	}
	cs := &customSet{
		custom: slices.Clone(custom),
		names:  make(map[string]int, len(custom)),
		counts: make([]*trackerCounts, len(custom)),
	}
	for i, c := range custom {
		if c.Name == "" {
			return nil, fmt.Errorf("%w: custom tracker %d has no name", ErrOptions, i)
		}
		if _, ok := cs.names[c.Name]; ok {
			return nil, fmt.Errorf("%w: custom tracker %q defined twice", ErrOptions, c.Name)
		}
		if slices.Contains(c.Matchers, nil) {
			return nil, fmt.Errorf("%w: custom tracker %q has a nil matcher", ErrOptions, c.Name)
		}
		cs.names[c.Name] = i
		if j, ok := prev.kept(c); ok {
			cs.counts[i] = prev.counts[j]
		} else {
			cs.counts[i] = new(trackerCounts)
		}
	}
	return cs, nil
}

// kept returns the index in cs of a custom tracker with c's name and
// matchers, and whether there is one. cs may be nil.
func (cs *customSet) kept(c CustomTracker) (int, bool) {
	if cs == nil {
		return 0, false
	}
	j, ok := cs.names[c.Name]
	if !ok {
		return 0, false
	}
	return j, slices.EqualFunc(cs.custom[j].Matchers, c.Matchers, func(a, b *labels.Matcher) bool {
		return a.Type == b.Type && a.Name == b.Name && a.Value == b.Value
	})
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

// find returns the entry of the series with tag and labels ls, and its
// slot, or, if there is none, nil and the empty slot where the lookup ended,
// or -1 if the series may be in a later version of the table. Lookups
// without the stripe's lock use it.
func (tb *trackerTable) find(tag uint32, ls labels.Labels) (*trackerEntry, int) {
	index := tb.index
	n := uint64(len(index))
	chunks := tb.chunks
	for p := trackerHome(tag, n); ; {
		v := atomic.LoadUint64(&index[p])
		if v == 0 {
			return nil, int(p)
		}
		if uint32(v>>32) == tag {
			i := uint32(v) - 1
			k, j := trackerChunkOf(i)
			if k >= len(chunks) {
				// Added in a chunk of a later version.
				return nil, -1
			}
			if e := &chunks[k][j]; labels.Equal(e.lset, ls) {
				return e, int(p)
			}
		}
		if p++; p == n {
			p = 0
		}
	}
}

// insert adds a series with the given labels, time and meta to the stripe,
// whose current table is tb (nil if the stripe is empty), in slot, the empty
// slot where its lookup in tb ended. It requires s.mu.
func (s *trackerStripe) insert(tb *trackerTable, slot int, tag uint32, ls labels.Labels, now int64, meta uint64) {
	i := s.used
	if i == math.MaxUint32-1 {
		panic("activeseries: Tracker stripe holds 2^32-2 series; use more stripes")
	}
	var index []uint64
	var chunks [][]trackerEntry
	if tb != nil {
		index, chunks = tb.index, tb.chunks
	}
	newChunks := false
	if k, j := trackerChunkOf(i); j == 0 {
		chunks, newChunks = trackerAddChunk(chunks, k)
	}
	e := trackerEntryAt(chunks, i)
	e.last, e.meta, e.lset = now, meta, ls
	v := uint64(tag)<<32 | uint64(i+1)
	// At 7/8 full, a lookup reads 4.5 slots on average, all but always in
	// one or two cache lines. An index of 1024 slots or more then grows by
	// a quarter, which keeps it at least 70% full, at most 11.4 bytes per
	// series; a smaller one doubles, which halves the copies and the
	// garbage of growing it (BenchmarkTrackerUpdate, state=new) where its
	// slack costs 8 KiB at most.
	switch n := uint64(len(index)); {
	case (uint64(i)+1)*8 > n*7:
		size := max(16, 2*n)
		if n >= 1024 {
			size = n + n/4
		}
		grown := trackerRehash(index, size)
		trackerPlace(grown, tag, i)
		s.table.Store(&trackerTable{index: grown, chunks: chunks})
	case newChunks:
		// The array of chunks must be in the version that lookups find
		// the slot in.
		s.table.Store(&trackerTable{index: index, chunks: chunks})
		atomic.StoreUint64(&index[slot], v)
	default:
		atomic.StoreUint64(&index[slot], v)
	}
	s.used++
}

// trackerRehash returns a new index of size slots with the series of
// index, which no writer changes meanwhile.
func trackerRehash(index []uint64, size uint64) []uint64 {
	grown := make([]uint64, size)
	for _, w := range index {
		if w != 0 {
			trackerPlace(grown, uint32(w>>32), uint32(w)-1)
		}
	}
	return grown
}

// trackerHome returns the slot of an index of n slots where the probe for
// tag starts, by which find, trackerPlace and touchBatch agree.
func trackerHome(tag uint32, n uint64) uint64 { return uint64(tag) * n >> 32 }

// trackerPlace puts entry i with tag in the first empty slot from its home,
// in an index that no lookup sees yet.
func trackerPlace(index []uint64, tag, i uint32) {
	n := uint64(len(index))
	p := trackerHome(tag, n)
	for index[p] != 0 {
		if p++; p == n {
			p = 0
		}
	}
	index[p] = uint64(tag)<<32 | uint64(i+1)
}

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

// trackerNewChunks returns the chunks for n entries, all in one array.
func trackerNewChunks(n uint32) [][]trackerEntry {
	k := 0
	for trackerCapacity(k) < n {
		k++
	}
	all := make([]trackerEntry, trackerCapacity(k))
	chunks := make([][]trackerEntry, max(k, 4))
	for i := range k {
		c := trackerChunkLen(i)
		chunks[i], all = all[:c:c], all[c:]
	}
	return chunks
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

// ReloadCustomTrackers replaces the tracker's custom trackers with custom,
// checked as [New] checks [Options].Custom (it returns an error wrapping
// [ErrOptions], and changes nothing, if they are invalid), and counts the
// active series of the new ones at once: unlike Mimir's ingester, which
// forgets its series on a reload and reports no counts until an idle
// timeout has passed, the tracker holds every active series' labels and
// matches them again. A custom tracker that custom keeps with the same name
// and matchers, at any place in the list, keeps its counts, which the
// reload does not touch and updates keep moving meanwhile; its series are
// not matched again. Only the new and changed custom trackers evaluate
// their matchers, once for each active series.
//
// The reload locks one stripe at a time, as [Tracker.Purge] does, and runs
// neither with a purge nor with another reload. Until it returns, readers
// of the counts see the previous custom trackers, and the counts of those
// that custom drops or changes miss the series added meanwhile to the
// stripes already moved to the new ones. It makes the new list, its map of
// names, counters for the new custom trackers and, for the tracker, a
// slice of a delta per custom tracker; it makes no allocation per series.
func (t *Tracker) ReloadCustomTrackers(custom []CustomTracker) error {
	if t.stripes == nil {
		panic("activeseries: Tracker not made by New")
	}
	t.purgeMu.Lock()
	defer t.purgeMu.Unlock()
	prev := t.custom.Load()
	next, err := newCustomSet(custom, prev)
	if err != nil {
		return err
	}
	// remap[j] is the bit in next of prev's custom tracker j, 0 if next
	// drops or changes it; fresh lists the custom trackers of next whose
	// matchers must be evaluated.
	var remap [MaxCustomTrackers]uint32
	var fresh []int
	for i, c := range next.custom {
		if j, ok := prev.kept(c); ok {
			remap[j] = 1 << i
		} else {
			fresh = append(fresh, i)
		}
	}
	for i := range t.stripes {
		s := &t.stripes[i]
		s.mu.Lock()
		s.rematch(next, &remap, fresh)
		s.custom = next
		s.mu.Unlock()
	}
	t.custom.Store(next)
	t.dropped = make([]trackerDelta, len(next.custom))
	return nil
}

// rematch rewrites the custom-tracker masks of s's entries for next: a bit
// of a kept custom tracker moves as remap says, and the custom trackers of
// next listed in fresh are matched and count the entries they match. It
// requires s.mu.
func (s *trackerStripe) rematch(next *customSet, remap *[MaxCustomTrackers]uint32, fresh []int) {
	tb := s.table.Load()
	if tb == nil {
		return
	}
	// The entries of the current table are all alive.
	for i, left := 0, s.used; left > 0; i++ {
		chunk := tb.chunks[i]
		chunk = chunk[:min(uint32(len(chunk)), left)]
		left -= uint32(len(chunk))
		for j := range chunk {
			e := &chunk[j]
			m := e.meta
			var mask uint32
			for old := uint32(m); old != 0; old &= old - 1 {
				mask |= remap[bits.TrailingZeros32(old)]
			}
			if len(fresh) > 0 {
				d := trackerHistDelta(uint32(m>>32), 1)
				for _, k := range fresh {
					if matchesAll(next.custom[k].Matchers, e.lset) {
						mask |= 1 << k
						next.counts[k].add(d)
					}
				}
			}
			if mask != uint32(m) {
				atomic.StoreUint64(&e.meta, m&^math.MaxUint32|uint64(mask))
			}
		}
	}
}
