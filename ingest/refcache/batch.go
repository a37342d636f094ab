package refcache

import (
	"cmp"
	"slices"

	"github.com/prometheus/prometheus/storage"
)

// lookupChunk is how many series a batch lookup resolves together: more
// misses than a core keeps in flight, so that none of its passes waits for
// one at a time, and few enough that its state stays on the stack.
const lookupChunk = 64

// LookupBatch resolves series[i] to hs[i], as [AppenderV2.Lookup] does, and
// sets errs[i] to the error Lookup would return, nil for a series resolved,
// for every i in request order. The series must stay as they are (their
// pairs unchanged) until LookupBatch returns; it keeps none of them.
//
// The handles, errors and [AppenderStats] are those of Lookup called for
// each series in turn; what LookupBatch changes is the order of its memory
// reads. A series that misses the guess of the one before costs a chain of
// dependent misses of the CPU's caches (an index slot, the entry, the
// labels it compares, all in memory that a shuffled request reads in no
// order); LookupBatch resolves the series whose guesses fail in passes over
// up to 64 of them at a time, so that their misses overlap instead of
// waiting for one another. When the guesses hold, as for a sender that
// repeats its order, it reads what Lookup reads, and like Lookup hashes
// only the series whose guess fails. The caller then appends
// through the handles, in request order as Prometheus does, or, having
// looked up the whole request, in the order [AppenderV2.AppendOrder]
// gives, which keeps each series' samples in theirs and gives the same
// head.
//
// One difference with Lookup remains, in what the cache learns: the guess
// of a series after one that is new to the cache (appended with ref 0) is
// learnt by the next request's lookups rather than by this request's
// append.
//
// LookupBatch panics if hs or errs is shorter than series. It makes no
// allocation for series in the cache, nor for those that the wrapped
// appender finds by storage.GetRef when they can build scratch labels; for
// a new series it builds its labels once, and for one with an error it
// allocates the error.
func (a *AppenderV2) LookupBatch(series []SeriesLabels, hs []Handle, errs []error) {
	a.lookupBatch(series, hs, errs)
}

// LookupBatch resolves series in a batch; see [AppenderV2.LookupBatch].
func (a *Appender) LookupBatch(series []SeriesLabels, hs []Handle, errs []error) {
	a.lookupBatch(series, hs, errs)
}

func (r *resolver) lookupBatch(series []SeriesLabels, hs []Handle, errs []error) {
	if len(hs) < len(series) || len(errs) < len(series) {
		panic("refcache: LookupBatch with fewer handles or errors than series")
	}
	for len(series) > 0 {
		n := min(len(series), lookupChunk)
		r.lookupChunk(series[:n], hs[:n], errs[:n])
		series, hs, errs = series[n:], hs[n:], errs[n:]
	}
}

// lookupChunk is lookupBatch for at most lookupChunk series. It resolves
// them in request order as lookup does (resolver.resolve), following the
// guesses without hashing the series; a series whose guess fails is looked
// up at once, by its hash, and so is the one after it, whose entry, if it
// is the failed one's guess, takes the chunk back to following guesses (a
// sender's order cut and joined again). Once two guesses fail in a row, or
// when the chunk starts with the guess of the series before it failed, the
// order is not the last request's, and the rest of the chunk goes to a
// batched probe: for every series left, its hash and home slot, then its
// candidate entry, then the entry's labels compared, each pass over all of
// them before the next, so that the misses of one pass are in flight
// together. Nothing in those passes writes to shared memory or takes a
// lock, which would fence the reads. A last pass, in request order, does
// what lookup does with what the probe found: stats, guesses learnt,
// last-seen times, and the series not in the cache.
func (r *resolver) lookupChunk(series []SeriesLabels, hs []Handle, errs []error) {
	first := len(series) // the first series left to the probe
	failed := false      // whether the guess of the series before failed, in this chunk
	for i, s := range series {
		if err := s.Err(); err != nil {
			hs[i], errs[i] = Handle{}, invalidSeries(err)
			continue
		}
		errs[i] = nil
		if !r.guessing && !failed {
			first = i
			break
		}
		guessing := r.guessing
		guessed := r.resolve(s, &hs[i])
		hs[i].batch = true
		if !guessed && !guessing {
			first = i + 1
			break
		}
		failed = !guessed
	}
	if first >= len(series) {
		return
	}
	r.probe(series[first:], hs[first:], errs[first:])
}

// probe resolves series (at most lookupChunk) in the batched passes of
// lookupChunk.
func (r *resolver) probe(series []SeriesLabels, hs []Handle, errs []error) {
	var (
		ents  [lookupChunk]*cacheEntry
		pend  [lookupChunk]uint8 // indexes of the series to probe
		tabs  [lookupChunk]*cacheSlots
		slot  [lookupChunk]int
		np    int
		touch uint64 // what the reads load, so that they are made
	)
	// Hashes, and home slots.
	for i, s := range series {
		if err := s.Err(); err != nil {
			hs[i], errs[i] = Handle{}, invalidSeries(err)
			continue
		}
		errs[i] = nil
		hash := s.Hash()
		hs[i] = Handle{hash: hash, batch: true}
		tb := r.tab.stripe(hash).slots.Load()
		if tb == nil {
			continue
		}
		pend[np], tabs[np], slot[np] = uint8(i), tb, tb.home(hash)
		touch += tb.slots[slot[np]].hash.Load()
		np++
	}
	// Candidate entries: the first of the hash in the probe sequence.
	for k := range np {
		var e *cacheEntry
		if slot[k], e = tabs[k].candidate(hs[pend[k]].hash); e != nil {
			ents[k] = e
			touch += e.ref.Load()
		}
	}
	// Labels, compared: a colliding hash goes on along the probe sequence.
	for k := range np {
		e := ents[k]
		if e == nil {
			continue
		}
		if i := pend[k]; !series[i].Equal(e.lset) {
			mask := len(tabs[k].slots) - 1
			ents[k] = tabs[k].findFrom((slot[k]+1)&mask, hs[i].hash, series[i])
		}
	}
	r.touch = touch
	// In request order, what lookup does with each result.
	k := 0
	for i, s := range series {
		if errs[i] != nil {
			continue
		}
		var e *cacheEntry
		if k < np && int(pend[k]) == i {
			e = ents[k]
			k++
		}
		hash := hs[i].hash
		var ref uint64
		if e != nil {
			ref = e.ref.Load()
		}
		if ref == 0 { // not in the cache, or purged since it was found
			r.guessing = false
			hs[i] = r.miss(s, hash)
			hs[i].batch = true
			continue
		}
		// Lookup would have found e by the guess, or by the index and
		// then seen that it is the guess.
		guessed := r.prev != nil && r.prev.follows(e)
		r.hit(&hs[i], hash, ref, e, guessed)
		hs[i].batch = true
	}
}

// hit makes h the handle of e, found for hash with ref, and e the entry
// resolved last.
func (r *resolver) hit(h *Handle, hash, ref uint64, e *cacheEntry, guessed bool) {
	if e.lastSeen.Load() < r.now {
		e.lastSeen.Store(r.now)
	}
	r.stats.CacheHits++
	if guessed {
		r.stats.Guessed++
	}
	// The first series has no guess to fail: the guesses after it are
	// tried first.
	r.prev, r.guessing = e, guessed || r.prev == nil
	*h = Handle{hash: hash, ref: storage.SeriesRef(ref), lset: e.lset, entry: e}
}

// AppendOrder returns the indices of hs, handles that [AppenderV2.LookupBatch]
// or [AppenderV2.Lookup] made, in the order to append their samples in so
// that the head reads its series in the order it allocated them: the
// handles with a ref by ascending ref, handles of one ref in their order in
// hs, then the handles without a ref (series new to the TSDB, and the
// zero Handle of a lookup that failed, which the caller skips) in their
// order in hs. A request in an order of its own (not the one its series
// were created in) otherwise makes the head's Append by ref and its Commit
// each read every series from memory in no order (BenchmarkAppend,
// order=shuffled, impl=ingestkit-sorted).
//
// Appending in that order gives the head what appending in request order
// gives it: the head accepts or rejects a sample by the state of its series
// alone, so keeping each series' samples in their order keeps every
// result, and the caller reports the errors of the appends in request
// order by index. What differs is the order of the samples in the WAL's
// records, which a replay reads back into the same series; the refs of
// series new to the TSDB, which the head numbers in the order it creates
// them; and whatever the head or an exemplar storage keeps in the order of
// the appends across series: metadata WAL records, and exemplars, which
// a full exemplar storage evicts oldest first. A caller that appends
// those keeps their series in request order. A caller that stops at the first error it does not skip, as
// Prometheus's write handler does (and rolls back), must stop at the first
// such error in request order: it appends in this order, records every
// error by index, then looks at them in request order.
//
// The gain is in the head's memory reads, so it is the whole request's
// handles that are worth ordering, not a batch of LookupBatch's size
// (BenchmarkAppend). Handles whose refs are in order already, as those of a
// sender that repeats the order the head created its series in, are taken
// as they are, without a sort (BenchmarkAppendOrder, order=same, where a
// sort of a sorted request costs more than the scan that finds it
// sorted). The returned slice is the appender's and valid until
// the next AppendOrder. AppendOrder makes no allocation once the appender
// has ordered as many handles.
func (a *AppenderV2) AppendOrder(hs []Handle) []int { return a.appendOrder(hs) }

// AppendOrder returns the order to append hs in; see [AppenderV2.AppendOrder].
func (a *Appender) AppendOrder(hs []Handle) []int { return a.appendOrder(hs) }

func (r *resolver) appendOrder(hs []Handle) []int {
	order := r.order[:0]
	minRef, maxRef := ^uint64(0), uint64(0)
	resolved := 0
	sorted := true // the refs are in order already, as a sender that repeats its order sends them
	for i := range hs {
		if ref := uint64(hs[i].ref); ref != 0 {
			sorted = sorted && ref >= maxRef
			minRef, maxRef = min(minRef, ref), max(maxRef, ref)
			resolved++
		}
	}
	if sorted {
		for i := range hs {
			if hs[i].ref != 0 {
				order = append(order, i)
			}
		}
	} else if maxRef-minRef < 1<<32 && uint64(len(hs)) < 1<<32 {
		// Radix sort of (ref-minRef)<<32 | index on the ref's bytes: the
		// index breaks ties, so one series' samples keep their order.
		keys := slices.Grow(r.keys[:0], 2*resolved)[:2*resolved]
		src, dst := keys[:resolved], keys[resolved:]
		k := 0
		for i := range hs {
			if ref := uint64(hs[i].ref); ref != 0 {
				src[k] = (ref-minRef)<<32 | uint64(i)
				k++
			}
		}
		for shift := uint(32); shift < 64 && (maxRef-minRef)>>(shift-32) != 0; shift += 8 {
			var count [256]int
			for _, key := range src {
				count[byte(key>>shift)]++
			}
			sum := 0
			for d, c := range count {
				count[d] = sum
				sum += c
			}
			for _, key := range src {
				d := byte(key >> shift)
				dst[count[d]] = key
				count[d]++
			}
			src, dst = dst, src
		}
		for _, key := range src {
			order = append(order, int(uint32(key)))
		}
		r.keys = keys
	} else {
		for i := range hs {
			if hs[i].ref != 0 {
				order = append(order, i)
			}
		}
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(hs[x].ref, hs[y].ref) })
	}
	for i := range hs {
		if hs[i].ref == 0 {
			order = append(order, i)
		}
	}
	r.order = order
	return order
}
