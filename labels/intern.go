package labels

import "github.com/ingestkit/ingestkit/internal/strtable"

// Interner returns a canonical string for the bytes it is given, so that
// label strings that outlive a request are stored once however many series
// and requests carry them.
//
// Intern must not retain b: the caller may change its bytes after the call.
// The returned string never aliases b. Implementations are safe for concurrent
// use by multiple goroutines.
//
// Interner is the module's one named interface for interning. Package
// ingest, which imports no other public package, takes an interner as the
// unnamed interface{ Intern(b []byte) string }, which every Interner
// satisfies.
type Interner interface {
	Intern(b []byte) string
}

// Table is ingestkit's own [Interner]. A hit costs a probe of a flat index,
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
// per string. TestTableRetained (internal/strtable) holds the bytes kept for the strings within
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
	t strtable.Table
}

// Intern returns the canonical string for b. A hit makes no allocation.
func (t *Table) Intern(b []byte) string { return t.t.Intern(b) }

// Reset drops every string from the table. Strings returned before stay
// valid; they are freed once nothing references them. An Intern concurrent
// with Reset may return the string from before it.
func (t *Table) Reset() { t.t.Reset() }

// Stats returns what the table holds. It locks one shard at a time, so
// under concurrent misses the counts are a moment apart.
func (t *Table) Stats() InternStats { return InternStats(t.t.Stats()) }

// InternStats describes what an interner holds: a plain value, a copy not
// updated afterwards, safe for concurrent use.
type InternStats struct {
	Strings int   // distinct strings
	Bytes   int64 // their total length
	// Retained is the memory that holds the strings' bytes: chunk capacity
	// and own allocations for a Table. It excludes the index. Zero for
	// [Unique] and [Go4], whose strings live in their packages.
	Retained int64
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
	u strtable.Unique
}

// Intern returns the canonical string for b.
//
// Intern makes no allocation on a hit; a miss copies b at most once.
func (u *Unique) Intern(b []byte) string { return u.u.Intern(b) }

// Reset drops every handle the interner holds.
func (u *Unique) Reset() { u.u.Reset() }

// Stats returns what the interner holds.
func (u *Unique) Stats() InternStats { return InternStats(u.u.Stats()) }

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
	g strtable.Go4
}

// Intern returns the canonical string for b.
//
// Intern makes no allocation on a hit; a miss copies b once.
func (g *Go4) Intern(b []byte) string { return g.g.Intern(b) }

// Reset drops every value the interner holds.
func (g *Go4) Reset() { g.g.Reset() }

// Stats returns what the interner holds.
func (g *Go4) Stats() InternStats { return InternStats(g.g.Stats()) }
