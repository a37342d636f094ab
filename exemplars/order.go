package exemplars

// order is the slots of one series in the order of its list (by time,
// ties in the order of arrival), kept for a series that takes exemplars
// far out of order so that finding where one goes is a binary search
// rather than a walk of the list. The slots are buf[lo:hi], with room kept
// at both ends, so that the newest and the oldest exemplars of a series,
// which are the ones usually added and dropped, cost no copying.
type order struct {
	buf    []int32
	lo, hi int
}

// minOrder is the length below which a series drops its order: walking
// fewer exemplars than that costs less than keeping it.
const minOrder = walkLimit / 4

// len returns the number of slots in o.
func (o *order) len() int { return o.hi - o.lo }

// at returns the i-th slot of o.
func (o *order) at(i int) int32 { return o.buf[o.lo+i] }

// insert puts slot v at position i, 0 <= i <= o.len(), moving whichever
// side of i is shorter.
func (o *order) insert(i int, v int32) {
	n := o.hi - o.lo
	if o.lo == 0 || o.hi == len(o.buf) {
		o.respace(n + 1)
	}
	if i < n-i {
		copy(o.buf[o.lo-1:], o.buf[o.lo:o.lo+i])
		o.lo--
	} else {
		copy(o.buf[o.lo+i+1:], o.buf[o.lo+i:o.hi])
		o.hi++
	}
	o.buf[o.lo+i] = v
}

// remove takes out the slot at position i, moving whichever side of i is
// shorter.
func (o *order) remove(i int) {
	n := o.hi - o.lo
	if i < n-1-i {
		copy(o.buf[o.lo+1:], o.buf[o.lo:o.lo+i])
		o.lo++
	} else {
		copy(o.buf[o.lo+i:], o.buf[o.lo+i+1:o.hi])
		o.hi--
	}
}

// respace centres the slots in a buffer at least twice as long as need,
// reusing o.buf if it is: each end then has room for need/2 inserts, so
// that respacing costs O(1) an insert over time.
func (o *order) respace(need int) {
	n := o.hi - o.lo
	buf := o.buf
	if 2*need > len(buf) {
		buf = make([]int32, 2*need+16)
	}
	lo := (len(buf) - n) / 2
	copy(buf[lo:], o.buf[o.lo:o.hi])
	o.buf, o.lo, o.hi = buf, lo, lo+n
}

// buildOrder gives series s an order, from its list. Called with mu
// held.
func (r *Ring) buildOrder(s *seriesEntry) {
	o := &order{}
	o.respace(64)
	for i := s.oldest; i != none; i = r.at(i).next {
		if o.hi == len(o.buf) {
			o.respace(2 * o.len())
		}
		o.buf[o.hi] = i
		o.hi++
	}
	s.order = o
	r.orders++
}

// dropOrder drops the order of series s, if it has one. Called with mu
// held.
func (r *Ring) dropOrder(s *seriesEntry) {
	if s.order != nil {
		s.order = nil
		r.orders--
	}
}

// upper returns the number of slots of o whose timestamps are at most ts.
// Called with mu held.
func (r *Ring) upper(o *order, ts int64) int {
	lo, hi := o.lo, o.hi
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.at(o.buf[m]).ts <= ts {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - o.lo
}

// lower returns the number of slots of o whose timestamps are before ts.
// Called with mu held.
func (r *Ring) lower(o *order, ts int64) int {
	lo, hi := o.lo, o.hi
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.at(o.buf[m]).ts < ts {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - o.lo
}

// orderRemove takes slot pos out of the order of its series s, and drops
// the order when the series has become short. Called with mu held,
// before the slot is emptied.
func (r *Ring) orderRemove(s *seriesEntry, pos int32) {
	o := s.order
	// The first slot at its timestamp, then along the run of equal ones.
	i := r.lower(o, r.at(pos).ts)
	for o.at(i) != pos {
		i++
	}
	o.remove(i)
	if o.len() < minOrder {
		r.dropOrder(s)
	}
}

// walkLimit is how many exemplars before finding its place an exemplar
// out of order walks back over from its series' newest, as Prometheus's
// storage does, before its series builds an order to search instead. A
// late exemplar usually lies close to the newest, and then the walk costs
// less than keeping the order. BenchmarkAddExemplarOutOfOrder has both:
// case=one-series-recent walks, case=one-series-random builds and
// searches the order; 64 was not tuned further.
const walkLimit = 64

// before returns the last slot, in list order, of series id whose
// timestamp is at most ts, or the series' oldest if there is none, as
// Prometheus's findInsertionIndex. Called with mu.
func (r *Ring) before(id uint32, ts int64) int32 {
	s := &r.series[id]
	if s.order == nil {
		i, steps := s.newest, 0
		for ; i != none && steps < walkLimit; i, steps = r.at(i).prev, steps+1 {
			if r.at(i).ts <= ts {
				return i
			}
		}
		if i == none {
			return s.oldest
		}
		r.buildOrder(s)
	}
	u := r.upper(s.order, ts)
	if u == 0 {
		return s.oldest
	}
	return s.order.at(u - 1)
}
