package activeseries

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
)

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
