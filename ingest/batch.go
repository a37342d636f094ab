package ingest

import "github.com/prometheus/prometheus/storage"

// lookupChunk is how many series a batch lookup resolves together: more
// misses than a core keeps in flight, so that none of its passes waits for
// one at a time, and few enough that its state stays on the stack.
const lookupChunk = 64

// How lookupChunk resolved a series.
const (
	chunkPending = iota // for the batched probe
	chunkGuessed        // the guess of the series before
	chunkFound          // found in the index
	chunkMiss           // not in the cache
	chunkInvalid        // the series has an error
)

// LookupBatch resolves series[i] to hs[i], as [Appender.Lookup] does, and
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
func (a *Appender) LookupBatch(series []SeriesLabels, hs []Handle, errs []error) {
	a.lookupBatch(series, hs, errs)
}

// LookupBatch resolves series in a batch; see [Appender.LookupBatch].
func (a *AppenderV1) LookupBatch(series []SeriesLabels, hs []Handle, errs []error) {
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

// lookupChunk is lookupBatch for at most lookupChunk series. Its first pass
// follows the guesses, in request order, as lookup does; a series whose
// guess fails right after one whose guess held is looked up at once, so
// that the guesses after it are tried (a sender's order cut and joined
// again); once two fail in a row, the order is not the last request's, and
// the rest of the chunk is left to the batched probe. That probe reads, for
// every series left, its home slot, then its candidate entry, then the
// entry's labels, each pass over all the series before the next, so that
// the misses of one pass overlap; nothing in those passes writes to shared
// memory or takes a lock, which would fence the reads. The last pass, in
// request order, does what lookup does with what was found: stats, guesses
// learnt, last-seen times, and the series not in the cache.
func (r *resolver) lookupChunk(series []SeriesLabels, hs []Handle, errs []error) {
	var (
		ents  [lookupChunk]*cacheEntry
		how   [lookupChunk]uint8
		pend  [lookupChunk]uint8 // indexes of the series left to the probe
		tabs  [lookupChunk]*cacheSlots
		slot  [lookupChunk]int
		np    int
		touch uint64 // what the probe's reads load, so that they are made
	)
	prev, guessing := r.prev, r.guessing
	for i, s := range series {
		if err := s.Err(); err != nil {
			hs[i], errs[i], how[i] = Handle{}, invalidSeries(err), chunkInvalid
			continue
		}
		errs[i] = nil
		hash := s.Hash()
		hs[i] = Handle{hash: hash, batch: true}
		if prev != nil {
			if g := prev.guess(hash); g != nil && g.ref.Load() != 0 && s.Equal(g.lset) {
				ents[i], how[i], prev, guessing = g, chunkGuessed, g, true
				continue
			}
		}
		if !guessing {
			how[i] = chunkPending
			pend[np] = uint8(i)
			np++
			prev = nil // unknown until the probe: no guess is tried after it
			continue
		}
		guessing = false
		if e := r.tab.stripe(hash).slots.Load().find(hash, s); e != nil && e.ref.Load() != 0 {
			ents[i], how[i], prev = e, chunkFound, e
		} else {
			how[i] = chunkMiss
		}
	}
	if np > 0 {
		// Home slots.
		for k := range np {
			hash := hs[pend[k]].hash
			tb := r.tab.stripe(hash).slots.Load()
			tabs[k] = tb
			if tb != nil {
				slot[k] = tb.home(hash)
				touch += tb.slots[slot[k]].hash.Load()
			}
		}
		// Candidate entries: the first of the hash in the probe sequence.
		for k := range np {
			if tb := tabs[k]; tb != nil {
				var e *cacheEntry
				slot[k], e = tb.candidate(hs[pend[k]].hash)
				if e != nil {
					ents[pend[k]] = e
					touch += e.ref.Load()
				}
			}
		}
		// Labels, compared: a colliding hash goes on with the probe.
		for k := range np {
			i := pend[k]
			e := ents[i]
			if e == nil {
				how[i] = chunkMiss
				continue
			}
			if !series[i].Equal(e.lset) {
				mask := len(tabs[k].slots) - 1
				e = tabs[k].findFrom((slot[k]+1)&mask, hs[i].hash, series[i])
			}
			if e != nil && e.ref.Load() != 0 {
				ents[i], how[i] = e, chunkFound
			} else {
				ents[i], how[i] = nil, chunkMiss
			}
		}
		r.touch = touch
	}
	// In request order, what lookup does with each result.
	prev, guessing = r.prev, r.guessing
	for i, s := range series {
		switch how[i] {
		case chunkInvalid:
			continue
		case chunkMiss:
			guessing = false
			hs[i] = r.miss(s, hs[i].hash)
			hs[i].batch = true
			continue
		}
		e := ents[i]
		ref := e.ref.Load()
		if ref == 0 { // purged since it was found
			guessing = false
			hs[i] = r.miss(s, hs[i].hash)
			hs[i].batch = true
			continue
		}
		hash := hs[i].hash
		guessed := how[i] == chunkGuessed
		if !guessed && prev != nil {
			// Found by the index; Lookup would have tried prev's guess.
			if guessed = prev.guess(hash) == e; !guessed {
				prev.setGuess(hash, e)
			}
		}
		if e.lastSeen.Load() < r.now {
			e.lastSeen.Store(r.now)
		}
		r.stats.CacheHits++
		if guessed {
			r.stats.Guessed++
		}
		prev, guessing = e, guessed
		hs[i] = Handle{hash: hash, ref: storage.SeriesRef(ref), lset: e.lset, entry: e, batch: true}
	}
	r.prev, r.guessing = prev, guessing
}
