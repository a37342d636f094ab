package exemplars

import (
	"context"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// MaxSize is the largest number of exemplars a [Ring] holds: slots are
// numbered with 32-bit integers. [New] and [Ring.Resize] take larger sizes
// as MaxSize (some 100 GB of slots).
const MaxSize = math.MaxInt32

// none marks the end of a series' list, as upstream's noExemplar.
const none = -1

// Options are the optional settings of a [Ring]. The zero value means no
// out-of-order window. [New] copies them and keeps no reference. An
// Options is a plain value, not safe for concurrent use: goroutines may
// read one together, but not while another writes it.
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
// The behaviour is that of Prometheus's storage as of v0.316.0. Against
// the storage of the older releases that this module supports, a Ring
// differs in two ways, which TestOlderPrometheus shows: v0.309.1 to
// v0.315.1 take an exemplar whose label names repeat, which a Ring
// rejects with an error wrapping [ErrInvalidExemplar]; and v0.309.1 has no
// out-of-order window, so it rejects every exemplar before the newest of
// its series, as a Ring with a window of zero does, where a Ring with a
// window adds it. All else, Resize included, is the same at every
// supported release.
//
// Memory: 48 bytes per exemplar in the default stringlabels build (56
// under slicelabels and dedupelabels): a 32-byte slot holding its value,
// timestamp and flags and the links of its series' list, and beside it,
// in a parallel array, its labels header. The slots hold no pointers, so
// the garbage collector never reads them: of a ring, it reads only the
// labels, a third of its memory in the default build. A grow allocates
// the slots it adds and their labels, not a new ring (see [Ring.Resize]).
// Per series, a 48-byte entry (56) and 24 to 48 bytes of index (16 to
// 32): two to four 8-byte slots of a table kept at most half full, sized
// for the larger of size/16 series and the most series the ring has held
// at once (it is released only by a resize to zero), and in the default
// build as many 4-byte hints, which find a series by its labels' address
// (see [Ring.AddExemplar]).
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
// sync.RWMutex; a Ring has a Mutex, which costs an add less to lock and
// unlock than an RWMutex's write lock, and costs the short reads no more
// than its read lock: BenchmarkRingLock measures the three, and
// BENCHMARKS.md has the figures. A Ring must not be copied.
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
	free    uint32 // the first unused entry of series, chained by link; guarded by mu
	nseries int    // series with exemplars; guarded by mu
	index   index  // the first series with each hash; guarded by mu
	orders  int    // series with an order; guarded by mu

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

// Interfaces that a Prometheus fork swaps the ring in behind. The ring
// also implements tsdb.ExemplarStorage, which compat_test.go asserts:
// this package does not import tsdb, which compiles hundreds of packages
// that a ring has no use for (TestImports).
var (
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
		index:  makeIndex(n / 16),
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

// SetOutOfOrderTimeWindow sets [Options.OutOfOrderTimeWindow], in
// milliseconds. Unlike [New], it keeps a negative window as it is, as
// Prometheus's storage does (a negative window accepts fewer exemplars
// than zero).
func (r *Ring) SetOutOfOrderTimeWindow(d int64) {
	r.mu.Lock()
	r.window = d
	r.mu.Unlock()
}

// AddExemplar adds e to the series lset, as [Ring.AddExemplarHash] does
// with lset.Hash(). It computes lset.Hash() only when it does not find the
// series by lset itself: in the default (stringlabels) build, a series
// added with a labels.Labels is found again, while the ring holds it, by
// the address of that value's data, as when a Prometheus Head passes
// each series' own labels; then lset is not hashed.
func (r *Ring) AddExemplar(lset labels.Labels, e exemplar.Exemplar) error {
	// AddExemplarHash's body rather than a call of it, which does not
	// inline: this is the add of every Prometheus caller. The first hint
	// is tried here, inlined, and find, which does not inline, only when it
	// misses. The hash, when find computes it, is computed under the lock.
	r.mu.Lock()
	var id uint32
	var hash uint64
	if key, ok := identity(lset); ok {
		id = r.index.hinted(r.series, key, lset, 0)
	}
	if id == 0 {
		id, hash = r.find(lset)
	}
	err := r.add(id, hash, lset, e)
	r.mu.Unlock()
	return err
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
// when the ring's size is zero, an error wrapping [ErrInvalidExemplar]
// (which errors.Is also matches with tsdb.ErrInvalidExemplar) when e's
// label names repeat, storage.ErrExemplarLabelLength when its
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
	err := r.add(r.lookup(hash, lset), hash, lset, e)
	r.mu.Unlock()
	return err
}

// ValidateExemplar returns the error [Ring.AddExemplar] would return for
// e, or storage.ErrDuplicateExemplar when it would ignore e as a
// duplicate of its series' newest exemplar, as Prometheus's
// ValidateExemplar does. (An exemplar out of order at the timestamp of a
// stored one, which AddExemplar also ignores, validates as nil, as it
// does in Prometheus.) It computes lset.Hash() at most once, as
// [Ring.AddExemplar] does.
func (r *Ring) ValidateExemplar(lset labels.Labels, e exemplar.Exemplar) error {
	r.mu.Lock()
	id, _ := r.find(lset)
	err := r.validate(id, e, false)
	r.mu.Unlock()
	return err
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

// find returns the id of the series lset, or 0, and lset.Hash(), or 0
// when it finds the series by the address of lset's data (see
// index.hints) without hashing. Called with mu held.
func (r *Ring) find(lset labels.Labels) (uint32, uint64) {
	key, ok := identity(lset)
	if ok {
		for way := range uint64(2) {
			if id := r.index.hinted(r.series, key, lset, way); id != 0 {
				return id, 0
			}
		}
	}
	hash := lset.Hash()
	id := r.lookup(hash, lset)
	if ok && id != 0 {
		r.index.hint(key, id)
	}
	return id, hash
}

// lookup returns the id of the series lset, or 0. Called with mu held.
func (r *Ring) lookup(hash uint64, lset labels.Labels) uint32 {
	for id := r.index.head(r.series, hash); id != 0; id = r.series[id].chain() {
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
	return byteSize(ls) <= exemplar.ExemplarMaxLabelSetLength || runesShortEnough(ls)
}

// runesShortEnough is labelsShortEnough's count by character, apart so
// that the test of the length inlines.
func runesShortEnough(ls labels.Labels) bool {
	n := 0
	ls.Range(func(l labels.Label) { n += utf8.RuneCountInString(l.Name) + utf8.RuneCountInString(l.Value) })
	return n <= exemplar.ExemplarMaxLabelSetLength
}

// add is AddExemplarHash under the write lock, for series id, as lookup
// or find returns it (0 for a new series; hash is used only then), step by
// step Prometheus's AddExemplar, so that the same exemplars are kept in
// the same order.
func (r *Ring) add(id uint32, hash uint64, lset labels.Labels, e exemplar.Exemplar) error {
	if r.size == 0 {
		return storage.ErrExemplarsDisabled
	}
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
		// The newest first: an exemplar in order, the usual one, then
		// reads no other slot.
		s := &r.series[id]
		ooo = e.Ts < r.at(s.newest).ts && e.Ts >= r.at(s.oldest).ts
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
	sl := r.at(pos)
	if old := sl.series; old != 0 {
		if r.unlink(sl, pos) {
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

	// Slot pos is on no list now: the links are set around it first, and
	// the slot is written once, at the end.
	prev, next := int32(none), int32(none)
	s := &r.series[id]
	s.n++
	switch {
	case !exists:
		s.oldest, s.newest = pos, pos
		s.link &^= unsorted
		r.dropOrder(s)
	case e.Ts >= r.at(s.newest).ts:
		r.at(s.newest).next = pos
		prev = s.newest
		s.newest = pos
		if s.order != nil {
			s.order.insert(s.order.len(), pos)
		}
	case e.Ts < r.at(s.oldest).ts:
		r.at(s.oldest).prev = pos
		next = s.oldest
		s.oldest = pos
		s.link |= unsorted
		if s.order != nil {
			s.order.insert(0, pos)
		}
	default:
		after := r.at(ins).next
		prev, next = ins, after
		r.at(ins).next = pos
		if after != none {
			r.at(after).prev = pos
		}
		s.link |= unsorted
		if s.order != nil {
			s.order.insert(r.upper(s.order, e.Ts), pos)
		}
	}
	// Field by field: assigning a slot literal builds it on the stack with
	// narrow stores and copies it with wide loads, which wait for those
	// stores (BenchmarkAddExemplarSteady's profile has them).
	sl.value, sl.ts, sl.prev, sl.next, sl.series, sl.hasTs = e.Value, e.Ts, prev, next, id, e.HasTs
	*r.labelsAt(pos) = e.Labels

	r.next++
	if int(r.next) == r.size {
		r.next = 0
	}
	r.appended++
	return nil
}

// unlink takes slot pos, sl, off its series' list and empties it (but leaves
// its contents, which the caller overwrites or clears), as Prometheus's
// removeExemplar. It reports whether the series has no exemplar left.
// Called with mu.
func (r *Ring) unlink(sl *slot, pos int32) bool {
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
	if r.series == nil { // released by a resize to zero
		r.series = make([]seriesEntry, 1, 16)
	}
	id := r.free
	if id != 0 {
		r.free = r.series[id].link
	} else {
		id = uint32(len(r.series))
		r.series = append(r.series, seriesEntry{})
	}
	r.series[id] = seriesEntry{lset: lset, hash: hash, oldest: none, newest: none, link: r.index.head(r.series, hash)}
	r.index.set(r.series, hash, id)
	if key, ok := identity(lset); ok {
		r.index.hint(key, id)
	}
	r.nseries++
	return id
}

// removeSeries drops series id, which has no exemplar left, from the
// index. Called with mu.
func (r *Ring) removeSeries(id uint32) {
	s := &r.series[id]
	if head := r.index.head(r.series, s.hash); head == id {
		if s.chain() != 0 {
			r.index.set(r.series, s.hash, s.chain())
		} else {
			r.index.remove(r.series, s.hash)
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
