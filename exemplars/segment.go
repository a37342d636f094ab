package exemplars

import "github.com/prometheus/prometheus/model/labels"

// maxSegs is the most segments a ring has: a grow beyond it allocates
// one segment of the new size and copies the ring into it. Rings are
// resized rarely; the bound keeps at and the runs short.
const maxSegs = 8

// segment is a run of the ring's slots and, in a parallel slice of the
// same length, the labels of their exemplars. The two are separate
// allocations so that the slots, which hold no pointers, are memory the
// garbage collector never reads: a ring is long-lived and large, and
// every collection would otherwise read all of it, the pages of a new
// ring included.
type segment struct {
	slots  []slot
	labels []labels.Labels
}

// newSegment allocates a segment of n empty slots.
func newSegment(n int) segment {
	return segment{make([]slot, n), make([]labels.Labels, n)}
}

// from returns the segment from slot i on.
func (sg segment) from(i int) segment { return segment{sg.slots[i:], sg.labels[i:]} }

// upTo returns the segment's first j slots.
func (sg segment) upTo(j int) segment { return segment{sg.slots[:j], sg.labels[:j]} }

// clear empties the segment's slots and drops their labels.
func (sg segment) clear() {
	clear(sg.slots)
	clear(sg.labels)
}

// at returns slot i. Called with mu held.
func (r *Ring) at(i int32) *slot {
	if uint(i) < uint(len(r.first)) {
		return &r.first[i]
	}
	return &r.span(int(i)).slots[0]
}

// labelsAt returns the labels of the exemplar in slot i. Called with mu
// held.
func (r *Ring) labelsAt(i int32) *labels.Labels {
	if uint(i) < uint(len(r.firstLabels)) {
		return &r.firstLabels[i]
	}
	return &r.span(int(i)).labels[0]
}

// span returns the slots from i to the end of the segment that holds i.
// Called with mu held.
func (r *Ring) span(i int) segment {
	for _, sg := range r.segs {
		if i < len(sg.slots) {
			return sg.from(i)
		}
		i -= len(sg.slots)
	}
	panic("exemplars: slot beyond the ring")
}

// spanTo returns the slots from the start of the segment that holds slot
// j-1 up to j. Called with mu held.
func (r *Ring) spanTo(j int) segment {
	for _, sg := range r.segs {
		if j <= len(sg.slots) {
			return sg.upTo(j)
		}
		j -= len(sg.slots)
	}
	panic("exemplars: slot beyond the ring")
}

// liveRuns yields the non-empty slots from the oldest ingested to the
// newest, in runs that each lie within one segment. Called with mu held.
func (r *Ring) liveRuns(yield func(segment) bool) {
	n := r.size
	if r.live == 0 {
		return
	}
	i := (int(r.next) + n - r.live) % n
	for left := r.live; left > 0; {
		sp := r.span(i)
		m := min(left, len(sp.slots), n-i)
		if !yield(sp.upTo(m)) {
			return
		}
		left -= m
		if i += m; i == n {
			i = 0
		}
	}
}
