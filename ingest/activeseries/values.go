package activeseries

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
)

// DefaultMaxLabelValues is the cap on the values of [Options].ByLabel that
// a [Tracker] counts apart when Options.MaxLabelValues is zero: each is a
// gauge per tenant once exported by a [Collector].
const DefaultMaxLabelValues = 100

// maxLabelValues bounds Options.MaxLabelValues.
const maxLabelValues = 1 << 16

// OverflowValue is the value of the label value gauge of a [Collector]
// under which it exports [Stats].Overflow: the series whose values of
// [Options].ByLabel are not counted apart. It is the value Mimir's cost
// attribution gives such series. A series whose value is OverflowValue
// itself is always counted in the overflow, so that the two never mix.
const OverflowValue = "__overflow__"

// LabelValueCounts are the counts of the active series with one value of
// [Options].ByLabel: a plain value, a copy not updated afterwards, safe for
// concurrent use.
type LabelValueCounts struct {
	Value  string // of the label, "" for the series without it
	Counts        // of the active series with that value
}

// labelValues counts a tracker's active series by the value of one label,
// up to max values; the series of other values count in overflow.
//
// A series' place is not stored in its entry: it is found again from the
// series' labels when its counts change, and the rules below keep it the
// same for the life of the entry. A value is added only while overflow
// counts no series, and removed only once it counts none. So a value that
// counts a live series stays, and one that a live series in overflow has
// stays absent. Adding and removing values take mu; counting in a value
// that is there, or in overflow, takes mu for reading, and, in overflow,
// only for an entry that is already counted there: overflow's series
// count changes from zero only under mu.
type labelValues struct {
	label string // immutable
	max   int    // immutable

	mu       sync.RWMutex
	values   map[string]*trackerCounts // guarded by mu; the counts atomic
	overflow trackerCounts             // atomic; increments of series under mu
}

// newLabelValues returns the counts by label of opts, nil without ByLabel.
func newLabelValues(label string, max int) *labelValues {
	if label == "" {
		return nil
	}
	if max == 0 {
		max = DefaultMaxLabelValues
	}
	return &labelValues{label: label, max: max, values: make(map[string]*trackerCounts)}
}

// insert counts a new series with labels ls, adding its value if the rules
// allow. d counts one series.
func (lv *labelValues) insert(ls labels.Labels, d trackerDelta) {
	v := ls.Get(lv.label)
	lv.mu.RLock()
	c := lv.values[v]
	if c != nil {
		c.add(d)
		lv.mu.RUnlock()
		return
	}
	lv.mu.RUnlock()
	lv.mu.Lock()
	c = lv.values[v]
	if c == nil {
		c = &lv.overflow
		if len(lv.values) < lv.max && lv.overflow.series.Load() == 0 && v != OverflowValue {
			// Cloned: ls may hold much more than the value.
			c = new(trackerCounts)
			lv.values[strings.Clone(v)] = c
		}
	}
	c.add(d)
	lv.mu.Unlock()
}

// counts returns the counters of the tracked series with labels ls.
// It requires lv.mu, for reading at least.
func (lv *labelValues) counts(ls labels.Labels) *trackerCounts {
	if c := lv.values[ls.Get(lv.label)]; c != nil {
		return c
	}
	return &lv.overflow
}

// change applies d to the counts of the tracked series with labels ls.
func (lv *labelValues) change(ls labels.Labels, d trackerDelta) {
	lv.mu.RLock()
	lv.counts(ls).add(d)
	lv.mu.RUnlock()
}

// sweep removes the values that count no series.
func (lv *labelValues) sweep() {
	lv.mu.RLock()
	empty := false
	for _, c := range lv.values {
		if c.series.Load() == 0 {
			empty = true
			break
		}
	}
	lv.mu.RUnlock()
	if !empty {
		return
	}
	lv.mu.Lock()
	for v, c := range lv.values {
		if c.series.Load() == 0 {
			delete(lv.values, v)
		}
	}
	lv.mu.Unlock()
}

// stats sets s.Values, by value, and s.Overflow, reusing s.Values' array.
func (lv *labelValues) stats(s *Stats) {
	lv.mu.RLock()
	s.Values = slices.Grow(s.Values[:0], len(lv.values))
	for v, c := range lv.values {
		s.Values = append(s.Values, LabelValueCounts{Value: v, Counts: c.load()})
	}
	s.Overflow = lv.overflow.load()
	lv.mu.RUnlock()
	slices.SortFunc(s.Values, func(a, b LabelValueCounts) int { return cmp.Compare(a.Value, b.Value) })
}
