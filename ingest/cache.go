package ingest

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Equaler is what the cache asks of a series to confirm a hit: whether its
// labels are exactly ls. [Series], and labels.Builder of package
// github.com/ingestkit/ingestkit/labels, answer it from the request's pairs
// without building anything.
type Equaler interface {
	Equal(ls labels.Labels) bool
}

// DefaultCacheStripes is the stripe count of a [Cache] whose options leave
// it zero; an empty cache then costs 16 KiB. In single BenchmarkAppend runs
// (100k series, 2 cores) 8 to 256 stripes cost the same within noise, while
// 16384 were about 1.5x slower (more, smaller maps cost more misses), so
// the default stays small; it was not chosen by a -count 6 comparison.
const DefaultCacheStripes = 256

// CacheOptions are the settings of a [Cache]. The zero value means the
// defaults.
type CacheOptions struct {
	// Stripes is the number of independently locked parts, rounded up to a
	// power of two. Zero means [DefaultCacheStripes]. A cache per small
	// tenant can take fewer; one shared by many cores, more.
	Stripes int
}

// Cache maps a series' precomputed hash to the TSDB's series ref and the
// TSDB's own labels for it, across requests, so that a receiver appends to a
// series the TSDB already holds by ref, without hashing its labels again,
// copying them or asking the head. A hit is confirmed with the request's
// pairs ([Equaler]); series whose hashes collide are kept side by side and
// each found by its labels.
//
// Senders repeat themselves: a Prometheus remote-write shard sends the same
// series in the same order request after request, as a scrape target
// exposes them. So each entry also remembers which entry was looked up
// right after it, and an [Appender] tries that guess first, without a lock
// and without a probe of the stripe's map: when it holds, a lookup reads
// one entry, in memory allocated in the order the series were first seen.
// A wrong guess costs one comparison of hashes and the usual lookup.
//
// Refs may go stale when the head garbage-collects a series: appending with
// a stale ref and the cached labels still lands on the right series, because
// Prometheus's head falls back to the labels when it does not know a ref,
// and [Appender] then stores the new ref. Entries that are not looked up are
// dropped by [Cache.Purge], which bounds the memory.
//
// Memory: an entry is a map slot (hash and pointer) and an object of 48
// bytes in the default stringlabels build (labels header, ref, last-seen
// time, and the guess and its hash; 56, in a 64-byte size class, in the
// others); the labels are the TSDB's own and shared with it.
// TestCacheMemoryPerEntry measures 72 bytes per entry in the default build
// and 88 under slicelabels and dedupelabels, 16 more than without guesses.
// A purged entry may stay reachable until the entry whose guess it is, is
// looked up or purged.
//
// A Cache is safe for concurrent use by multiple goroutines. Lookups take a
// stripe's read lock, or no lock when the guess holds; stores and purges
// take its write lock.
type Cache struct {
	stripes []cacheStripe
	mask    uint64
	entries atomic.Int64
}

type cacheStripe struct {
	mu sync.RWMutex
	// m holds the first series stored for a hash; conflicts the others,
	// which exist only when different series' hashes collide.
	m         map[uint64]*cacheEntry   // guarded by mu
	conflicts map[uint64][]*cacheEntry // guarded by mu
	_         [32]byte                 // keeps stripes' locks on separate cache lines
}

// cacheEntry is a cached series. Entries are read without a lock through
// the guesses of other entries: their fields are immutable or atomic.
type cacheEntry struct {
	lset labels.Labels // immutable
	// ref is the series' ref; 0 once the entry is purged, which tells a
	// lookup that followed a guess to it not to use it.
	ref      atomic.Uint64
	lastSeen atomic.Int64
	// next is the entry looked up right after this one, last time, and
	// nextHash its hash: a guess, not an invariant. nextHash lets a lookup
	// tell a wrong guess without reading the entry, and may even be
	// another entry's than next's, as the two are stored one after the
	// other: the labels decide.
	next     atomic.Pointer[cacheEntry]
	nextHash atomic.Uint64
}

// guess returns the entry guessed to come after e if its hash is hash.
func (e *cacheEntry) guess(hash uint64) *cacheEntry {
	if e.nextHash.Load() != hash {
		return nil
	}
	return e.next.Load()
}

// setGuess makes next, of the given hash, e's guess.
func (e *cacheEntry) setGuess(hash uint64, next *cacheEntry) {
	if e.next.Load() != next {
		e.next.Store(next)
		e.nextHash.Store(hash)
	}
}

// NewCache returns an empty cache.
func NewCache(opts CacheOptions) *Cache {
	n := opts.Stripes
	if n <= 0 {
		n = DefaultCacheStripes
	}
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	c := &Cache{stripes: make([]cacheStripe, n), mask: uint64(n - 1)}
	for i := range c.stripes {
		c.stripes[i].m = make(map[uint64]*cacheEntry)
	}
	return c
}

func (c *Cache) stripe(hash uint64) *cacheStripe {
	// The low bits pick the stripe; Go's map hashes the key again, so they
	// do not bias the map.
	return &c.stripes[hash&c.mask]
}

// find returns the entry for hash whose labels eq accepts, or nil. It
// requires s.mu held, for reading at least.
func (s *cacheStripe) find(hash uint64, eq Equaler) *cacheEntry {
	e := s.m[hash]
	if e == nil {
		return nil
	}
	if eq.Equal(e.lset) {
		return e
	}
	for _, e := range s.conflicts[hash] {
		if eq.Equal(e.lset) {
			return e
		}
	}
	return nil
}

// Lookup returns the ref and the TSDB's labels of the series with the given
// hash whose labels eq accepts, and marks the entry seen at now (any
// monotonic clock in any unit, the same as [Cache.Purge] is given). ok is
// false when there is no such entry.
//
// Lookup makes no allocation.
func (c *Cache) Lookup(hash uint64, eq Equaler, now int64) (ref storage.SeriesRef, lset labels.Labels, ok bool) {
	e, _ := c.lookup(nil, hash, eq, now)
	if e == nil {
		return 0, labels.EmptyLabels(), false
	}
	// A purge may have dropped e since it was found (ref 0).
	if ref = storage.SeriesRef(e.ref.Load()); ref == 0 {
		return 0, labels.EmptyLabels(), false
	}
	return ref, e.lset, true
}

// lookup is Lookup that tries prev's guess first, and makes the entry found
// prev's guess. It returns nil if there is no such entry, and whether the
// guess held.
func (c *Cache) lookup(prev *cacheEntry, hash uint64, eq Equaler, now int64) (e *cacheEntry, guessed bool) {
	if prev != nil {
		// Read without a lock: the guess may have been purged since (ref
		// 0) or be another series; its labels are immutable.
		if g := prev.guess(hash); g != nil && g.ref.Load() != 0 && eq.Equal(g.lset) {
			e, guessed = g, true
		}
	}
	if e == nil {
		s := c.stripe(hash)
		s.mu.RLock()
		e = s.find(hash, eq)
		s.mu.RUnlock()
		if e == nil {
			return nil, false
		}
		if prev != nil {
			prev.setGuess(hash, e)
		}
	}
	if e.lastSeen.Load() < now {
		e.lastSeen.Store(now)
	}
	return e, guessed
}

// labelsEqual adapts a labels.Labels to Equaler.
type labelsEqual struct{ ls labels.Labels }

func (l *labelsEqual) Equal(ls labels.Labels) bool { return labels.Equal(l.ls, ls) }

// Store records that the series with the given hash and labels has ref, seen
// at now. lset must be the labels the TSDB holds for the series (or an
// immutable copy of them): the cache keeps it and hands it out to every hit.
// If the series is already cached, its ref and time are updated. Store
// panics if ref is 0, which no TSDB series has.
//
// Store allocates one entry for a series it did not hold.
func (c *Cache) Store(hash uint64, ref storage.SeriesRef, lset labels.Labels, now int64) {
	c.store(hash, ref, lset, now)
}

// store is Store that returns the entry.
func (c *Cache) store(hash uint64, ref storage.SeriesRef, lset labels.Labels, now int64) *cacheEntry {
	if ref == 0 {
		panic("ingest: Cache.Store with ref 0")
	}
	s := c.stripe(hash)
	eq := labelsEqual{lset}
	s.mu.Lock()
	if e := s.find(hash, &eq); e != nil {
		e.ref.Store(uint64(ref))
		if e.lastSeen.Load() < now {
			e.lastSeen.Store(now)
		}
		s.mu.Unlock()
		return e
	}
	e := &cacheEntry{lset: lset}
	e.ref.Store(uint64(ref))
	e.lastSeen.Store(now)
	if s.m[hash] == nil {
		s.m[hash] = e
	} else {
		if s.conflicts == nil {
			s.conflicts = make(map[uint64][]*cacheEntry)
		}
		s.conflicts[hash] = append(s.conflicts[hash], e)
	}
	s.mu.Unlock()
	c.entries.Add(1)
	return e
}

// Purge drops the entries last seen before keepFrom and returns how many it
// dropped. It takes one stripe's write lock at a time, and only for a stripe
// that has something to drop, so appends to the other stripes go on.
func (c *Cache) Purge(keepFrom int64) int {
	dropped := 0
	for i := range c.stripes {
		s := &c.stripes[i]
		s.mu.RLock()
		idle := s.hasIdle(keepFrom)
		s.mu.RUnlock()
		if !idle {
			continue
		}
		s.mu.Lock()
		dropped += s.purge(keepFrom)
		s.mu.Unlock()
	}
	c.entries.Add(-int64(dropped))
	return dropped
}

// hasIdle reports whether the stripe holds an entry seen before keepFrom.
// It requires s.mu held for reading.
func (s *cacheStripe) hasIdle(keepFrom int64) bool {
	for _, e := range s.m {
		if e.lastSeen.Load() < keepFrom {
			return true
		}
	}
	for _, es := range s.conflicts {
		for _, e := range es {
			if e.lastSeen.Load() < keepFrom {
				return true
			}
		}
	}
	return false
}

// purge drops the stripe's entries seen before keepFrom. It requires s.mu
// held for writing.
func (s *cacheStripe) purge(keepFrom int64) int {
	dropped := 0
	for hash, es := range s.conflicts {
		kept := es[:0]
		for _, e := range es {
			if e.lastSeen.Load() < keepFrom {
				drop(e)
				dropped++
				continue
			}
			kept = append(kept, e)
		}
		clear(es[len(kept):])
		if len(kept) == 0 {
			delete(s.conflicts, hash)
		} else {
			s.conflicts[hash] = kept
		}
	}
	for hash, e := range s.m {
		if e.lastSeen.Load() >= keepFrom {
			continue
		}
		drop(e)
		dropped++
		// Promote a surviving conflict, so that find keeps working.
		if es := s.conflicts[hash]; len(es) > 0 {
			s.m[hash] = es[0]
			if len(es) == 1 {
				delete(s.conflicts, hash)
			} else {
				s.conflicts[hash] = es[1:]
			}
			continue
		}
		delete(s.m, hash)
	}
	return dropped
}

// drop marks a purged entry, for lookups that reach it through a guess, and
// lets go of the entry it guessed, so that purged entries do not keep each
// other reachable.
func drop(e *cacheEntry) {
	e.ref.Store(0)
	e.next.Store(nil)
}

// Len returns the number of series in the cache.
func (c *Cache) Len() int { return int(c.entries.Load()) }
