package exemplars

// Stats are the counts of a [Ring], as [Ring.UpdateStats] reports them.
// A Stats is a plain value, not safe for concurrent use: UpdateStats
// writes it under the ring's lock, which does not guard the Stats, so a
// Stats that goroutines share needs a lock of its own.
type Stats struct {
	// Appended is the number of exemplars added since the ring was made
	// (duplicates, which are ignored, and rejected ones are not counted).
	Appended uint64
	// OutOfOrder is the number of adds rejected with
	// storage.ErrOutOfOrderExemplar.
	OutOfOrder uint64
	// Exemplars is the number of exemplars the ring holds.
	Exemplars int
	// Series is the number of series that have exemplars in the ring.
	Series int
	// Size is the number of exemplars the ring can hold.
	Size int
	// OldestTimestamp is the timestamp, in milliseconds, of the oldest
	// exemplar ingested that the ring holds (the next to be dropped), or 0
	// when it holds none.
	OldestTimestamp int64
}

// Stats returns the ring's counts; see [Ring.UpdateStats].
func (r *Ring) Stats() Stats {
	var s Stats
	r.UpdateStats(&s)
	return s
}

// UpdateStats sets *s to the ring's counts, read together under the
// ring's lock. It makes no allocation.
func (r *Ring) UpdateStats(s *Stats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*s = Stats{
		Appended:   r.appended,
		OutOfOrder: r.outOfOrder,
		Exemplars:  r.live,
		Series:     r.nseries,
		Size:       r.size,
	}
	if r.live > 0 {
		n := r.size
		s.OldestTimestamp = r.at(int32((int(r.next) + n - r.live) % n)).ts
	}
}
