package labels

import (
	"strings"
	"sync"
	"unique"

	"github.com/cespare/xxhash/v2"
	"go4.org/intern"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

// Interner returns a canonical string for the bytes it is given, so that
// label strings that outlive a request are stored once however many series
// and requests carry them.
//
// Intern must not retain b: the caller may change its bytes after the call.
// The returned string never aliases b. Implementations are safe for concurrent
// use by multiple goroutines.
type Interner interface {
	Intern(b []byte) string
}

// shards is the number of independently locked parts of each interner; 32
// keeps the fixed cost of an interner near 4 KiB. Other counts were not
// measured: BenchmarkInternParallel gives the hit path from all cores at this
// count (on 2 cores, about twice the sequential cost per op per core).
const shards = 32

func shardOf(b []byte) int { return int(xxhash.Sum64(b) % shards) }

// Table is ingestkit's own [Interner]. A hit costs a map lookup and no
// allocation or copy; a miss copies the bytes once into a chunk shared with
// other strings, so that short strings do not each pay for a heap object and
// its size-class rounding. Chunks grow with the table, to 1/32 of what it
// holds and at most 64 KiB, and hold strings shorter than 1 KiB; longer
// strings get an allocation of their own. Retained memory is the strings'
// bytes, the unused tail of the current chunk (at most 1/32 of the table
// once it holds 32 KiB), and the index: a map entry per string, with the
// string as key and as value. TestTableRetained holds the bytes kept for the
// strings within 5% of their length; with the index, BenchmarkIntern's
// heap-B/B measures 2.75 bytes held per byte of distinct ~35-byte strings.
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

	// Misses take chunkMu after their shard's lock. One chunk for all shards
	// keeps the unused tail to one chunk per table, not one per shard.
	chunkMu  sync.Mutex
	chunk    strings.Builder // guarded by chunkMu; strings alias its buffer
	bytes    int64           // guarded by chunkMu: length of all strings
	retained int64           // guarded by chunkMu: chunk capacity and own allocations
}

type tableShard struct {
	mu sync.Mutex
	m  map[string]string // guarded by mu
	_  [64]byte          // keeps shards' hot fields on separate cache lines
}

const (
	minChunk   = 1 << 10
	maxChunk   = 64 << 10
	maxChunked = 1 << 10 // strings this long or longer get their own allocation
)

// Intern returns the canonical string for b.
//
// Intern makes no allocation on a hit; on a miss it copies b once, into a
// shared chunk, allocating a new chunk when the current one is full.
func (t *Table) Intern(b []byte) string {
	s := &t.shards[shardOf(b)]
	s.mu.Lock()
	v, ok := s.m[string(b)]
	if !ok {
		if s.m == nil {
			s.m = make(map[string]string)
		}
		v = t.store(b)
		s.m[v] = v
	}
	s.mu.Unlock()
	return v
}

// store copies b into the table's memory.
func (t *Table) store(b []byte) string {
	t.chunkMu.Lock()
	defer t.chunkMu.Unlock()
	t.bytes += int64(len(b))
	if len(b) >= maxChunked {
		t.retained += int64(len(b))
		return string(b)
	}
	if t.chunk.Cap()-t.chunk.Len() < len(b) {
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
	return t.chunk.String()[start:]
}

// Reset drops every string from the table. Strings returned before stay
// valid; they are freed once nothing references them.
func (t *Table) Reset() {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.m = nil
		s.mu.Unlock()
	}
	t.chunkMu.Lock()
	t.chunk = strings.Builder{}
	t.bytes, t.retained = 0, 0
	t.chunkMu.Unlock()
}

// InternStats describes what an interner holds.
type InternStats struct {
	Strings int   // distinct strings
	Bytes   int64 // their total length
	// Retained is the memory that holds the strings' bytes: chunk capacity
	// and own allocations for a Table. It excludes the index. Zero for
	// [Unique] and [Go4], whose strings live in their packages.
	Retained int64
}

// Stats returns what the table holds. It locks one shard at a time, so
// under concurrent misses the counts are a moment apart.
func (t *Table) Stats() InternStats {
	var st InternStats
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		st.Strings += len(s.m)
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
type handleMap[H any] struct {
	shards [shards]handleShard[H]
}

type handleEntry[H any] struct {
	s string
	h H
}

type handleShard[H any] struct {
	mu    sync.Mutex
	m     map[string]handleEntry[H] // guarded by mu
	bytes int64                     // guarded by mu
	_     [64]byte
}

func (f *handleMap[H]) intern(b []byte, canon func([]byte) (string, H)) string {
	s := &f.shards[shardOf(b)]
	s.mu.Lock()
	e, ok := s.m[string(b)]
	if !ok {
		if s.m == nil {
			s.m = make(map[string]handleEntry[H])
		}
		e.s, e.h = canon(b)
		s.m[e.s] = e
		s.bytes += int64(len(b))
	}
	s.mu.Unlock()
	return e.s
}

func (f *handleMap[H]) reset() {
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		s.m = nil
		s.bytes = 0
		s.mu.Unlock()
	}
}

func (f *handleMap[H]) stats() InternStats {
	var st InternStats
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		st.Strings += len(s.m)
		st.Bytes += s.bytes
		s.mu.Unlock()
	}
	return st
}

// Unique is an [Interner] backed by the standard library's [unique] package.
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
func (u *Unique) Stats() InternStats { return u.f.stats() }

// Go4 is an [Interner] backed by go4.org/intern. Like [Unique] it holds the
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
func (g *Go4) Stats() InternStats { return g.f.stats() }
