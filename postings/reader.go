package postings

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Reader answers label matchers from a Prometheus TSDB block index (format
// 2, as Prometheus's block writer makes it) read in byte ranges from a
// [Source]: [NewReader] reads the table of contents and the postings offset
// table once; [Reader.ExpandedPostings] then reads only the postings lists
// the matchers need.
//
// A Reader is safe for concurrent use by multiple goroutines. It holds the
// offset table's label values and 12 bytes per (name, value) pair.
type Reader struct {
	rr      *RangeReader
	name    string
	size    int64
	version int
	toc     toc
	t       *table

	// queries holds *query scratch space; sync.Pool is safe for concurrent
	// use.
	queries sync.Pool
}

// NewReader reads the index name of size bytes through rr: its header and
// table of contents, then its whole postings offset table, which is checked
// (checksum, bounds, order) and kept in memory. Errors are [ErrNotIndex],
// [ErrUnsupportedVersion], [ErrCorrupt], Prometheus's
// encoding.ErrInvalidChecksum, and those of rr (an offset table longer than
// [RangeOptions.MaxRangeSize] is refused with [ErrRangeTooLarge]).
func NewReader(ctx context.Context, rr *RangeReader, name string, size int64) (*Reader, error) {
	if size < headerLen+tocLen {
		return nil, fmt.Errorf("%w: index of %d bytes", ErrCorrupt, size)
	}
	var b Batch
	if err := rr.ReadRanges(ctx, name, []Range{{0, headerLen}, {size - tocLen, tocLen}}, &b); err != nil {
		return nil, fmt.Errorf("read index header and table of contents: %w", err)
	}
	r := &Reader{rr: rr, name: name, size: size}
	var err error
	if r.version, err = decodeHeader(b.View(0)); err == nil {
		r.toc, err = decodeTOC(b.View(1), size)
	}
	b.Release()
	if err != nil {
		return nil, err
	}
	buf, err := rr.ReadRangeBuffer(ctx, name, int64(r.toc.postingsTable), size-tocLen-int64(r.toc.postingsTable))
	if err != nil {
		return nil, fmt.Errorf("read postings offset table: %w", err)
	}
	defer rr.Release(buf)
	if r.t, err = decodeOffsetTable(buf.B, r.toc.postings, r.toc.postingsTable); err != nil {
		return nil, err
	}
	return r, nil
}

// Version returns the index format version, 2 or 3.
func (r *Reader) Version() int { return r.version }

// LabelNames returns the label names of the index, sorted. The slice is
// shared: the caller must not modify it.
func (r *Reader) LabelNames() []string {
	if len(r.t.names) > 0 && r.t.names[0] == "" {
		return r.t.names[1:] // the all-postings key
	}
	return r.t.names
}

// qset is a union of postings lists: the entries q.ents[start:end].
type qset struct{ start, end int32 }

// query is the scratch space of one ExpandedPostings call, reused.
type query struct {
	ms     []*labels.Matcher
	ents   []int32 // entries of every set
	its    []qset
	notIts []qset
	need   []int32 // sorted distinct entries to read
	ranges []Range
	batch  Batch
	lists  [][]byte // lists[i]: refs of entry need[i], big-endian
	order  []int
	a, b   []uint32
	bits   []uint64
}

// ExpandedPostings appends to dst the refs of the series matching every
// matcher in ms, sorted, and returns the extended slice. The refs and their
// order are those of Prometheus's tsdb.PostingsForMatchers over
// index.Reader on the same block, empty-matcher cases included: a matcher
// that matches the empty string also selects series without the label, a
// single matcher with an empty name and value selects every series, and no
// matchers select none. ms is not modified.
//
// It reads the postings lists it needs with one [RangeReader.ReadRanges]
// call into pooled buffers, checks their checksums, and computes unions,
// intersections and differences on the fetched bytes in pooled scratch
// space. On error dst is returned as it was.
//
// Allocations in the steady state: growing dst (none if it has room); none
// when the lists are read in one request, else 4 + 2 per request (the
// errgroup that runs them); one per regex matcher whose set matches are
// consulted (labels.Matcher.SetMatches returns a copy). The postings bytes
// cost none. TestExpandedPostingsAllocs asserts these counts.
func (r *Reader) ExpandedPostings(ctx context.Context, dst []storage.SeriesRef, ms ...*labels.Matcher) ([]storage.SeriesRef, error) {
	q, _ := r.queries.Get().(*query)
	if q == nil {
		q = new(query)
	}
	defer r.putQuery(q)
	ok, err := r.plan(ctx, q, ms)
	if err != nil || !ok {
		return dst, err
	}
	if err := r.fetch(ctx, q); err != nil {
		return dst, err
	}
	res := r.eval(q)
	dst = slices.Grow(dst, len(res))
	for _, ref := range res {
		dst = append(dst, storage.SeriesRef(ref))
	}
	return dst, nil
}

func (r *Reader) putQuery(q *query) {
	q.batch.Release()
	clear(q.ms)
	clear(q.lists)
	q.ms, q.ents, q.its, q.notIts, q.need, q.ranges, q.lists = q.ms[:0], q.ents[:0], q.its[:0], q.notIts[:0], q.need[:0], q.ranges[:0], q.lists[:0]
	r.queries.Put(q)
}

// plan mirrors tsdb.PostingsForMatchers, case by case, but collects entries
// of the offset table instead of postings iterators. It returns false if
// the result is empty without reading anything.
func (r *Reader) plan(ctx context.Context, q *query, ms []*labels.Matcher) (bool, error) {
	if len(ms) == 1 && ms[0].Name == "" && ms[0].Value == "" {
		s := r.eqSet(q, "", "")
		q.its = append(q.its, s)
		return s.end > s.start, nil
	}
	// Which label must be non-empty: set by a matcher that does not match "".
	mustBeSet := func(name string) bool {
		for _, m := range ms {
			if m.Name == name && !m.Matches("") {
				return true
			}
		}
		return false
	}
	isSubtracting := func(m *labels.Matcher) bool {
		if !mustBeSet(m.Name) {
			return true
		}
		return (m.Type == labels.MatchNotEqual || m.Type == labels.MatchNotRegexp) && m.Matches("")
	}
	hasSubtracting, hasIntersecting := false, false
	for _, m := range ms {
		if isSubtracting(m) {
			hasSubtracting = true
		} else {
			hasIntersecting = true
		}
	}
	if hasSubtracting && !hasIntersecting {
		q.its = append(q.its, r.eqSet(q, "", ""))
	}
	// The same order as Prometheus (intersecting matchers first, its
	// comparator as it is), on a copy: the caller's slice stays as it was.
	q.ms = append(q.ms, ms...)
	slices.SortStableFunc(q.ms, func(i, j *labels.Matcher) int {
		if !isSubtracting(i) && isSubtracting(j) {
			return -1
		}
		return +1
	})
	for _, m := range q.ms {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		switch {
		case m.Name == "" && m.Value == "":
			return false, ErrUnexpectedAllPostings
		case m.Type == labels.MatchRegexp && m.Value == ".*":
			// Matches any string: no constraint.
		case m.Type == labels.MatchNotRegexp && m.Value == ".*":
			return false, nil
		case m.Type == labels.MatchRegexp && m.Value == ".+":
			s := r.allSet(q, m.Name)
			if s.start == s.end {
				return false, nil
			}
			q.its = append(q.its, s)
		case m.Type == labels.MatchNotRegexp && m.Value == ".+":
			q.notIts = append(q.notIts, r.allSet(q, m.Name))
		case mustBeSet(m.Name):
			matchesEmpty := m.Matches("")
			isNot := m.Type == labels.MatchNotEqual || m.Type == labels.MatchNotRegexp
			switch {
			case isNot && matchesEmpty: // l!="foo": subtract the values the inverse matches.
				q.notIts = append(q.notIts, r.inverseOfNotSet(q, m))
			case isNot && !matchesEmpty: // l!="": the values of the inverse's inverse.
				s := r.matchingInverseOfNotSet(q, m)
				if s.start == s.end {
					return false, nil
				}
				q.its = append(q.its, s)
			default: // l="a", l=~"a|b", l=~"a.b"
				s := r.matcherSet(q, m)
				if s.start == s.end {
					return false, nil
				}
				q.its = append(q.its, s)
			}
		default: // l="": also selects series without the label.
			q.notIts = append(q.notIts, r.inverseSet(q, m))
		}
	}
	return len(q.its) > 0, nil
}

// eqSet is index.Reader.Postings(name, values...).
func (r *Reader) eqSet(q *query, name string, values ...string) qset {
	s := qset{start: int32(len(q.ents))}
	if ni := r.t.name(name); ni >= 0 {
		for _, v := range values {
			if k := r.t.entry(ni, v); k >= 0 {
				q.ents = append(q.ents, int32(k))
			}
		}
		// Set matches need not be sorted or distinct.
		if len(values) > 1 {
			e := q.ents[s.start:]
			slices.Sort(e)
			q.ents = q.ents[:int(s.start)+len(slices.Compact(e))]
		}
	}
	s.end = int32(len(q.ents))
	return s
}

// matchSet is index.Reader.PostingsForLabelMatching(name, match), and
// PostingsForAllLabelValues(name) if match is nil.
func (r *Reader) matchSet(q *query, name string, match func(string) bool) qset {
	s := qset{start: int32(len(q.ents))}
	if ni := r.t.name(name); ni >= 0 {
		for k := r.t.nameStart[ni]; k < r.t.nameStart[ni+1]; k++ {
			if match == nil || match(r.t.value(int(k))) {
				q.ents = append(q.ents, k)
			}
		}
	}
	s.end = int32(len(q.ents))
	return s
}

func (r *Reader) allSet(q *query, name string) qset { return r.matchSet(q, name, nil) }

// matcherSet is tsdb's postingsForMatcher(m).
func (r *Reader) matcherSet(q *query, m *labels.Matcher) qset {
	if m.Type == labels.MatchEqual {
		return r.eqSet(q, m.Name, m.Value)
	}
	if m.Type == labels.MatchRegexp {
		if sm := m.SetMatches(); len(sm) > 0 {
			return r.eqSet(q, m.Name, sm...)
		}
	}
	return r.matchSet(q, m.Name, m.Matches)
}

// inverseSet is tsdb's inversePostingsForMatcher(m): the values that m does
// not match.
func (r *Reader) inverseSet(q *query, m *labels.Matcher) qset {
	if m.Type == labels.MatchNotRegexp {
		if sm := m.SetMatches(); len(sm) > 0 {
			return r.eqSet(q, m.Name, sm...)
		}
	}
	if m.Type == labels.MatchNotEqual {
		return r.eqSet(q, m.Name, m.Value)
	}
	if m.Value == "" && (m.Type == labels.MatchRegexp || m.Type == labels.MatchEqual) {
		return r.allSet(q, m.Name)
	}
	return r.matchSet(q, m.Name, func(s string) bool { return !m.Matches(s) })
}

// inverseOfNotSet is postingsForMatcher(m.Inverse()) for a != or !~
// matcher m, without building the inverse: = for !=, =~ for !~ (its set
// matches are m's, and it matches what m does not).
func (r *Reader) inverseOfNotSet(q *query, m *labels.Matcher) qset {
	if m.Type == labels.MatchNotEqual {
		return r.eqSet(q, m.Name, m.Value)
	}
	if sm := m.SetMatches(); len(sm) > 0 {
		return r.eqSet(q, m.Name, sm...)
	}
	return r.matchSet(q, m.Name, func(s string) bool { return !m.Matches(s) })
}

// matchingInverseOfNotSet is inversePostingsForMatcher(m.Inverse()) for a
// != or !~ matcher m: the inverse is = or =~, so only its empty-value case
// applies before matching the values that the inverse does not, which are
// those m matches.
func (r *Reader) matchingInverseOfNotSet(q *query, m *labels.Matcher) qset {
	if m.Value == "" {
		return r.allSet(q, m.Name)
	}
	return r.matchSet(q, m.Name, m.Matches)
}

// fetch reads every list the sets need in one ReadRanges call and checks
// them.
func (r *Reader) fetch(ctx context.Context, q *query) error {
	q.need = append(q.need, q.ents...)
	slices.Sort(q.need)
	q.need = slices.Compact(q.need)
	for _, k := range q.need {
		q.ranges = append(q.ranges, Range{Off: int64(r.t.offs[k]), Len: int64(r.t.offs[k+1] - r.t.offs[k])})
	}
	if err := r.rr.ReadRanges(ctx, r.name, q.ranges, &q.batch); err != nil {
		return fmt.Errorf("read postings: %w", err)
	}
	for i, k := range q.need {
		l, err := decodePostings(q.batch.View(i))
		if err != nil {
			return fmt.Errorf("postings of %s=%q: %w", r.t.names[r.nameOf(k)], r.t.value(int(k)), err)
		}
		q.lists = append(q.lists, l)
	}
	return nil
}

// nameOf returns the index in t.names of entry k's name.
func (r *Reader) nameOf(k int32) int {
	i, _ := slices.BinarySearch(r.t.nameStart, k+1)
	return i - 1
}

// list returns the refs of entry k, fetched.
func (q *query) list(k int32) rawList {
	i, _ := slices.BinarySearch(q.need, k)
	return rawList(q.lists[i])
}

// setLen returns the number of refs in s.
func (q *query) setLen(s qset) int {
	n := 0
	for _, k := range q.ents[s.start:s.end] {
		n += q.list(k).Len()
	}
	return n
}

// eval computes the intersection of q.its minus the union of q.notIts, in
// q's scratch space.
func (r *Reader) eval(q *query) []uint32 {
	// Intersect from the smallest set up.
	q.order = q.order[:0]
	for i := range q.its {
		q.order = append(q.order, i)
	}
	slices.SortFunc(q.order, func(i, j int) int { return q.setLen(q.its[i]) - q.setLen(q.its[j]) })
	res := q.materialize(q.its[q.order[0]], q.a[:0])
	for _, i := range q.order[1:] {
		if len(res) == 0 {
			break
		}
		s := q.its[i]
		if s.end-s.start == 1 {
			res = intersect(res, q.list(q.ents[s.start]))
		} else {
			q.b = q.materialize(s, q.b[:0])
			res = intersect(res, u32List(q.b))
		}
	}
	for _, s := range q.notIts {
		if len(res) == 0 {
			break
		}
		if s.end-s.start == 1 {
			res = subtract(res, q.list(q.ents[s.start]))
		} else {
			q.b = q.materialize(s, q.b[:0])
			res = subtract(res, u32List(q.b))
		}
	}
	q.a = res
	return res
}

// materialize appends the sorted union of s's lists to dst.
func (q *query) materialize(s qset, dst []uint32) []uint32 {
	ents := q.ents[s.start:s.end]
	if len(ents) == 1 {
		return q.list(ents[0]).appendTo(dst)
	}
	n, maxRef := 0, uint32(0)
	for _, k := range ents {
		l := q.list(k)
		if l.Len() > 0 {
			n += l.Len()
			maxRef = max(maxRef, l.At(l.Len()-1))
		}
	}
	if n == 0 {
		return dst
	}
	// A bitmap is linear in the refs and the ref range: use it when the
	// range is dense (fewer words than refs). Otherwise sort; either way
	// duplicates go, as in Prometheus's Merge.
	if words := int(maxRef/64) + 1; words <= n {
		q.bits = slices.Grow(q.bits[:0], words)[:words]
		clear(q.bits)
		for _, k := range ents {
			l := q.list(k)
			for i := range l.Len() {
				// A list out of order (an index whose checksums are right
				// but whose lists are not sorted) could hold a ref past the
				// last one: drop it rather than index out of range.
				if ref := l.At(i); int(ref/64) < len(q.bits) {
					q.bits[ref/64] |= 1 << (ref % 64)
				}
			}
		}
		return appendBits(dst, q.bits)
	}
	start := len(dst)
	dst = slices.Grow(dst, n)
	for _, k := range ents {
		dst = q.list(k).appendTo(dst)
	}
	slices.Sort(dst[start:])
	return dst[:start+len(slices.Compact(dst[start:]))]
}
