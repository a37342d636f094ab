package exemplars

import (
	"slices"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
)

// Select returns the exemplars of the series that match at least one of
// the sets of matchers (all of a set's matchers must match) with
// timestamps from start to end inclusive, one [exemplar.QueryResult] per
// series, sorted by series labels, each series' exemplars in time order,
// as Prometheus's Select. It returns a non-nil empty slice when nothing
// matches, and never fails.
//
// Select holds the ring's lock three times, each for one pass over what
// it reads: to list the series, then, after evaluating the matchers
// without the lock, to count the exemplars in [start, end] of those
// selected, and, after allocating their room, to copy them. It sorts and
// builds its result without the lock. A series added meanwhile is not
// seen, and one dropped is left out. The results' Exemplars share one
// array, each capped at its own length; SeriesLabels and exemplar labels
// are the ring's, by reference. Select allocates that array, the result
// slice, and nothing per series.
func (r *Ring) Select(start, end int64, matchers ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	return r.selectShare(scanShare, start, end, matchers)
}

// selectShare is Select, copying by one pass over the ring from share on
// (see scanShare): BenchmarkSelectExemplars passes other shares, to
// compare walks and passes with scanShare's choice.
func (r *Ring) selectShare(share int, start, end int64, matchers [][]*labels.Matcher) ([]exemplar.QueryResult, error) {
	ret := make([]exemplar.QueryResult, 0)
	if len(matchers) == 0 {
		return ret, nil
	}
	sc, _ := r.scratch.Get().(*selectScratch)
	if sc == nil {
		sc = new(selectScratch)
	}
	cands := sc.cands[:0]
	defer func() {
		clear(cands) // drop the label references
		sc.cands = cands[:0]
		r.scratch.Put(sc)
	}()

	r.mu.Lock()
	if r.size == 0 {
		r.mu.Unlock()
		return ret, nil
	}
	cands = slices.Grow(cands, r.nseries)
	for id := 1; id < len(r.series); id++ {
		if s := &r.series[id]; s.oldest != none {
			cands = append(cands, candidate{lset: s.lset, id: uint32(id)})
		}
	}
	r.mu.Unlock()

	n := 0
	for _, c := range cands {
		if matchesSomeMatcherSet(c.lset, matchers) {
			cands[n] = c
			n++
		}
	}
	clear(cands[n:])
	cands = cands[:n]
	if n == 0 {
		return ret, nil
	}

	total := 0
	r.mu.Lock()
	for i := range cands {
		cands[i].n = int32(r.countIfSame(&cands[i], start, end))
		total += int(cands[i].n)
	}
	r.mu.Unlock()
	if total == 0 {
		return ret, nil
	}

	exs := make([]exemplar.Exemplar, total)
	r.mu.Lock()
	exs = r.copySelected(exs, cands, sc, share, start, end)
	r.mu.Unlock()

	// Sort the series by labels through a permutation of their places in
	// cands: moving 4-byte numbers rather than results costs no write
	// barriers while the garbage collector marks.
	perm := sc.perm[:0]
	from := int32(0)
	for i := range cands {
		if c := &cands[i]; c.n > 0 {
			c.from = from
			from += c.n
			perm = append(perm, int32(i))
		}
	}
	slices.SortFunc(perm, func(a, b int32) int {
		return labels.Compare(cands[a].lset, cands[b].lset)
	})
	ret = slices.Grow(ret, len(perm))[:len(perm)]
	for k, i := range perm {
		c, q := &cands[i], &ret[k]
		to := c.from + c.n
		q.SeriesLabels = c.lset
		q.Exemplars = exs[c.from:to:to]
	}
	sc.perm = perm[:0]
	return ret, nil
}

// selectScratch is what Select reuses from one call to the next.
type selectScratch struct {
	cands []candidate
	perm  []int32 // places in cands, sorted by labels
	// at is, by series id, 1 + the index in the result of the next
	// exemplar of the series, for the series that copySelected copies by
	// its pass over the ring, and 0 for the others.
	at []int32
}

// countIfSame returns the number of exemplars from start to end of the
// series of c if it is still the series c was listed as, or 0. Called
// with mu held.
func (r *Ring) countIfSame(c *candidate, start, end int64) int {
	if int(c.id) >= len(r.series) { // the ring was resized to zero since
		return 0
	}
	if s := &r.series[c.id]; s.oldest != none && labels.Equal(s.lset, c.lset) {
		return r.count(s, start, end)
	}
	return 0
}

// scanShare is the share of the ring's exemplars, as a divisor, from
// which Select copies the exemplars of series whose lists are in the
// order of arrival by one pass over the ring rather than by walking their
// lists: a pass reads every slot in memory order, a walk jumps from slot
// to slot, so a pass costs less once the selection is a large part of
// the ring, and more for a small part, whose walks read only its slots.
// BenchmarkSelectExemplars backs it: its cases select a tenth of the ring
// (case=regexp-10pct, case=all-recent) and all of it (case=all), and
// impl=ingestkit-walk and impl=ingestkit-pass copy them always by walks
// and always by a pass, beside impl=ingestkit's choice; BENCHMARKS.md
// has the figures. Between a tenth and all, 4 was not tuned further.
const scanShare = 4

// copySelected copies into exs the exemplars from start to end of the
// candidates that countIfSame counted, in the order of cands, and sets
// their counts to what it copied. If the ring changed since they were
// counted so that they no longer fit, it appends to exs instead, which
// then grows. It copies by one pass over the ring when what it copies is
// at least one share-th of the ring's exemplars (never for a share of 0;
// see scanShare). Called with mu held.
func (r *Ring) copySelected(exs []exemplar.Exemplar, cands []candidate, sc *selectScratch, share int, start, end int64) []exemplar.Exemplar {
	sum := 0
	for i := range cands {
		if cands[i].n > 0 {
			cands[i].n = int32(r.countIfSame(&cands[i], start, end))
			sum += int(cands[i].n)
		}
	}
	if sum > len(exs) {
		exs = exs[:0]
		for i := range cands {
			c := &cands[i]
			if c.n > 0 {
				from := len(exs)
				exs = r.appendRange(exs, &r.series[c.id], start, end)
				c.n = int32(len(exs) - from)
			}
		}
		return exs
	}
	exs = exs[:sum]
	scan := sum*share >= r.live
	if scan {
		sc.at = slices.Grow(sc.at[:0], len(r.series))[:len(r.series)]
	}
	off := 0
	for i := range cands {
		c := &cands[i]
		if c.n == 0 {
			continue
		}
		if s := &r.series[c.id]; scan && s.link&unsorted == 0 {
			sc.at[c.id] = int32(off + 1)
		} else {
			r.appendRange(exs[off:off:off+int(c.n)], s, start, end)
		}
		off += int(c.n)
	}
	if !scan {
		return exs
	}
	for run := range r.liveRuns {
		for k := range run.slots {
			sl := &run.slots[k]
			if p := sc.at[sl.series]; p != 0 && sl.ts >= start && sl.ts <= end {
				sl.copyTo(&exs[p-1], run.labels[k])
				sc.at[sl.series] = p + 1
			}
		}
	}
	clear(sc.at)
	return exs
}

// candidate is a series that Select considers, and then the number of its
// exemplars it selects.
type candidate struct {
	lset labels.Labels
	id   uint32
	n    int32 // exemplars selected, at most MaxSize in all
	from int32 // the place of the first in the result's array
}

// count returns the number of exemplars of s from start to end. Called
// with mu held.
func (r *Ring) count(s *seriesEntry, start, end int64) int {
	first, last := r.at(s.oldest).ts, r.at(s.newest).ts
	switch {
	case first > end || last < start || start > end:
		return 0
	case start <= first && last <= end:
		return int(s.n)
	case s.order != nil:
		return r.upper(s.order, end) - r.lower(s.order, start)
	}
	n := 0
	if end >= last {
		for i := s.newest; i != none && r.at(i).ts >= start; i = r.at(i).prev {
			n++
		}
		return n
	}
	for i := s.oldest; i != none && r.at(i).ts <= end; i = r.at(i).next {
		if r.at(i).ts >= start {
			n++
		}
	}
	return n
}

// appendRange appends to dst the exemplars of s from start to end in list
// order, walking from whichever end of the list the range is at. Called
// with mu held.
func (r *Ring) appendRange(dst []exemplar.Exemplar, s *seriesEntry, start, end int64) []exemplar.Exemplar {
	first := s.oldest
	if start > r.at(s.oldest).ts && end >= r.at(s.newest).ts {
		// The range is at the newest end: find where it starts from there.
		first = none
		for i := s.newest; i != none && r.at(i).ts >= start; i = r.at(i).prev {
			first = i
		}
	}
	for i := first; i != none && r.at(i).ts <= end; i = r.at(i).next {
		if sl := r.at(i); sl.ts >= start {
			if len(dst) < cap(dst) {
				dst = dst[:len(dst)+1]
				sl.copyTo(&dst[len(dst)-1], *r.labelsAt(i))
			} else {
				dst = append(dst, sl.exemplar(*r.labelsAt(i)))
			}
		}
	}
	return dst
}

// matchesSomeMatcherSet reports whether lset matches every matcher of at
// least one of the sets.
func matchesSomeMatcherSet(lset labels.Labels, matchers [][]*labels.Matcher) bool {
outer:
	for _, ms := range matchers {
		for _, m := range ms {
			if !m.Matches(lset.Get(m.Name)) {
				continue outer
			}
		}
		return true
	}
	return false
}

// IterateExemplars calls f on every exemplar, from the oldest ingested to
// the newest, with its series' labels, until f returns an error, which it
// returns, as Prometheus's IterateExemplars. It holds the ring's lock
// throughout, so f must not call the ring's methods, and delays adds
// until it returns.
func (r *Ring) IterateExemplars(f func(seriesLabels labels.Labels, e exemplar.Exemplar) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for run := range r.liveRuns {
		for k := range run.slots {
			sl := &run.slots[k]
			if err := f(r.series[sl.series].lset, sl.exemplar(run.labels[k])); err != nil {
				return err
			}
		}
	}
	return nil
}
