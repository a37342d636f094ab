package exemplars

import (
	"context"
	"math"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// MaxSize is the largest number of exemplars a [Ring] holds: slots are
// numbered with 32-bit integers. [New] and [Ring.Resize] take larger sizes
// as MaxSize (some 100 GB of slots).
const MaxSize = math.MaxInt32

// none marks the end of a series' list, as upstream's noExemplar.
const none = -1

// Options are the optional settings of a [Ring]. The zero value means no
// out-of-order window.
type Options struct {
	// OutOfOrderTimeWindow is how far, in milliseconds, an exemplar may lie
	// before the newest exemplar of its series and still be added, as in
	// tsdb.NewCircularExemplarStorage. Zero or negative means that only
	// exemplars at or after the newest one of their series are accepted
	// (and, at the same timestamp, only those that sort after it).
	OutOfOrderTimeWindow int64
}

// Ring is a fixed-size, in-memory exemplar store with the observable
// behaviour of Prometheus's tsdb.CircularExemplarStorage: the same
// exemplars are accepted, rejected (with the same errors) and evicted
// (oldest ingested first), and [Ring.Select], [Ring.IterateExemplars] and
// [Ring.Resize] return the same results. It implements
// storage.ExemplarQueryable, storage.ExemplarQuerier and
// tsdb.ExemplarStorage, and adds [Ring.AddExemplarHash] and
// [Ring.ValidateExemplarHash], which take the hash of the series' labels
// that the caller already has.
//
// Memory: 48 bytes per exemplar in the default stringlabels build (56
// under slicelabels and dedupelabels): a 32-byte slot holding its value,
// timestamp and flags and the links of its series' list, and beside it,
// in a parallel array, its labels header. The slots hold no pointers, so
// the garbage collector never reads them: of a ring, it reads only the
// labels, a third of its memory in the default build. A grow allocates
// the slots it adds and their labels, not a new ring (see [Ring.Resize]).
// Per series, a 48-byte entry (56) and a map slot keyed by the 8-byte
// hash.
// The labels themselves are kept by reference, never copied. A series that
// takes exemplars far out of order also keeps, while it has more than a few
// dozen exemplars, the positions of its exemplars in time order, 4 bytes
// each plus room to grow, so that finding where one goes is a binary
// search.
//
// A Ring is safe for concurrent use by multiple goroutines. One
// sync.Mutex guards it, held by each add, validation and resize for its
// duration; [Ring.Select] holds it three times, each for one pass (to list
// the series, to count the exemplars its matchers select, to copy them),
// and evaluates matchers, allocates, sorts and builds its result without
// it; [Ring.IterateExemplars] holds it while it calls its function, as
// Prometheus's holds its read lock. Prometheus's storage has a
// sync.RWMutex, but on the 2-core machines this was measured on a write
// lock and unlock cost 47-75 ns against 30 for a Mutex, and a read lock
// 25-30: most of the cost of an add, and no saving for the short reads.
// A Ring must not be copied.
type Ring struct {
	mu sync.Mutex

	// segs hold the ring's size slots, one segment after the other, in
	// ingestion order from next: first the empty slots, then the
	// exemplars from the oldest ingested to the newest. New makes one
	// segment, and each grow adds one of the slots it adds, up to
	// maxSegs. first and firstLabels are segs[0], for the fast paths of
	// at and labelsAt. Slots and labels beyond the length of a segment
	// and up to its capacity, kept after a shrink, are zero. Guarded by
	// mu.
	first       []slot
	firstLabels []labels.Labels
	segs        []segment // in segBuf
	segBuf      [maxSegs]segment
	size        int   // the number of slots; guarded by mu
	next        int32 // the slot the next exemplar goes to; guarded by mu
	live        int   // non-empty slots; guarded by mu

	window int64 // the out-of-order window in milliseconds; guarded by mu

	// series holds the series that have exemplars, by id; series[0] is
	// unused, so that id 0 means none. Guarded by mu.
	series  []seriesEntry
	free    uint32            // the first unused entry of series, chained by link; guarded by mu
	nseries int               // series with exemplars; guarded by mu
	index   map[uint64]uint32 // the first series with each hash; guarded by mu
	orders  int               // series with an order; guarded by mu

	appended   uint64 // exemplars added; guarded by mu
	outOfOrder uint64 // adds rejected as out of order; guarded by mu

	scratch sync.Pool // of *selectScratch
}

// slot is one exemplar of the ring but for its labels, which its segment
// keeps beside it, threaded on its series' list, which is in time order
// (ties in the order of arrival). A slot holds no pointers.
type slot struct {
	value  float64
	ts     int64
	prev   int32  // the slot before in the series' list, or none
	next   int32  // the slot after in the series' list, or none
	series uint32 // the id of the series, 0 for an empty slot
	hasTs  bool
}

// seriesEntry is a series that has exemplars in the ring.
type seriesEntry struct {
	lset   labels.Labels // as first added; the zero value for an unused entry
	hash   uint64
	oldest int32 // the first slot of the list (in time), none for an unused entry
	newest int32 // the last slot of the list
	// link holds, in its low 31 bits, the next series with the same hash,
	// or for an unused entry the next unused one; its top bit, unsorted, is
	// set once an exemplar went anywhere but after the newest, so that the
	// list may no longer be in the order the exemplars arrived in.
	link  uint32
	n     int32  // the length of the list
	order *order // nil, or the series' slots in list order
}

// unsorted is the top bit of seriesEntry.link.
const unsorted = 1 << 31

// chain returns the next series with the same hash as s, or 0.
func (s *seriesEntry) chain() uint32 { return s.link &^ unsorted }

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

// exemplar returns the exemplar that s holds, whose labels are l.
func (s *slot) exemplar(l labels.Labels) exemplar.Exemplar {
	return exemplar.Exemplar{Labels: l, Value: s.value, Ts: s.ts, HasTs: s.hasTs}
}

// copyTo sets *e to the exemplar that s holds, whose labels are l, field
// by field: while the garbage collector marks, that costs a write barrier
// for the labels only, where assigning the whole struct costs a bulk
// barrier over its memory.
func (s *slot) copyTo(e *exemplar.Exemplar, l labels.Labels) {
	e.Labels = l
	e.Value = s.value
	e.Ts = s.ts
	e.HasTs = s.hasTs
}

// Interfaces that a Prometheus fork swaps the ring in behind.
var (
	_ tsdb.ExemplarStorage           = (*Ring)(nil)
	_ storage.ExemplarQueryable      = (*Ring)(nil)
	_ storage.ExemplarQuerier        = (*Ring)(nil)
	_ interface{ Resize(int64) int } = (*Ring)(nil)
)

// New returns a [Ring] that holds up to size exemplars, as
// tsdb.NewCircularExemplarStorage(size, metrics, opts.OutOfOrderTimeWindow)
// does. A size of zero or less makes a ring that rejects every exemplar
// with storage.ErrExemplarsDisabled until it is resized; a size above
// [MaxSize] is taken as MaxSize. New allocates the size's slots at once.
func New(size int64, opts Options) *Ring {
	n := clampSize(size)
	r := &Ring{
		size:   n,
		window: max(opts.OutOfOrderTimeWindow, 0),
		index:  make(map[uint64]uint32, n/16),
		series: make([]seriesEntry, 1, 1+n/16),
	}
	if n > 0 {
		r.segBuf[0] = newSegment(n)
		r.segs = r.segBuf[:1]
		r.first, r.firstLabels = r.segs[0].slots, r.segs[0].labels
	}
	return r
}

// clampSize bounds a size to [0, MaxSize].
func clampSize(size int64) int {
	return int(min(max(size, 0), MaxSize))
}

// ExemplarQuerier returns the ring itself, as Prometheus's storage does;
// it never fails.
func (r *Ring) ExemplarQuerier(context.Context) (storage.ExemplarQuerier, error) {
	return r, nil
}

// Querier is [Ring.ExemplarQuerier], under the name Prometheus's storage
// also has.
func (r *Ring) Querier(ctx context.Context) (storage.ExemplarQuerier, error) {
	return r, nil
}

// ApplyConfig resizes the ring to cfg.StorageConfig.ExemplarsConfig.MaxExemplars,
// as Prometheus's storage does. It never fails.
func (r *Ring) ApplyConfig(cfg *config.Config) error {
	r.Resize(cfg.StorageConfig.ExemplarsConfig.MaxExemplars)
	return nil
}

// SetOutOfOrderTimeWindow sets [Options.OutOfOrderTimeWindow], in
// milliseconds. Unlike [New], it keeps a negative window as it is, as
// Prometheus's storage does (a negative window accepts fewer exemplars
// than zero).
func (r *Ring) SetOutOfOrderTimeWindow(d int64) {
	r.mu.Lock()
	r.window = d
	r.mu.Unlock()
}

// AddExemplar adds e to the series lset, computing lset.Hash() once; see
// [Ring.AddExemplarHash].
func (r *Ring) AddExemplar(lset labels.Labels, e exemplar.Exemplar) error {
	return r.AddExemplarHash(lset.Hash(), lset, e)
}

// AddExemplarHash adds e to the series lset, whose hash is hash: the value
// of lset.Hash(), which the caller has computed (for instance with the
// labels package of this module), or any other 64-bit hash of lset that
// the caller uses for every call on this ring, the plain methods included
// (they use lset.Hash()). Series whose hashes collide are told apart by
// their labels.
//
// It returns what Prometheus's AddExemplar returns: nil when e is added or
// is a duplicate (equal to its series' newest exemplar, or, out of order,
// at the timestamp of an exemplar it already has), storage.ErrExemplarsDisabled
// when the ring's size is zero, an error wrapping tsdb.ErrInvalidExemplar
// when e's label names repeat, storage.ErrExemplarLabelLength when its
// labels are longer than exemplar.ExemplarMaxLabelSetLength UTF-8
// characters, and storage.ErrOutOfOrderExemplar when it is before the
// newest exemplar of its series by more than the out-of-order window, or
// at its timestamp with a smaller value, or with the same value and
// exemplar labels of a smaller hash. (That last rule, Prometheus's, also
// rejects an exemplar re-sent with an equal timestamp and a smaller value
// than one sent after it; see TestUpstreamSameTimestampQuirk.)
//
// When the ring is full, the oldest exemplar ingested is dropped, whatever
// its series. The ring keeps lset and e.Labels by reference; they must not
// be modified afterwards. AddExemplarHash makes no allocation, except
// when the index or the series table grow for a new series, or when a
// series taking exemplars far out of order builds or grows its order.
func (r *Ring) AddExemplarHash(hash uint64, lset labels.Labels, e exemplar.Exemplar) error {
	r.mu.Lock()
	err := r.add(hash, lset, e)
	r.mu.Unlock()
	return err
}

// ValidateExemplar returns the error [Ring.AddExemplar] would return for
// e, or storage.ErrDuplicateExemplar when it would ignore e as a
// duplicate of its series' newest exemplar, as Prometheus's
// ValidateExemplar does. (An exemplar out of order at the timestamp of a
// stored one, which AddExemplar also ignores, validates as nil, as it
// does in Prometheus.) It computes lset.Hash() once.
func (r *Ring) ValidateExemplar(lset labels.Labels, e exemplar.Exemplar) error {
	return r.ValidateExemplarHash(lset.Hash(), lset, e)
}

// ValidateExemplarHash is [Ring.ValidateExemplar] for a series whose hash
// the caller has, with the contract of [Ring.AddExemplarHash]. It takes
// the ring's lock and makes no allocation, except for the error of
// repeated label names.
func (r *Ring) ValidateExemplarHash(hash uint64, lset labels.Labels, e exemplar.Exemplar) error {
	r.mu.Lock()
	err := r.validate(r.lookup(hash, lset), e, false)
	r.mu.Unlock()
	return err
}

// lookup returns the id of the series lset, or 0. Called with mu held.
func (r *Ring) lookup(hash uint64, lset labels.Labels) uint32 {
	for id := r.index[hash]; id != 0; id = r.series[id].chain() {
		if labels.Equal(r.series[id].lset, lset) {
			return id
		}
	}
	return 0
}

// validate is Prometheus's validateExemplar, for series id (0 for a new
// series). appended says whether an add is validating, which counts an
// out-of-order exemplar. Called with mu held.
func (r *Ring) validate(id uint32, e exemplar.Exemplar, appended bool) error {
	if r.size == 0 {
		return storage.ErrExemplarsDisabled
	}
	if name, dup := e.Labels.HasDuplicateLabelNames(); dup {
		return errDuplicateLabelName(name)
	}
	if !labelsShortEnough(e.Labels) {
		return storage.ErrExemplarLabelLength
	}
	if id == 0 {
		return nil
	}
	pos := r.series[id].newest
	newest := r.at(pos)
	// exemplar.Exemplar.Equals, its cheapest tests first.
	if newest.value == e.Value && (newest.ts == e.Ts || !(e.HasTs || newest.hasTs)) && labels.Equal(*r.labelsAt(pos), e.Labels) {
		return storage.ErrDuplicateExemplar
	}
	// The same expression as Prometheus's, overflow included.
	if (e.Ts < newest.ts && e.Ts <= newest.ts-r.window) ||
		(e.Ts == newest.ts && e.Value < newest.value) ||
		(e.Ts == newest.ts && e.Value == newest.value && e.Labels.Hash() < r.labelsAt(pos).Hash()) {
		if appended {
			r.outOfOrder++
		}
		return storage.ErrOutOfOrderExemplar
	}
	return nil
}

// labelsShortEnough reports whether the names and values of ls have at
// most exemplar.ExemplarMaxLabelSetLength UTF-8 characters together. A
// string has no more characters than bytes, so only label sets of more
// bytes than that are counted by character.
func labelsShortEnough(ls labels.Labels) bool {
	if byteSize(ls) <= exemplar.ExemplarMaxLabelSetLength {
		return true
	}
	n := 0
	ls.Range(func(l labels.Label) { n += utf8.RuneCountInString(l.Name) + utf8.RuneCountInString(l.Value) })
	return n <= exemplar.ExemplarMaxLabelSetLength
}

// add is AddExemplarHash under the write lock, step by step Prometheus's
// AddExemplar, so that the same exemplars are kept in the same order.
func (r *Ring) add(hash uint64, lset labels.Labels, e exemplar.Exemplar) error {
	if r.size == 0 {
		return storage.ErrExemplarsDisabled
	}
	id := r.lookup(hash, lset)
	if err := r.validate(id, e, true); err != nil {
		if err == storage.ErrDuplicateExemplar {
			return nil
		}
		return err
	}

	// An exemplar out of order is a duplicate if its series has one at its
	// timestamp, as Prometheus assumes without comparing values or labels.
	exists := id != 0
	ins := int32(none)
	ooo := false
	if exists {
		s := &r.series[id]
		ooo = e.Ts >= r.at(s.oldest).ts && e.Ts < r.at(s.newest).ts
		if ooo {
			ins = r.before(id, e.Ts)
			if r.at(ins).ts == e.Ts {
				return nil
			}
		}
	} else {
		id = r.newSeries(hash, lset)
	}

	pos := r.next
	if old := r.at(pos).series; old != 0 {
		if r.unlink(pos) {
			if old == id {
				exists = false // the series keeps its entry and starts a new list
			} else {
				r.removeSeries(old)
			}
		} else if ooo && ins == pos && old == id {
			// The exemplar e goes after was the one dropped.
			ins = r.before(id, e.Ts)
		}
	} else {
		r.live++
	}

	sl := r.at(pos)
	*sl = slot{value: e.Value, ts: e.Ts, series: id, hasTs: e.HasTs}
	*r.labelsAt(pos) = e.Labels
	s := &r.series[id]
	s.n++
	switch {
	case !exists:
		s.oldest, s.newest = pos, pos
		sl.prev, sl.next = none, none
		s.link &^= unsorted
		r.dropOrder(s)
	case e.Ts >= r.at(s.newest).ts:
		r.at(s.newest).next = pos
		sl.prev, sl.next = s.newest, none
		s.newest = pos
		if s.order != nil {
			s.order.insert(s.order.len(), pos)
		}
	case e.Ts < r.at(s.oldest).ts:
		r.at(s.oldest).prev = pos
		sl.prev, sl.next = none, s.oldest
		s.oldest = pos
		s.link |= unsorted
		if s.order != nil {
			s.order.insert(0, pos)
		}
	default:
		after := r.at(ins).next
		sl.prev, sl.next = ins, after
		r.at(ins).next = pos
		if after != none {
			r.at(after).prev = pos
		}
		s.link |= unsorted
		if s.order != nil {
			s.order.insert(r.upper(s.order, e.Ts), pos)
		}
	}

	r.next++
	if int(r.next) == r.size {
		r.next = 0
	}
	r.appended++
	return nil
}

// walkLimit is how many exemplars before finding its place an exemplar
// out of order walks back over from its series' newest, as Prometheus's
// storage does, before its series builds an order to search instead. A
// late exemplar usually lies close to the newest, and then the walk costs
// less than keeping the order; 64 slots are a few hundred nanoseconds.
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

// unlink takes slot pos off its series' list and empties it (but leaves
// its contents, which the caller overwrites or clears), as Prometheus's
// removeExemplar. It reports whether the series has no exemplar left.
// Called with mu.
func (r *Ring) unlink(pos int32) bool {
	sl := r.at(pos)
	s := &r.series[sl.series]
	if s.order != nil {
		r.orderRemove(s, pos)
	}
	if sl.prev != none {
		r.at(sl.prev).next = sl.next
	} else {
		s.oldest = sl.next
	}
	if sl.next != none {
		r.at(sl.next).prev = sl.prev
	} else {
		s.newest = sl.prev
	}
	sl.series = 0
	s.n--
	return s.oldest == none && s.newest == none
}

// newSeries adds a series without exemplars and returns its id. Called
// with mu.
func (r *Ring) newSeries(hash uint64, lset labels.Labels) uint32 {
	if r.index == nil { // released by a resize to zero
		r.index = make(map[uint64]uint32)
		r.series = make([]seriesEntry, 1, 16)
	}
	id := r.free
	if id != 0 {
		r.free = r.series[id].link
	} else {
		id = uint32(len(r.series))
		r.series = append(r.series, seriesEntry{})
	}
	r.series[id] = seriesEntry{lset: lset, hash: hash, oldest: none, newest: none, link: r.index[hash]}
	r.index[hash] = id
	r.nseries++
	return id
}

// removeSeries drops series id, which has no exemplar left, from the
// index. Called with mu.
func (r *Ring) removeSeries(id uint32) {
	s := &r.series[id]
	if head := r.index[s.hash]; head == id {
		if s.chain() != 0 {
			r.index[s.hash] = s.chain()
		} else {
			delete(r.index, s.hash)
		}
	} else {
		p := head
		for r.series[p].chain() != id {
			p = r.series[p].chain()
		}
		r.series[p].link = r.series[p].link&unsorted | s.chain()
	}
	r.dropOrder(s)
	*s = seriesEntry{oldest: none, newest: none, link: r.free}
	r.free = id
	r.nseries--
}

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
	exs = r.copySelected(exs, cands, sc, start, end)
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
// to slot. In BenchmarkSelectExemplars, which selects a tenth of the ring
// in two cases and all of it in another, walking a tenth takes 300 µs
// (regexp-10pct) and 675 µs (all-recent) against 450 and 765 µs for a
// pass; copying all of it (all) took 11 ms by walks before there was a
// pass, and takes about 5 ms by one. 4 was not tuned further.
const scanShare = 4

// copySelected copies into exs the exemplars from start to end of the
// candidates that countIfSame counted, in the order of cands, and sets
// their counts to what it copied. If the ring changed since they were
// counted so that they no longer fit, it appends to exs instead, which
// then grows. Called with mu held.
func (r *Ring) copySelected(exs []exemplar.Exemplar, cands []candidate, sc *selectScratch, start, end int64) []exemplar.Exemplar {
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
	scan := sum*scanShare >= r.live
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
			if r.unlink(i) {
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
		r.series, r.free, r.index = nil, 0, nil
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

// Stats are the counts of a [Ring], as [Ring.UpdateStats] reports them.
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
