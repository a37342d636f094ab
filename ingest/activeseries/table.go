package activeseries

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
)

// trackerStripe is one independently locked part of a Tracker: its series
// in a trackerTable.
type trackerStripe struct {
	// table is the stripe's index and entries, nil while the stripe is
	// empty. A writer that changes more than an empty slot of the index
	// stores a new table (see trackerTable), so that a lookup that loaded
	// the table once sees one consistent version of it. It has a cache
	// line of its own, which updates of tracked series only read, apart
	// from the lock, which every new series writes: a lookup that misses
	// and then locks would otherwise move the line between cores twice.
	table atomic.Pointer[trackerTable]
	_     [56]byte

	// mu serialises the stripe's writers: inserts of new series, changes
	// of a series' histogram state, and purges. Lookups take no lock.
	mu sync.Mutex

	// oldest is at most the last-seen time of every entry, so that Purge
	// skips the stripe without locking it while keepFrom <= oldest. Times
	// only grow, so updates need not touch it: inserts lower it and purges
	// set it, under mu; Purge reads it without. Atomic.
	oldest atomic.Int64

	// custom is the version of the custom trackers that the masks of the
	// stripe's entries refer to, and whose counters its series count in;
	// guarded by mu.
	custom *customSet

	used uint32 // entries of table in use, all indexed; guarded by mu

	_ [36]byte // 128 bytes a stripe, in two cache lines
}

// trackerTable is a version of a stripe's series.
//
// index is a linear-probing table of tag<<32 | (entry number + 1), 0 for an
// empty slot, where tag is the high half of the series' hash. A slot's home
// is tag*len(index)>>32, so the table keeps the order of the tags, and
// growing it is a near-sequential merge. Once the table is stored in its
// stripe, its slots are read and written with sync/atomic, and the only
// change is an empty slot taking a series: lookups without the lock see
// series that are being added or not, and never a slot that moves.
//
// chunks hold the entries: chunk k holds trackerChunkLen(k) of them, 16
// in each of the first 64 chunks and 1024 in each chunk after, so that a
// small stripe wastes less than 16 entries and a large one never copies
// entries. The slice is as long as its array: chunks not yet allocated are
// empty, and a new chunk goes in the array, without a new table while the
// array has room. An entry and its chunk are written before its slot is
// stored, so that a lookup that loads the slot finds them, whatever the
// version it started with: but for an entry in a chunk beyond the
// version's array, which a lookup treats as a miss, to look again under
// the lock. An entry then never changes but for its time and histogram
// state, set with sync/atomic.
//
// Entries are never reused. A purge marks every entry of the old version
// dead (trackerDead) as it drops it or copies it to the new one, so that an
// update that found it through the old version fails its compare-and-swap
// and looks again under the lock, after the purge. The old version is the
// garbage collector's once the lookups that hold it are done.
type trackerTable struct {
	index  []uint64
	chunks [][]trackerEntry
}

// trackerEntry is a series: 32 bytes in the stringlabels build, 40 in the
// slicelabels and dedupelabels builds.
type trackerEntry struct {
	// 64-bit alignment of last and meta for sync/atomic, on 32-bit
	// platforms too.
	_ [0]atomic.Int64
	// last is the last-seen time, trackerDead once a purge has dropped or
	// moved the entry. Written with sync/atomic once the entry is indexed.
	last int64
	// meta is the custom trackers the series matched (low 32 bits) and its
	// histogram state (high 32 bits: 0 for a float series, buckets+1 for a
	// native histogram series). Written under the stripe's lock, with
	// sync/atomic once the entry is indexed, read without the lock.
	meta uint64
	// lset is the series' labels, the caller's own (the TSDB's). Written
	// once, before the entry is indexed.
	lset labels.Labels
}

// trackerChunkLen is the number of entries of chunk k.
func trackerChunkLen(k int) int {
	if k < trackerPages {
		return trackerPageLen
	}
	return 1 << trackerChunkShift
}

// trackerCapacity returns the number of entries that the first k chunks
// hold.
func trackerCapacity(k int) uint32 {
	if k <= trackerPages {
		return uint32(k) * trackerPageLen
	}
	return uint32(k-trackerPages+trackerSmall>>trackerChunkShift) << trackerChunkShift
}

// trackerChunkOf returns the chunk of entry i and i's place in it.
func trackerChunkOf(i uint32) (k int, j uint32) {
	if i < trackerSmall {
		return int(i / trackerPageLen), i % trackerPageLen
	}
	i -= trackerSmall
	return trackerPages + int(i>>trackerChunkShift), i & (1<<trackerChunkShift - 1)
}

// trackerEntryAt returns entry i of chunks.
func trackerEntryAt(chunks [][]trackerEntry, i uint32) *trackerEntry {
	k, j := trackerChunkOf(i)
	return &chunks[k][j]
}

// trackerAddChunk allocates chunk k of chunks, in a new array if chunks is
// too short, which it reports.
func trackerAddChunk(chunks [][]trackerEntry, k int) ([][]trackerEntry, bool) {
	grown := k >= len(chunks)
	if grown {
		// Chunks are allocated in order: only chunks[:k] are in use.
		c := make([][]trackerEntry, max(4, 2*len(chunks)))
		copy(c, chunks)
		chunks = c
	}
	chunks[k] = make([]trackerEntry, trackerChunkLen(k))
	return chunks, grown
}

// find returns the entry of the series with tag and labels ls, and its
// slot, or, if there is none, nil and the empty slot where the lookup ended,
// or -1 if the series may be in a later version of the table. Lookups
// without the stripe's lock use it.
func (tb *trackerTable) find(tag uint32, ls labels.Labels) (*trackerEntry, int) {
	index := tb.index
	n := uint64(len(index))
	chunks := tb.chunks
	for p := trackerHome(tag, n); ; {
		v := atomic.LoadUint64(&index[p])
		if v == 0 {
			return nil, int(p)
		}
		if uint32(v>>32) == tag {
			i := uint32(v) - 1
			k, j := trackerChunkOf(i)
			if k >= len(chunks) {
				// Added in a chunk of a later version.
				return nil, -1
			}
			if e := &chunks[k][j]; labels.Equal(e.lset, ls) {
				return e, int(p)
			}
		}
		if p++; p == n {
			p = 0
		}
	}
}

// insert adds a series with the given labels, time and meta to the stripe,
// whose current table is tb (nil if the stripe is empty), in slot, the empty
// slot where its lookup in tb ended. It requires s.mu.
func (s *trackerStripe) insert(tb *trackerTable, slot int, tag uint32, ls labels.Labels, now int64, meta uint64) {
	i := s.used
	if i == math.MaxUint32-1 {
		panic("activeseries: Tracker stripe holds 2^32-2 series; use more stripes")
	}
	var index []uint64
	var chunks [][]trackerEntry
	if tb != nil {
		index, chunks = tb.index, tb.chunks
	}
	newChunks := false
	if k, j := trackerChunkOf(i); j == 0 {
		chunks, newChunks = trackerAddChunk(chunks, k)
	}
	e := trackerEntryAt(chunks, i)
	e.last, e.meta, e.lset = now, meta, ls
	v := uint64(tag)<<32 | uint64(i+1)
	// At 7/8 full, a lookup reads 4.5 slots on average, all but always in
	// one or two cache lines. An index of 1024 slots or more then grows by
	// a quarter, which keeps it at least 70% full, at most 11.4 bytes per
	// series; a smaller one doubles, which halves the copies and the
	// garbage of growing it (BenchmarkTrackerUpdate, state=new) where its
	// slack costs 8 KiB at most.
	switch n := uint64(len(index)); {
	case (uint64(i)+1)*8 > n*7:
		size := max(16, 2*n)
		if n >= 1024 {
			size = n + n/4
		}
		grown := trackerRehash(index, size)
		trackerPlace(grown, tag, i)
		s.table.Store(&trackerTable{index: grown, chunks: chunks})
	case newChunks:
		// The array of chunks must be in the version that lookups find
		// the slot in.
		s.table.Store(&trackerTable{index: index, chunks: chunks})
		atomic.StoreUint64(&index[slot], v)
	default:
		atomic.StoreUint64(&index[slot], v)
	}
	s.used++
}

// trackerRehash returns a new index of size slots with the series of
// index, which no writer changes meanwhile.
func trackerRehash(index []uint64, size uint64) []uint64 {
	grown := make([]uint64, size)
	for _, w := range index {
		if w != 0 {
			trackerPlace(grown, uint32(w>>32), uint32(w)-1)
		}
	}
	return grown
}

// trackerHome returns the slot of an index of n slots where the probe for
// tag starts, by which find, trackerPlace and touchBatch agree.
func trackerHome(tag uint32, n uint64) uint64 { return uint64(tag) * n >> 32 }

// trackerPlace puts entry i with tag in the first empty slot from its home,
// in an index that no lookup sees yet.
func trackerPlace(index []uint64, tag, i uint32) {
	n := uint64(len(index))
	p := trackerHome(tag, n)
	for index[p] != 0 {
		if p++; p == n {
			p = 0
		}
	}
	index[p] = uint64(tag)<<32 | uint64(i+1)
}

// trackerNewChunks returns the chunks for n entries, all in one array.
func trackerNewChunks(n uint32) [][]trackerEntry {
	k := 0
	for trackerCapacity(k) < n {
		k++
	}
	all := make([]trackerEntry, trackerCapacity(k))
	chunks := make([][]trackerEntry, max(k, 4))
	for i := range k {
		c := trackerChunkLen(i)
		chunks[i], all = all[:c:c], all[c:]
	}
	return chunks
}

// trackerIndexLen returns the length of an index for live series, 70%
// full, as right after a growth.
func trackerIndexLen(live uint32) uint64 {
	return max(16, uint64(live)*10/7+1)
}
