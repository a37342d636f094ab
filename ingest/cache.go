package ingest

import (
	"fmt"
	"math/bits"
	"reflect"
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
// A ref names a series only in the storage that handed it out, and
// Prometheus appends by ref without looking at the labels: a ref cached
// from one head and used with another would write into whatever series the
// other head gave that number (a fresh head numbers its series from 1
// again). So a Cache serves one storage at a time, the one the [Appender]
// or [AppenderV1] resetting it names: the first binds the cache to its
// storage, and an appender given another storage (compared as interface
// values, so a pointer such as a *tsdb.DB is compared by identity) starts
// the cache afresh, empty, bound to the new storage; [CacheStats.Rebinds]
// counts these. Appenders of the old storage still in a transaction keep
// the old entries until their next Reset. A TSDB closed and opened again,
// in a fresh directory or in its old one, is a new *tsdb.DB and gets an
// empty cache: after a WAL replay the old refs would still name the same
// series, but a directory removed and created again numbers its series from
// 1, and the cache cannot tell the two apart. Use one Cache per storage
// (per TSDB, or per tenant's TSDB): a cache shared by two storages is never
// wrong, but empties itself every time the other one appends. A program
// that changes what a storage value appends to (a proxy or a
// ready-storage wrapper whose TSDB is replaced) must call [Cache.Reset]
// itself, as must one that uses [Cache.Lookup] and [Cache.Store] directly.
// The cache keeps the storage it serves, and its entries the labels of
// that storage's head, reachable until it is bound to another storage or
// reset: a program that closes a TSDB and keeps its cache calls Reset, so
// that the closed head's memory is freed.
//
// Within one head, refs may go stale when the head garbage-collects a
// series, and that is safe: a head never hands a ref out twice (its
// lastSeriesID only grows, in tsdb/head.go getOrCreateWithOptionalID, and
// WAL replay moves it past every replayed ref, in tsdb/head_wal.go), so a
// stale ref names no series, the head falls back to the labels it is given
// with the ref, and [Appender] then stores the new ref. Entries that are
// not looked up are dropped by [Cache.Purge], which bounds the memory.
//
// Senders repeat themselves: a Prometheus remote-write shard sends the same
// series in the same order request after request, as a scrape target
// exposes them. So each entry also remembers which entry was looked up
// right after it, and an [Appender] tries that guess first, without a lock
// and without a probe of the stripe's map: when it holds, a lookup reads
// one entry, in memory allocated in the order the series were first seen.
// A wrong guess costs one comparison of hashes and the usual lookup.
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
// take its write lock; binding to a storage other than the one served, and
// [Cache.Reset], take a lock of the whole cache.
type Cache struct {
	mu      sync.Mutex // serialises binding and Reset
	table   atomic.Pointer[cacheTable]
	stripes int
	rebinds atomic.Int64
	resets  atomic.Int64
}

// cacheTable is the entries of one storage. A cache replaces its table,
// whole, when it is bound to another storage or reset; an appender keeps
// the table it was reset with, so that it never sees another storage's
// refs.
type cacheTable struct {
	// bound is the storage the table's refs are of, nil until the first
	// appender binds it; set once, under Cache.mu.
	bound   atomic.Pointer[boundStorage]
	stripes []cacheStripe
	mask    uint64
	entries atomic.Int64
}

type boundStorage struct{ storage any }

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

// NewCache returns an empty cache, bound to no storage yet.
func NewCache(opts CacheOptions) *Cache {
	n := opts.Stripes
	if n <= 0 {
		n = DefaultCacheStripes
	}
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	c := &Cache{stripes: n}
	c.table.Store(newCacheTable(n))
	return c
}

func newCacheTable(n int) *cacheTable {
	t := &cacheTable{stripes: make([]cacheStripe, n), mask: uint64(n - 1)}
	for i := range t.stripes {
		t.stripes[i].m = make(map[uint64]*cacheEntry)
	}
	return t
}

// bind returns the table of db's refs: the current one if it serves db or
// no storage yet, else a new, empty one that replaces it. It panics if db
// is nil or its dynamic type is not comparable, as the cache could not
// tell whether it serves it.
//
// bind allocates only when the cache starts serving another storage.
func (c *Cache) bind(db any) *cacheTable {
	t := c.table.Load()
	if b := t.bound.Load(); b != nil && sameStorage(b.storage, db) {
		return t
	}
	return c.bindSlow(db)
}

func (c *Cache) bindSlow(db any) *cacheTable {
	if db == nil {
		panic("ingest: appender reset with a nil storage")
	}
	if !reflect.ValueOf(db).Comparable() {
		panic(fmt.Sprintf("ingest: a Cache cannot serve a storage of incomparable type %T; pass a pointer", db))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.table.Load()
	b := t.bound.Load()
	switch {
	case b == nil:
		t.bound.Store(&boundStorage{db})
	case !sameStorage(b.storage, db):
		t = newCacheTable(c.stripes)
		t.bound.Store(&boundStorage{db})
		c.table.Store(t)
		c.rebinds.Add(1)
	}
	return t
}

// sameStorage reports whether db is bound, without the panic of == on two
// values of one incomparable type.
func sameStorage(bound, db any) bool {
	if db == nil {
		return false
	}
	if reflect.TypeOf(db).Kind() != reflect.Pointer && !reflect.ValueOf(db).Comparable() {
		return false
	}
	return bound == db
}

// Reset drops every entry and unbinds the cache, for a program that
// replaces what its storage value appends to (see [Cache]); the next
// appender binds it again. Appenders in a transaction keep the entries they
// had until their next Reset.
func (c *Cache) Reset() {
	c.mu.Lock()
	c.table.Store(newCacheTable(c.stripes))
	c.mu.Unlock()
	c.resets.Add(1)
}

// CacheStats describes a [Cache].
type CacheStats struct {
	Len int // series in the cache
	// Rebinds counts the times an appender gave the cache a storage other
	// than the one it served, which emptied it. More than one per TSDB
	// opened means the cache is shared by several storages, or that the
	// storage passed to the appenders is a new value every time (a wrapper
	// made per request): pass the same one.
	Rebinds int64
	Resets  int64 // calls of Cache.Reset
}

// Stats returns the cache's figures.
func (c *Cache) Stats() CacheStats {
	return CacheStats{Len: c.Len(), Rebinds: c.rebinds.Load(), Resets: c.resets.Load()}
}

func (t *cacheTable) stripe(hash uint64) *cacheStripe {
	// The low bits pick the stripe; Go's map hashes the key again, so they
	// do not bias the map.
	return &t.stripes[hash&t.mask]
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
// false when there is no such entry. The ref is one of the storage the
// cache serves now (see [Cache]).
//
// Lookup makes no allocation.
func (c *Cache) Lookup(hash uint64, eq Equaler, now int64) (ref storage.SeriesRef, lset labels.Labels, ok bool) {
	e, _ := c.table.Load().lookup(nil, hash, eq, now)
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
func (t *cacheTable) lookup(prev *cacheEntry, hash uint64, eq Equaler, now int64) (e *cacheEntry, guessed bool) {
	if prev != nil {
		// Read without a lock: the guess may have been purged since (ref
		// 0) or be another series; its labels are immutable.
		if g := prev.guess(hash); g != nil && g.ref.Load() != 0 && eq.Equal(g.lset) {
			e, guessed = g, true
		}
	}
	if e == nil {
		s := t.stripe(hash)
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
// panics if ref is 0, which no TSDB series has. ref must be one of the
// storage the cache serves now (see [Cache]), or of the storage the first
// appender will bind it to.
//
// Store allocates one entry for a series it did not hold.
func (c *Cache) Store(hash uint64, ref storage.SeriesRef, lset labels.Labels, now int64) {
	c.table.Load().store(hash, ref, lset, now)
}

// store is Store that returns the entry.
func (t *cacheTable) store(hash uint64, ref storage.SeriesRef, lset labels.Labels, now int64) *cacheEntry {
	if ref == 0 {
		panic("ingest: Cache.Store with ref 0")
	}
	s := t.stripe(hash)
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
	t.entries.Add(1)
	return e
}

// Purge drops the entries last seen before keepFrom and returns how many it
// dropped. It takes one stripe's write lock at a time, and only for a stripe
// that has something to drop, so appends to the other stripes go on.
func (c *Cache) Purge(keepFrom int64) int {
	t := c.table.Load()
	dropped := 0
	for i := range t.stripes {
		s := &t.stripes[i]
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
	t.entries.Add(-int64(dropped))
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

// Len returns the number of series in the cache, for the storage it serves.
func (c *Cache) Len() int { return int(c.table.Load().entries.Load()) }
