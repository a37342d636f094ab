package exemplars

import "github.com/prometheus/prometheus/model/labels"

// Resize changes the number of exemplars the ring holds to size (zero if
// negative, [MaxSize] at most) and returns how many it kept, as
// Prometheus's Resize: shrinking drops the oldest ingested exemplars that
// no longer fit, and returns 0 when size is the current size or zero.
//
// Unlike Prometheus's, which allocates a new ring and copies every
// exemplar, Resize works in place and moves only the exemplars it must. A
// grow allocates the slots it adds and, separately, their labels, as a
// new segment of the ring (or nothing, when a shrink kept the memory),
// except that the grow of a ring that has 8 segments already copies it
// into one segment of the new size; it moves the oldest exemplars, if the
// ring has wrapped around, to the new end. A shrink allocates nothing: it
// moves the exemplars beyond the new size within it and releases the
// segments beyond it, keeping the memory of the one it cuts; a shrink to
// zero releases every segment, and the series table and index with them.
// Series lose the time orders they kept for out-of-order exemplars, which
// are rebuilt when needed.
//
// Resize is what Prometheus's ApplyConfig does, which the ring does not
// have: it would take a *config.Config, and package config compiles
// hundreds of packages that the ring has no use for. A fork applies a
// reloaded configuration cfg to the ring as tsdb.Head.ApplyConfig applies
// it to Prometheus's storage:
//
//	var window int64
//	if tc := cfg.StorageConfig.TSDBConfig; tc != nil {
//		window = max(tc.OutOfOrderTimeWindow, 0)
//	}
//	ring.SetOutOfOrderTimeWindow(window)
//	ring.Resize(cfg.StorageConfig.ExemplarsConfig.MaxExemplars)
//
// TestConfigReload checks that this leaves the ring as ApplyConfig leaves
// Prometheus's storage.
func (r *Ring) Resize(size int64) int {
	n := clampSize(size)
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.size
	switch {
	case n == old:
		return 0
	case n > old:
		r.dropOrders()
		r.grow(n)
		return r.live
	default:
		r.dropOrders()
		r.shrink(n)
		if n == 0 {
			return 0
		}
		return r.live
	}
}

// grow makes the ring n slots long, n > r.size, with the new empty slots
// at next: the oldest end of the ring. Called with mu held.
func (r *Ring) grow(n int) {
	old, next := r.size, int(r.next)
	r.setSize(n)
	if next == 0 {
		// The newest exemplar is at the old end: the new slots follow it.
		r.next = int32(old)
		return
	}
	// The exemplars from next on, if any, are the oldest, up to the old
	// end; they move to the new end.
	if m := r.live - next; m > 0 {
		from, d := old-m, n-old
		r.move(from+d, from, m)
		r.clearSlots(from, min(old, from+d))
		r.relink(func(i int32) int32 {
			if int(i) >= from {
				return i + int32(d)
			}
			return i
		})
	}
}

// shrink makes the ring n slots long, n < r.size, dropping the oldest
// exemplars that do not fit, and moving those that are kept beyond n
// within the first n slots. Called with mu.
func (r *Ring) shrink(n int) {
	old := r.size
	if drop := r.live - n; drop > 0 {
		first := (int(r.next) + old - r.live) % old
		for k := range drop {
			i := int32((first + k) % old)
			id := r.at(i).series
			if r.unlink(r.at(i), i) {
				r.removeSeries(id)
			}
			*r.at(i) = slot{}
			*r.labelsAt(i) = labels.Labels{}
		}
		r.live = n
	}
	if n == 0 {
		// Release everything: a ring of size zero is disabled, and may stay so.
		r.first, r.firstLabels, r.segs, r.segBuf = nil, nil, nil, [maxSegs]segment{}
		r.size, r.next = 0, 0
		r.series, r.free, r.index = nil, 0, index{}
		return
	}

	k := r.live
	end := int(r.next) // the kept exemplars end before it, circularly
	if end == 0 {
		end = old
	}
	var remap func(int32) int32
	switch {
	case k <= end && end <= n:
		// The kept exemplars are within the first n slots already.
		r.next = int32(end % n)
	case k <= end:
		// They are in one run that ends beyond n: move it to the start,
		// and clear the stale copies it leaves.
		from := end - k
		r.move(0, from, k)
		r.clearSlots(k, end)
		remap = func(i int32) int32 { return i - int32(from) }
		r.next = int32(k % n)
	default:
		// They wrap around: the older part, from the end of the ring, moves
		// to the end of the first n slots; the newer part stays at the start.
		m := k - end
		from := old - m
		r.move(n-m, from, m)
		remap = func(i int32) int32 {
			if int(i) >= from {
				return i - int32(old-n)
			}
			return i
		}
		r.next = int32(end % n)
	}
	r.setSize(n) // drops what is left beyond n
	if remap != nil {
		r.relink(remap)
	}
}

// setSize makes the ring n slots long, n > 0, without moving any: it
// adds the slots of a grow, in the capacity the last segment kept and
// then a new segment, or cuts the segments at n, releasing those beyond
// and clearing what the one it cuts keeps in its capacity. Called with mu
// held.
func (r *Ring) setSize(n int) {
	old := r.size
	r.size = n
	if n < old {
		for k, sg := range r.segs {
			if n <= len(sg.slots) {
				sg.from(n).clear()
				r.segs[k] = sg.upTo(n)
				clear(r.segs[k+1:])
				r.segs = r.segs[:k+1]
				break
			}
			n -= len(sg.slots)
		}
	} else {
		need := n - old
		if k := len(r.segs) - 1; k >= 0 {
			last := r.segs[k]
			m := len(last.slots)
			add := min(need, cap(last.slots)-m, cap(last.labels)-m)
			r.segs[k] = segment{last.slots[:m+add], last.labels[:m+add]} // zero beyond len, cleared when cut
			need -= add
		}
		if r.segs == nil { // released by a resize to zero
			r.segs = r.segBuf[:0]
		}
		switch {
		case need == 0:
		case len(r.segs) < maxSegs:
			r.segs = append(r.segs, newSegment(need))
		default:
			// One segment of the new size; what the old ones do not fill
			// is the zero capacity of the allocations.
			all := segment{make([]slot, 0, r.size), make([]labels.Labels, 0, r.size)}
			for _, sg := range r.segs {
				all.slots = append(all.slots, sg.slots...)
				all.labels = append(all.labels, sg.labels...)
			}
			r.segBuf = [maxSegs]segment{}
			r.segBuf[0] = all.upTo(r.size)
			r.segs = r.segBuf[:1]
		}
	}
	r.first, r.firstLabels = r.segs[0].slots, r.segs[0].labels
}

// move copies the n slots from src to the n from dst, which may overlap.
// Called with mu held.
func (r *Ring) move(dst, src, n int) {
	if dst == src {
		return
	}
	// Copy run by run, each within one segment at both ends: from the
	// start when moving down, from the end when moving up, so that no slot
	// is overwritten before it is copied.
	for n > 0 {
		if dst < src {
			to, from := r.span(dst), r.span(src)
			m := min(n, len(to.slots), len(from.slots))
			copy(to.slots[:m], from.slots)
			copy(to.labels[:m], from.labels)
			dst, src, n = dst+m, src+m, n-m
			continue
		}
		to, from := r.spanTo(dst+n), r.spanTo(src+n)
		m := min(n, len(to.slots), len(from.slots))
		copy(to.slots[len(to.slots)-m:], from.slots[len(from.slots)-m:])
		copy(to.labels[len(to.labels)-m:], from.labels[len(from.labels)-m:])
		n -= m
	}
}

// clearSlots empties the slots from i to j. Called with mu held.
func (r *Ring) clearSlots(i, j int) {
	for i < j {
		sp := r.span(i)
		m := min(j-i, len(sp.slots))
		sp.upTo(m).clear()
		i += m
	}
}

// relink applies remap to the slot numbers of every list. Called with mu
// held, after the slots were moved.
func (r *Ring) relink(remap func(int32) int32) {
	for _, sg := range r.segs {
		for i := range sg.slots {
			sl := &sg.slots[i]
			if sl.series == 0 {
				continue
			}
			if sl.prev != none {
				sl.prev = remap(sl.prev)
			}
			if sl.next != none {
				sl.next = remap(sl.next)
			}
		}
	}
	for id := 1; id < len(r.series); id++ {
		s := &r.series[id]
		if s.oldest != none {
			s.oldest, s.newest = remap(s.oldest), remap(s.newest)
		}
	}
}

// dropOrders drops the orders of every series. Called with mu held.
func (r *Ring) dropOrders() {
	for id := 1; r.orders > 0 && id < len(r.series); id++ {
		r.dropOrder(&r.series[id])
	}
}
