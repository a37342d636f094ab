package ingest

import "github.com/prometheus/prometheus/storage"

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
// repeats its order, it reads what Lookup reads. The caller then appends
// through the handles, in request order as Prometheus does (any order that
// keeps each series' samples in theirs gives the same head).
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
		panic("ingest: LookupBatch with fewer handles or errors than series")
	}
	for len(series) > 0 {
		n := min(len(series), lookupChunk)
		r.lookupChunk(series[:n], hs[:n], errs[:n])
		series, hs, errs = series[n:], hs[n:], errs[n:]
	}
}

// lookupChunk is lookupBatch for at most lookupChunk series. It resolves
// them in request order as lookup does, following the guesses; a series
// whose guess fails right after one whose guess held is looked up at once,
// so that the guesses after it are tried (a sender's order cut and joined
// again). Once two guesses fail in a row, the order is not the last
// request's, and the rest of the chunk goes to a batched probe: for every
// series left, its home slot, then its candidate entry, then the entry's
// labels compared, each pass over all of them before the next, so that the
// misses of one pass are in flight together. Nothing in those passes writes
// to shared memory or takes a lock, which would fence the reads. A last
// pass, in request order, does what lookup does with what the probe found:
// stats, guesses learnt, last-seen times, and the series not in the cache.
func (r *resolver) lookupChunk(series []SeriesLabels, hs []Handle, errs []error) {
	first := len(series) // the first series left to the probe
	for i, s := range series {
		if err := s.Err(); err != nil {
			hs[i], errs[i] = Handle{}, invalidSeries(err)
			continue
		}
		errs[i] = nil
		hash := s.Hash()
		if r.prev != nil {
			if g := r.prev.guess(hash); g != nil {
				if ref := g.ref.Load(); ref != 0 && s.Equal(g.lset) {
					r.hit(&hs[i], hash, ref, g, true)
					continue
				}
			}
		}
		if !r.guessing {
			first = i
			break
		}
		if e := r.tab.stripe(hash).slots.Load().find(hash, s); e != nil {
			if ref := e.ref.Load(); ref != 0 {
				if r.prev != nil {
					r.prev.setGuess(hash, e)
				}
				r.hit(&hs[i], hash, ref, e, false)
				continue
			}
		}
		r.guessing = false
		hs[i] = r.miss(s, hash)
		hs[i].batch = true
	}
	if first == len(series) {
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
		guessed := false
		if r.prev != nil {
			// Lookup would have tried the guess first.
			if guessed = r.prev.guess(hash) == e; !guessed {
				r.prev.setGuess(hash, e)
			}
		}
		r.hit(&hs[i], hash, ref, e, guessed)
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
	r.prev, r.guessing = e, guessed
	*h = Handle{hash: hash, ref: storage.SeriesRef(ref), lset: e.lset, entry: e, batch: true}
}
