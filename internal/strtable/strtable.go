// Package strtable holds the interners of package labels (Table, Unique,
// Go4), which documents them: here so that package ingest, which imports
// no other public package, can keep a Table of its own.
package strtable

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"unique"

	"go4.org/intern"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

// shards is the number of independently locked parts of each interner; 32
// keeps the fixed cost of an interner near 4 KiB. Other counts were not
// measured. BenchmarkInternParallel gives the hit path from all cores; the
// hits of every interner here take no lock.
const shards = 32

// seed keys the hash that picks shards and index slots. It is random per
// process, so that label values sent over the network cannot be chosen to
// collide, which would make an index of linear probes quadratic.
var seed = maphash.MakeSeed()

// Table is ingestkit's own labels.Interner. A hit costs a probe of a flat index,
// without a lock unless the string is among the newest, and no allocation
// or copy; a miss copies the bytes once into a chunk shared with other
// strings, so that short strings do not each pay for a heap object and its
// size-class rounding. Chunks grow with the table, to 1/32 of what it holds
// and at most 64 KiB, and hold strings shorter than 1 KiB; longer strings
// get an allocation of their own.
//
// Retained memory is the strings' bytes, the unused tail of the current
// chunk (at most 1/32 of the table once it holds 32 KiB), and the index: one
// 8-byte word per string that holds where its bytes are, in a table kept 44%
// to 88% full (70% to 88% once a shard's index has 1024 slots), so 9 to 18 bytes
// per string. TestTableRetained holds the bytes kept for the strings within
// 5% of their length; BenchmarkIntern reports the heap held per byte of
// distinct strings, the index included (heap-B/B, see BENCHMARKS.md).
//
// The hash that places strings is keyed per process, so values sent over
// the network cannot be chosen to pile up on one probe sequence.
//
// Strings are never released one by one: [Table.Reset] drops them all (those
// still referenced stay valid, held by their chunk). Use a Table for label
// values whose set changes slowly, such as those of the series of a TSDB
// head, and reset it when the head is compacted or truncated.
//
// The zero value is an empty table ready to use. A Table must not be copied
// after first use. It is safe for concurrent use by multiple goroutines.
type Table struct {
	shards [shards]tableShard

	// Misses take chunkMu after their shard's lock, and so do hits on
	// strings in the current chunk. One chunk for all shards keeps the
	// unused tail to one chunk per table, not one per shard.
	chunkMu  sync.Mutex
	chunk    strings.Builder          // guarded by chunkMu; strings alias its buffer
	gen      atomic.Pointer[tableGen] // nil until first used; replaced by Reset
	bytes    int64                    // guarded by chunkMu: length of all strings
	retained int64                    // guarded by chunkMu: chunk capacity and own allocations
}

// tableGen is a generation of a Table's chunks; [Table.Reset] starts a new
// one. Each version of a shard's index names its generation, so that a hit
// that holds a version from before a reset reads the chunks its slots refer
// to, not the new ones that have the same numbers.
type tableGen struct {
	// full holds the chunks filled before the current one, by number: each
	// the string of all its bytes. The slice is replaced, never changed, so
	// that hits read it without a lock.
	full atomic.Pointer[[]string]
}

// tableShard is an open-addressing index with linear probing: a slot is 0
// when empty, or a string's tag (the top 20 bits of its hash, which is
// keyed by seed) and where its bytes are (see tableSlot). A slot's home is
// its tag scaled to the index, so a grow places the slots again without
// reading or hashing a string. Past 2^20 slots in a shard (some 30 million
// strings in a table), homes are spaced out and probes run longer.
//
// Hits take no lock: they probe the version of the index they load, whose
// slots change only from empty to a string, with sync/atomic. A hit that
// ends on an empty slot, or on a string that its version cannot read yet
// (in the current chunk, or a newer string of the shard's own), looks again
// under the shard's lock, as a miss does.
type tableShard struct {
	mu    sync.Mutex
	index atomic.Pointer[tableIndex] // nil while empty; replaced under mu
	n     int                        // strings in the index; guarded by mu
	_     [64]byte                   // keeps shards' hot fields on separate cache lines
}

// tableIndex is a version of a shard's index. A grow, a string with an
// allocation of its own and a reset replace it.
type tableIndex struct {
	slots []uint64 // read and written with sync/atomic
	// own holds the strings that have an allocation of their own, by
	// number. Later versions append to the same array, beyond this
	// version's length, which is never changed.
	own []string
	gen *tableGen
}

const (
	minChunk   = 1 << 10
	maxChunk   = 64 << 10 // offsets in a chunk fit in 16 bits
	maxChunked = 1 << 10  // strings this long or longer get their own allocation
	maxChunks  = 1 << 16  // chunk numbers fit in 16 bits; later strings get their own allocation

	// A slot: bit 63 set, the tag in bits 43-62, then either bit 42 clear, the
	// length in bits 32-41, the chunk in bits 16-31 and the offset in bits
	// 0-15; or bit 42 set and the number of the string in the shard's own
	// strings in bits 0-31.
	slotUsed  = 1 << 63
	tagShift  = 43
	tagBits   = 20
	slotOwn   = 1 << 42
	lenShift  = 32
	chunkBits = 16
)

// tableSlot returns the slot of a string with the given tag, in chunk c at
// offset off.
func tableSlot(tag uint64, length, c, off int) uint64 {
	return slotUsed | tag<<tagShift | uint64(length)<<lenShift | uint64(c)<<chunkBits | uint64(off)
}

// slotTag returns the tag of slot w.
func slotTag(w uint64) uint64 { return w >> tagShift & (1<<tagBits - 1) }

// home returns where a tag's probe starts in an index of n slots.
func home(tag uint64, n int) int { return int(tag * uint64(n) >> tagBits) }

// Intern returns the canonical string for b.
//
// Intern makes no allocation on a hit, and takes no lock unless the string
// is among the newest; on a miss it copies b once, into a shared chunk,
// allocating a new chunk when the current one is full, and a larger index
// for the shard now and then.
func (t *Table) Intern(b []byte) string {
	h := maphash.Bytes(seed, b)
	s := &t.shards[h%shards]
	tag := h >> (64 - tagBits)
	if ix := s.index.Load(); ix != nil {
		if v, ok := ix.lookup(tag, b); ok {
			return v
		}
	}
	s.mu.Lock()
	v, p, ok := t.find(s, tag, b)
	if !ok {
		v = t.insert(s, tag, p, b)
	}
	s.mu.Unlock()
	return v
}

// lookup returns the string of ix equal to b, if ix has it in a chunk that
// is full or among its own strings. It takes no lock.
func (ix *tableIndex) lookup(tag uint64, b []byte) (string, bool) {
	n := len(ix.slots)
	full := ix.gen.full.Load()
	for p := home(tag, n); ; {
		w := atomic.LoadUint64(&ix.slots[p])
		if w == 0 {
			return "", false
		}
		if slotTag(w) == tag {
			v, ok := ix.fullString(w, full)
			if !ok {
				return "", false // newer than ix or full: under the lock
			}
			if v == string(b) {
				return v, true
			}
		}
		if p++; p == n {
			p = 0
		}
	}
}

// fullString returns the string that slot w refers to, if it is among the
// own strings of ix or in one of the full chunks.
func (ix *tableIndex) fullString(w uint64, full *[]string) (string, bool) {
	if w&slotOwn != 0 {
		if i := int(uint32(w)); i < len(ix.own) {
			return ix.own[i], true
		}
		return "", false
	}
	length := int(w >> lenShift & (maxChunked - 1))
	if length == 0 {
		return "", true
	}
	c, off := int(w>>chunkBits&(maxChunks-1)), int(w&(maxChunk-1))
	if full == nil || c >= len(*full) {
		return "", false
	}
	return (*full)[c][off : off+length], true
}

// find returns the string of s equal to b, or the empty slot where the probe
// for it ended (-1 in an empty index). It requires s.mu.
func (t *Table) find(s *tableShard, tag uint64, b []byte) (v string, p int, ok bool) {
	ix := s.index.Load()
	if ix == nil {
		return "", -1, false
	}
	n := len(ix.slots)
	for p = home(tag, n); ; {
		w := ix.slots[p] // writers hold mu
		if w == 0 {
			return "", p, false
		}
		if slotTag(w) == tag {
			if v = t.slotString(ix, w); v == string(b) {
				return v, p, true
			}
		}
		if p++; p == n {
			p = 0
		}
	}
}

// slotString returns the string that slot w of ix refers to, ix being its
// shard's current index. It requires the shard's lock.
func (t *Table) slotString(ix *tableIndex, w uint64) string {
	if v, ok := ix.fullString(w, ix.gen.full.Load()); ok {
		return v
	}
	// The current chunk, unless it was filled since.
	t.chunkMu.Lock()
	defer t.chunkMu.Unlock()
	if v, ok := ix.fullString(w, ix.gen.full.Load()); ok {
		return v
	}
	length := int(w >> lenShift & (maxChunked - 1))
	off := int(w & (maxChunk - 1))
	return t.chunk.String()[off : off+length]
}

// generation returns the chunks' current generation. It requires a shard's
// lock, which keeps Reset from replacing it.
func (t *Table) generation() *tableGen {
	if g := t.gen.Load(); g != nil {
		return g
	}
	t.gen.CompareAndSwap(nil, new(tableGen))
	return t.gen.Load()
}

// insert adds b to s, whose probe for it ended at the empty slot p, and
// returns its canonical string. It requires s.mu.
func (t *Table) insert(s *tableShard, tag uint64, p int, b []byte) string {
	v, w := t.store(b)
	ix := s.index.Load()
	if ix == nil {
		ix = &tableIndex{gen: t.generation()}
	}
	if w == 0 {
		// The new version holds the string before any slot refers to it.
		w = slotUsed | slotOwn | uint64(len(ix.own))
		ix = &tableIndex{slots: ix.slots, own: append(ix.own, v), gen: ix.gen}
		if len(ix.slots) > 0 {
			s.index.Store(ix)
		}
	}
	w |= tag << tagShift
	s.n++
	if grown := tableGrow(ix.slots, s.n, w); grown != nil {
		s.index.Store(&tableIndex{slots: grown, own: ix.own, gen: ix.gen})
		return v
	}
	atomic.StoreUint64(&ix.slots[p], w)
	return v
}

// tableGrow returns, if an index of slots is too full to hold n strings, a
// larger one with its slots and w; otherwise nil. At 7/8 full a probe reads
// 4.5 slots on average, almost always in one cache line. An index of 1024
// slots or more grows by a quarter, which keeps it at least 70% full; a
// smaller one doubles.
func tableGrow(slots []uint64, n int, w uint64) []uint64 {
	size := len(slots)
	if n*8 <= size*7 {
		return nil
	}
	if size >= 1024 {
		size += size / 4
	} else {
		size = max(16, 2*size)
	}
	grown := make([]uint64, size)
	for _, x := range slots {
		if x != 0 {
			tablePlace(grown, x)
		}
	}
	tablePlace(grown, w)
	return grown
}

// tablePlace puts slot w in the first empty slot from its home, in an index
// that no lookup sees yet.
func tablePlace(slots []uint64, w uint64) {
	n := len(slots)
	p := home(slotTag(w), n)
	for slots[p] != 0 {
		if p++; p == n {
			p = 0
		}
	}
	slots[p] = w
}

// store copies b into the table's memory. It returns the string and, for a
// string in a chunk, its slot without the tag; 0 for a string with an
// allocation of its own. It requires a shard's lock.
func (t *Table) store(b []byte) (string, uint64) {
	t.chunkMu.Lock()
	defer t.chunkMu.Unlock()
	t.bytes += int64(len(b))
	if len(b) == 0 {
		return "", tableSlot(0, 0, 0, 0)
	}
	if len(b) >= maxChunked {
		t.retained += int64(len(b))
		return string(b), 0
	}
	g := t.generation()
	full := g.full.Load()
	if full == nil {
		full = new([]string)
		g.full.Store(full)
	}
	if t.chunk.Cap()-t.chunk.Len() < len(b) {
		if next := len(*full) + min(t.chunk.Cap(), 1); next >= maxChunks {
			// No chunk number left (4 GiB of chunks at least).
			t.retained += int64(len(b))
			return string(b), 0
		}
		if t.chunk.Cap() > 0 {
			// Retire the current chunk: from now on hits read it without
			// a lock.
			next := append((*full)[:len(*full):len(*full)], t.chunk.String())
			full = &next
			g.full.Store(full)
		}
		// Size the next chunk by what the table holds, so that its unused
		// tail stays a small fraction of it.
		size := min(max(int(t.bytes/32), minChunk), maxChunk)
		t.chunk = strings.Builder{}
		t.chunk.Grow(size)
		t.retained += int64(t.chunk.Cap())
	}
	// strings.Builder only appends within its capacity, so strings cut from
	// String() stay valid and unchanged.
	start := t.chunk.Len()
	t.chunk.Write(b)
	return t.chunk.String()[start:], tableSlot(0, len(b), len(*full), start)
}

// Reset drops every string from the table. Strings returned before stay
// valid; they are freed once nothing references them. An Intern concurrent
// with Reset may return the string from before it.
func (t *Table) Reset() {
	// Every shard's lock, then the chunk's, as Intern takes them: no string
	// is being added meanwhile.
	for i := range t.shards {
		t.shards[i].mu.Lock()
	}
	t.chunkMu.Lock()
	for i := range t.shards {
		s := &t.shards[i]
		s.index.Store(nil)
		s.n = 0
	}
	t.chunk = strings.Builder{}
	t.gen.Store(new(tableGen))
	t.bytes, t.retained = 0, 0
	t.chunkMu.Unlock()
	for i := range t.shards {
		t.shards[i].mu.Unlock()
	}
}

// Stats describes what an interner holds: a plain value, a copy not
// updated afterwards, safe for concurrent use.
type Stats struct {
	Strings int   // distinct strings
	Bytes   int64 // their total length
	// Retained is the memory that holds the strings' bytes: chunk capacity
	// and own allocations for a Table. It excludes the index. Zero for
	// [Unique] and [Go4], whose strings live in their packages.
	Retained int64
}

// Stats returns what the table holds. It locks one shard at a time, so
// under concurrent misses the counts are a moment apart.
func (t *Table) Stats() Stats {
	var st Stats
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		st.Strings += s.n
		s.mu.Unlock()
	}
	t.chunkMu.Lock()
	st.Bytes, st.Retained = t.bytes, t.retained
	t.chunkMu.Unlock()
	return st
}

// handleMap is the front of the [Unique] and [Go4] interners: it holds, per
// canonical string, the handle that keeps the string alive in the backing
// package, so that a hit never reaches that package and the entry does not
// vanish at the next garbage collection while this interner holds it.
//
// Each shard indexes its entries as a [Table] shard indexes its strings:
// slots of a tag and the entry's number, probed without a lock in the
// version of the index that a hit loads.
type handleMap[H any] struct {
	shards [shards]handleShard[H]
}

type handleEntry[H any] struct {
	s string
	h H
}

type handleShard[H any] struct {
	mu    sync.Mutex
	index atomic.Pointer[handleIndex[H]] // nil while empty; replaced under mu
	bytes int64                          // guarded by mu
	_     [64]byte
}

// handleIndex is a version of a handleShard's index: slots hold a tag and an
// entry's number. Every new entry makes a new version, which shares the
// slots (filled with sync/atomic) and appends to the entries beyond the
// length of earlier versions, which never changes.
type handleIndex[H any] struct {
	slots   []uint64
	entries []handleEntry[H]
}

// find returns the string of ix equal to b, or the empty slot where the
// probe for it ended (-1 in an empty index, or if the string may be in a
// later version).
func (ix *handleIndex[H]) find(tag uint64, b []byte) (string, int, bool) {
	n := len(ix.slots)
	if n == 0 {
		return "", -1, false
	}
	for p := home(tag, n); ; {
		w := atomic.LoadUint64(&ix.slots[p])
		if w == 0 {
			return "", p, false
		}
		if slotTag(w) == tag {
			i := int(uint32(w))
			if i >= len(ix.entries) {
				return "", -1, false
			}
			if e := &ix.entries[i]; e.s == string(b) {
				return e.s, p, true
			}
		}
		if p++; p == n {
			p = 0
		}
	}
}

func (f *handleMap[H]) intern(b []byte, canon func([]byte) (string, H)) string {
	return f.internHash(maphash.Bytes(seed, b), b, canon)
}

// internHash is intern with the hash of b given.
func (f *handleMap[H]) internHash(h uint64, b []byte, canon func([]byte) (string, H)) string {
	s := &f.shards[h%shards]
	tag := h >> (64 - tagBits)
	if ix := s.index.Load(); ix != nil {
		if v, _, ok := ix.find(tag, b); ok {
			return v
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.index.Load()
	if ix == nil {
		ix = &handleIndex[H]{}
	}
	// The current version has every entry: the probe is the last word.
	v, p, ok := ix.find(tag, b)
	if ok {
		return v
	}
	var e handleEntry[H]
	e.s, e.h = canon(b)
	s.bytes += int64(len(b))
	w := slotUsed | tag<<tagShift | uint64(len(ix.entries))
	next := &handleIndex[H]{slots: ix.slots, entries: append(ix.entries, e)}
	if grown := tableGrow(ix.slots, len(next.entries), w); grown != nil {
		next.slots = grown
		s.index.Store(next)
		return e.s
	}
	// The version holds the entry before a slot refers to it.
	s.index.Store(next)
	atomic.StoreUint64(&next.slots[p], w)
	return e.s
}

func (f *handleMap[H]) reset() {
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		s.index.Store(nil)
		s.bytes = 0
		s.mu.Unlock()
	}
}

func (f *handleMap[H]) stats() Stats {
	var st Stats
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		if ix := s.index.Load(); ix != nil {
			st.Strings += len(ix.entries)
		}
		st.Bytes += s.bytes
		s.mu.Unlock()
	}
	return st
}

// Unique is an labels.Interner backed by the standard library's [unique] package.
// It holds the [unique.Handle] of every string it has returned, so that the
// string stays canonical across garbage collections (a handle that is
// dropped lets unique forget the value, and the next Make copies it again), and
// answers hits from its own map without allocating. A miss calls
// [unique.Make], which copies the bytes once if the process has not seen them.
//
// Pick Unique when other code in the process makes the same strings canonical
// with unique (Prometheus's slicelabels ScratchBuilder does), so that both
// share one copy; otherwise [Table] retains less. Strings are released by
// [Unique.Reset], after which unique frees those nothing else holds.
//
// The zero value is ready to use. A Unique must not be copied after first
// use. It is safe for concurrent use by multiple goroutines.
type Unique struct {
	f handleMap[unique.Handle[string]]
}

// Intern returns the canonical string for b.
//
// Intern makes no allocation on a hit; a miss copies b at most once.
func (u *Unique) Intern(b []byte) string { return u.f.intern(b, makeUnique) }

func makeUnique(b []byte) (string, unique.Handle[string]) {
	// unique.Make clones a string before it stores it, so handing it a
	// string that aliases b is safe and saves a copy when the value is known.
	h := unique.Make(bytestr.String(b))
	return h.Value(), h
}

// Reset drops every handle the interner holds.
func (u *Unique) Reset() { u.f.reset() }

// Stats returns what the interner holds.
func (u *Unique) Stats() Stats { return u.f.stats() }

// Go4 is an labels.Interner backed by go4.org/intern. Like [Unique] it holds the
// [intern.Value] of every string it has returned, so that the value survives
// garbage collections, and answers hits from its own map without allocating.
// A miss copies the bytes once: go4.org/intern takes a string that it may
// keep, so the bytes must be copied before it is asked.
//
// Pick Go4 when other code in the process interns the same strings with
// go4.org/intern; otherwise [Table] retains less and [Unique] misses faster
// (go4.org/intern serialises every lookup on one process-wide mutex).
//
// The zero value is ready to use. A Go4 must not be copied after first use.
// It is safe for concurrent use by multiple goroutines.
type Go4 struct {
	f handleMap[*intern.Value]
}

// Intern returns the canonical string for b.
//
// Intern makes no allocation on a hit; a miss copies b once.
func (g *Go4) Intern(b []byte) string { return g.f.intern(b, makeGo4) }

func makeGo4(b []byte) (string, *intern.Value) {
	v := intern.GetByString(string(b))
	return v.Get().(string), v
}

// Reset drops every value the interner holds.
func (g *Go4) Reset() { g.f.reset() }

// Stats returns what the interner holds.
func (g *Go4) Stats() Stats { return g.f.stats() }
