package refcache

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
// labels are exactly ls. the Series of package ingest/decode, and labels.HashedBuilder of package
// github.com/ingestkit/ingestkit/labels, answer it from the request's pairs
// without building anything. The cache calls an Equaler from the goroutine
// that looks the series up, during the lookup only, so an implementation
// need not be safe for concurrent use.
type Equaler interface {
	Equal(ls labels.Labels) bool
}

// DefaultStripes is the stripe count of a [Cache] whose options leave
// it zero; an empty cache then costs 16 KiB. Single BenchmarkAppend runs
// found 8 to 256 stripes alike within noise and far more stripes slower
// (more, smaller tables cost more misses), so the default stays small; it
// was not chosen by a -count 6 comparison. Lookups take no lock: stripes
// only spread the stores and purges.
const DefaultStripes = 256

// Options are the settings of a [Cache]. The zero value means the
// defaults. A cache has no clock of its own: the times it is given, by the
// appenders and [Cache.Purge], are milliseconds since the Unix epoch. It is
// a plain value, safe for concurrent use once built and not modified
// afterwards.
type Options struct {
	// Stripes is the number of independently locked parts, rounded up to a
	// power of two. Zero means [DefaultStripes]. A cache per small
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
// again). So a Cache serves one storage at a time, the one the [AppenderV2]
// or [Appender] resetting it names: the first binds the cache to its
// storage, and an appender given another storage (compared as interface
// values, so a pointer such as a *tsdb.DB is compared by identity) starts
// the cache afresh, empty, bound to the new storage; [Stats.Rebinds]
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
// with the ref, and [AppenderV2] then stores the new ref. Entries that are
// not looked up are dropped by [Cache.Purge], which bounds the memory.
// Times, as everywhere in ingestkit, are Prometheus's: milliseconds since
// the Unix epoch, such as time.Now().UnixMilli() when a request arrives.
//
// Senders repeat themselves: a Prometheus remote-write shard sends the same
// series in the same order request after request, as a scrape target
// exposes them. So each entry also remembers which entry was looked up
// right after it, and an [AppenderV2] whose guesses have been holding tries
// that guess first, by its labels, without hashing the series or probing
// the stripe's index: when it holds, a lookup reads one entry, in memory
// allocated in the order the series were first seen, and takes the
// series' hash from it. A wrong guess costs that comparison, the hash and
// the usual lookup; after one, the appender looks series up by the index
// and goes back to guesses when the entry it finds is the guess of the one
// before (BenchmarkAppend, order=fragments).
//
// Memory: an entry is a slot of 16 bytes (hash and pointer) in its stripe's
// open-addressing index, which is kept between 7/16 and 7/8 full, and an
// object of 48 bytes in the default stringlabels build (labels header,
// hash, ref, last-seen time and the guess; 56, in a 64-byte size class, in
// the others); the labels are the TSDB's own and shared with it.
// TestCacheMemoryPerEntry measures 72 bytes per entry in the default build
// and 88 under slicelabels and dedupelabels.
// A purged entry may stay reachable until the entry whose guess it is, is
// looked up or purged.
//
// A Cache is safe for concurrent use by multiple goroutines. Lookups take
// no lock (the index's publication rules are at cacheSlots), so that the
// lookups of a batch can overlap their memory reads; stores and purges take
// a stripe's lock; binding to a storage other than the one served, and
// [Cache.Reset], take a lock of the whole cache.
//
// The zero value is an empty cache with the default options, ready to use;
// [New] takes other options. A Cache must not be copied.
type Cache struct {
	mu sync.Mutex // serialises binding, Reset and a zero cache's first table
	// table is nil in a zero Cache until its first store or binding (see
	// Cache.load); set under mu.
	table   atomic.Pointer[cacheTable]
	stripes int // 0 for DefaultStripes; immutable

	// Keeps the counters, written at every appender's commit, off the
	// cache line of table, which every Cache.Lookup reads
	// (BenchmarkCache).
	_ [64]byte

	// The counts of Stats, atomic. The appenders count their lookups
	// and stores in their transactions and add them here at Commit,
	// Rollback and Reset (resolver.fold), so that the hit path writes no
	// memory that other cores read.
	hits, guessed, misses, stores, purged atomic.Int64
	rebinds, resets                       atomic.Int64
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
	mu sync.Mutex // serialises the stripe's writers: stores and purges
	// slots is the stripe's index, nil while the stripe is empty; lookups
	// load it without a lock (see cacheSlots).
	slots atomic.Pointer[cacheSlots]
	used  int      // slots filled in slots; guarded by mu
	_     [40]byte // keeps stripes' locks on separate cache lines
}

// cacheSlots is a stripe's index: a linear-probing table of (hash, entry)
// slots, whose size is a power of two, where a series' home slot is the
// high bits of its hash (the low bits chose the stripe). Series whose
// hashes collide sit in the probe sequence side by side, and each is found
// by its labels.
//
// Publication rules, which let lookups read without a lock: once a table is
// stored in its stripe, the only change to it is an empty slot taking an
// entry, its hash stored before its entry, and a slot never changes again;
// a writer that would change more (a growth, a purge) fills a new table and
// stores it in the stripe whole. A lookup that loaded a table sees each slot
// empty or final, and so finds a series that is being added or not, never a
// wrong one: the hash it compares is the entry's, and the labels decide. A
// purged entry may stay in a table that a lookup loaded before the purge;
// its ref is then 0, which the lookup refuses.
//
// A table grows when it would be more than 7/8 full, as the tracker's
// does: a probe always meets an empty slot, a hit reads 4.5 slots on
// average at the fullest, 72 bytes, mostly in one or two adjacent cache
// lines, and the index costs 18 to 37 bytes per entry.
type cacheSlots struct {
	slots []cacheSlot
	shift uint // 64 - log2(len(slots)): hash>>shift is the home slot
}

type cacheSlot struct {
	hash atomic.Uint64
	e    atomic.Pointer[cacheEntry] // nil for an empty slot
}

// minCacheSlots is the size of a stripe's first table.
const minCacheSlots = 8

func newCacheSlots(n int) *cacheSlots {
	return &cacheSlots{slots: make([]cacheSlot, n), shift: uint(64 - bits.TrailingZeros(uint(n)))}
}

// home returns the first slot of hash's probe sequence.
func (t *cacheSlots) home(hash uint64) int { return int(hash >> t.shift) }

// find returns the entry for hash whose labels eq accepts, or nil. It takes
// no lock. t may be nil, an empty stripe.
func (t *cacheSlots) find(hash uint64, eq Equaler) *cacheEntry {
	if t == nil {
		return nil
	}
	return t.findFrom(t.home(hash), hash, eq)
}

// findFrom is find from slot i of hash's probe sequence on.
func (t *cacheSlots) findFrom(i int, hash uint64, eq Equaler) *cacheEntry {
	mask := len(t.slots) - 1
	for ; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		e := sl.e.Load()
		if e == nil {
			return nil
		}
		if sl.hash.Load() == hash && eq.Equal(e.lset) {
			return e
		}
	}
}

// candidate returns the first slot of hash's probe sequence that holds an
// entry of that hash, and the entry, or -1 and nil if there is none: the
// entry that a lookup most likely wants, before its labels are compared.
func (t *cacheSlots) candidate(hash uint64) (int, *cacheEntry) {
	mask := len(t.slots) - 1
	for i := t.home(hash); ; i = (i + 1) & mask {
		sl := &t.slots[i]
		e := sl.e.Load()
		if e == nil {
			return -1, nil
		}
		if sl.hash.Load() == hash {
			return i, e
		}
	}
}

// place puts e, of the given hash, in the first empty slot of its probe
// sequence. It is for a table not yet stored in its stripe, or for one
// that is, with the stripe's mu held.
func (t *cacheSlots) place(hash uint64, e *cacheEntry) {
	mask := len(t.slots) - 1
	i := t.home(hash)
	for t.slots[i].e.Load() != nil {
		i = (i + 1) & mask
	}
	t.slots[i].hash.Store(hash)
	t.slots[i].e.Store(e)
}

// insert adds e, of the given hash, to the stripe. It requires s.mu.
func (s *cacheStripe) insert(hash uint64, e *cacheEntry) {
	cur := s.slots.Load()
	if cur != nil && (s.used+1)*8 <= len(cur.slots)*7 {
		cur.place(hash, e)
		s.used++
		return
	}
	n := minCacheSlots
	if cur != nil {
		n = 2 * len(cur.slots)
	}
	grown := newCacheSlots(n)
	if cur != nil {
		for i := range cur.slots {
			if old := cur.slots[i].e.Load(); old != nil {
				grown.place(cur.slots[i].hash.Load(), old)
			}
		}
	}
	grown.place(hash, e)
	s.slots.Store(grown)
	s.used++
}

// cacheEntry is a cached series. Entries are read without a lock through
// the guesses of other entries: their fields are immutable or atomic.
type cacheEntry struct {
	lset labels.Labels // immutable
	// hash is the hash the entry is stored under in the index, the hash
	// of lset; immutable. A lookup that confirms a guess by its labels
	// takes the series' hash from here rather than hashing the series.
	hash uint64
	// ref is the series' ref; 0 once the entry is purged, which tells a
	// lookup that followed a guess to it not to use it.
	ref      atomic.Uint64
	lastSeen atomic.Int64
	// next is the entry looked up right after this one, last time: a
	// guess, not an invariant, confirmed by the labels of the series
	// looked up.
	next atomic.Pointer[cacheEntry]
}

// guessOf returns the entry guessed to come after e and its ref, if the
// entry is eq's series and not purged, else nil and 0. It reads the guessed
// entry and compares its labels, and hashes nothing.
func (e *cacheEntry) guessOf(eq Equaler) (*cacheEntry, uint64) {
	g := e.next.Load()
	if g == nil {
		return nil, 0
	}
	// Read without a lock: the guess may have been purged since (ref 0)
	// or be another series; its labels are immutable.
	if ref := g.ref.Load(); ref != 0 && eq.Equal(g.lset) {
		return g, ref
	}
	return nil, 0
}

// follows reports whether next is e's guess, and makes it the guess if it
// is not.
func (e *cacheEntry) follows(next *cacheEntry) bool {
	if e.next.Load() == next {
		return true
	}
	e.next.Store(next)
	return false
}

// New returns an empty cache with the given options, bound to no
// storage yet. A zero Cache is the same as New(Options{}).
func New(opts Options) *Cache {
	n := opts.Stripes
	if n <= 0 {
		n = DefaultStripes
	}
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	c := &Cache{stripes: n}
	c.table.Store(newCacheTable(n))
	return c
}

// load returns the cache's table, making the first one of a zero Cache.
func (c *Cache) load() *cacheTable {
	if t := c.table.Load(); t != nil {
		return t
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.table.Load()
	if t == nil {
		t = c.newTable()
		c.table.Store(t)
	}
	return t
}

// newTable returns an empty table of the cache's stripe count.
func (c *Cache) newTable() *cacheTable {
	n := c.stripes
	if n == 0 {
		n = DefaultStripes
	}
	return newCacheTable(n)
}

func newCacheTable(n int) *cacheTable {
	return &cacheTable{stripes: make([]cacheStripe, n), mask: uint64(n - 1)}
}

// bind returns the table of db's refs: the current one if it serves db or
// no storage yet, else a new, empty one that replaces it. It panics if db
// is nil or its dynamic type is not comparable, as the cache could not
// tell whether it serves it.
//
// bind allocates only when the cache starts serving another storage.
func (c *Cache) bind(db any) *cacheTable {
	if t := c.table.Load(); t != nil {
		if b := t.bound.Load(); b != nil && sameStorage(b.storage, db) {
			return t
		}
	}
	return c.bindSlow(db)
}

func (c *Cache) bindSlow(db any) *cacheTable {
	if db == nil {
		panic("refcache: appender reset with a nil storage")
	}
	if !reflect.ValueOf(db).Comparable() {
		panic(fmt.Sprintf("refcache: a Cache cannot serve a storage of incomparable type %T; pass a pointer", db))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.table.Load()
	if t == nil { // a zero Cache
		t = c.newTable()
		c.table.Store(t)
	}
	b := t.bound.Load()
	switch {
	case b == nil:
		t.bound.Store(&boundStorage{db})
	case !sameStorage(b.storage, db):
		t = c.newTable()
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
	c.table.Store(c.newTable())
	c.mu.Unlock()
	c.resets.Add(1)
}

// Stats are the counts of a [Cache], as [Cache.UpdateStats] reports
// them: a plain value that the cache fills and does not update afterwards;
// it is not safe for concurrent use while UpdateStats writes it.
//
// Hits, Guessed, Misses and Stores count the lookups and stores of the
// appenders ([Appender], [AppenderV2]), added to the cache's counts when
// the appender's transaction is committed or rolled back (or the appender
// reset), all of a transaction's at once: a transaction in progress is
// not counted yet. They are the sums of the appenders' [AppenderStats]:
// Hits of CacheHits, Guessed of Guessed, Misses of RefLookups and
// NewSeries, Stores of CacheStores; a series refused by a lookup for its
// error is none of them. [Cache.Lookup] counts nothing, so that a program
// that looks series up itself from many cores writes no shared memory on
// its hit path (BenchmarkCache); [Cache.Store] counts in Stores, and
// [Cache.Purge] in Purged. The counts only grow, across bindings and
// resets.
type Stats struct {
	Len     int   // series in the cache
	Hits    int64 // lookups that found the series in the cache
	Guessed int64 // of the hits, found as the guess of the series before (see Cache)
	Misses  int64 // lookups that did not: the series was asked of the TSDB, or built as new
	Stores  int64 // entries added or refreshed (new series, stale refs)
	Purged  int64 // entries dropped by Cache.Purge
	// Rebinds counts the times an appender gave the cache a storage other
	// than the one it served, which emptied it. More than one per TSDB
	// opened means the cache is shared by several storages, or that the
	// storage passed to the appenders is a new value every time (a wrapper
	// made per request): pass the same one.
	Rebinds int64
	Resets  int64 // calls of Cache.Reset
}

// Stats returns the cache's counts; see [Cache.UpdateStats].
func (c *Cache) Stats() Stats {
	var s Stats
	c.UpdateStats(&s)
	return s
}

// UpdateStats sets *s to the cache's counts. It takes no lock and makes no
// allocation; while appenders commit, counts read one after the other may
// be from slightly different moments.
func (c *Cache) UpdateStats(s *Stats) {
	*s = Stats{
		Len:     c.Len(),
		Hits:    c.hits.Load(),
		Guessed: c.guessed.Load(),
		Misses:  c.misses.Load(),
		Stores:  c.stores.Load(),
		Purged:  c.purged.Load(),
		Rebinds: c.rebinds.Load(),
		Resets:  c.resets.Load(),
	}
}

func (t *cacheTable) stripe(hash uint64) *cacheStripe {
	// The low bits pick the stripe, the high bits the home slot in its
	// index (cacheSlots.home).
	return &t.stripes[hash&t.mask]
}

// Lookup returns the ref and the TSDB's labels of the series with the given
// hash whose labels eq accepts, and marks the entry seen at now, in
// milliseconds since the Unix epoch, as Prometheus timestamps (the unit
// [Cache.Purge] takes: time.Now().UnixMilli() when the request arrived). ok is
// false when there is no such entry. The ref is one of the storage the
// cache serves now (see [Cache]).
//
// Lookup makes no allocation, and counts nothing in [Stats].
func (c *Cache) Lookup(hash uint64, eq Equaler, now int64) (ref storage.SeriesRef, lset labels.Labels, ok bool) {
	t := c.table.Load()
	if t == nil { // a zero Cache, empty
		return 0, labels.EmptyLabels(), false
	}
	e := t.stripe(hash).slots.Load().find(hash, eq)
	if e == nil {
		return 0, labels.EmptyLabels(), false
	}
	// A purge may have dropped e since it was found (ref 0).
	if ref = storage.SeriesRef(e.ref.Load()); ref == 0 {
		return 0, labels.EmptyLabels(), false
	}
	if e.lastSeen.Load() < now {
		e.lastSeen.Store(now)
	}
	return ref, e.lset, true
}

// labelsEqual adapts a labels.Labels to Equaler.
type labelsEqual struct{ ls labels.Labels }

func (l *labelsEqual) Equal(ls labels.Labels) bool { return labels.Equal(l.ls, ls) }

// Store records that the series with the given hash and labels has ref, seen
// at now, in milliseconds since the Unix epoch, as [Cache.Lookup] takes it.
// lset must be the labels the TSDB holds for the series (or an immutable
// copy of them): the cache keeps it and hands it out to every hit.
// If the series is already cached, its ref and time are updated. Store
// panics if ref is 0, which no TSDB series has. ref must be one of the
// storage the cache serves now (see [Cache]), or of the storage the first
// appender will bind it to.
//
// Store allocates one entry for a series it did not hold.
func (c *Cache) Store(hash uint64, ref storage.SeriesRef, lset labels.Labels, now int64) {
	c.load().store(hash, ref, lset, now)
	c.stores.Add(1)
}

// store is Store that returns the entry.
func (t *cacheTable) store(hash uint64, ref storage.SeriesRef, lset labels.Labels, now int64) *cacheEntry {
	if ref == 0 {
		panic("refcache: Cache.Store with ref 0")
	}
	s := t.stripe(hash)
	eq := labelsEqual{lset}
	s.mu.Lock()
	if e := s.slots.Load().find(hash, &eq); e != nil {
		e.ref.Store(uint64(ref))
		if e.lastSeen.Load() < now {
			e.lastSeen.Store(now)
		}
		s.mu.Unlock()
		return e
	}
	e := &cacheEntry{lset: lset, hash: hash}
	e.ref.Store(uint64(ref))
	e.lastSeen.Store(now)
	s.insert(hash, e)
	s.mu.Unlock()
	t.entries.Add(1)
	return e
}

// Purge drops the entries last seen before keepFrom, in milliseconds since
// the Unix epoch, as Prometheus timestamps (such as
// time.Now().Add(-idleTimeout).UnixMilli()), and returns how many it
// dropped. It takes one stripe's lock at a time, and only for a stripe that
// has something to drop; lookups take no lock, and stores to the other
// stripes go on.
//
// Purge allocates a new index for each stripe it drops entries from, sized
// for the entries it keeps; the old one is garbage.
func (c *Cache) Purge(keepFrom int64) int {
	t := c.table.Load()
	if t == nil { // a zero Cache, empty
		return 0
	}
	dropped := 0
	for i := range t.stripes {
		s := &t.stripes[i]
		if !s.slots.Load().hasIdle(keepFrom) {
			continue
		}
		s.mu.Lock()
		dropped += s.purge(keepFrom)
		s.mu.Unlock()
	}
	t.entries.Add(-int64(dropped))
	c.purged.Add(int64(dropped))
	return dropped
}

// hasIdle reports whether the table holds an entry seen before keepFrom. It
// takes no lock; t may be nil.
func (t *cacheSlots) hasIdle(keepFrom int64) bool {
	if t == nil {
		return false
	}
	for i := range t.slots {
		if e := t.slots[i].e.Load(); e != nil && e.lastSeen.Load() < keepFrom {
			return true
		}
	}
	return false
}

// purge drops the stripe's entries seen before keepFrom, and stores a new
// table of the others (nil if none is left), as lookups may be reading the
// old one. It requires s.mu.
func (s *cacheStripe) purge(keepFrom int64) int {
	cur := s.slots.Load()
	if cur == nil {
		return 0
	}
	dropped := 0
	for i := range cur.slots {
		if e := cur.slots[i].e.Load(); e != nil && e.lastSeen.Load() < keepFrom {
			drop(e)
			dropped++
		}
	}
	if dropped == 0 {
		return 0
	}
	s.used -= dropped
	if s.used == 0 {
		s.slots.Store(nil)
		return dropped
	}
	// Half full at most, so that the stripe takes new series before it
	// grows again.
	n := minCacheSlots
	for n < 2*s.used {
		n *= 2
	}
	kept := newCacheSlots(n)
	for i := range cur.slots {
		if e := cur.slots[i].e.Load(); e != nil && e.ref.Load() != 0 {
			kept.place(cur.slots[i].hash.Load(), e)
		}
	}
	s.slots.Store(kept)
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
func (c *Cache) Len() int {
	t := c.table.Load()
	if t == nil {
		return 0
	}
	return int(t.entries.Load())
}
