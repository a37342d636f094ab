package exemplars

import (
	"math/rand/v2"

	"github.com/prometheus/prometheus/model/labels"
)

// index finds the first series with a hash (seriesEntry.link chains the
// others): an open-addressing table with linear probing, at most half
// full, of 8-byte slots that hold a series' id and a tag folded from its
// hash. A slot whose tag matches is confirmed by the hash in the series'
// entry, which a lookup reads next anyway for its labels, so that a hit
// costs one slot and the entry. It replaces a map[uint64]uint32, whose
// lookup was the largest part of an add to a full ring
// (BenchmarkAddExemplarSteady). A slot's place is the top bits of the
// hash times an odd multiplier drawn at random for each table: a hash
// the caller gives may be any 64-bit hash, and the random multiplier
// keeps hashes that share low bits, or that are chosen to collide, from
// piling into one run. The zero value is an empty index.
type index struct {
	slots []indexSlot // nil, or a power of two long; guarded by the ring's mu

	// hints, as long as slots in a build where identities is true and
	// empty otherwise, find series by the address of their labels' data
	// (ident_unsafe.go), so that an add of the labels a series was added
	// with does not hash them (BenchmarkAddExemplarSteady, impl=ingestkit).
	// The pair at home(address)&^1 holds the ids of the latest series
	// looked up by an address there, the newer first, or 0. A hint is
	// never cleared: hinted confirms it with the series' labels, so that a
	// stale one, of a series since removed or of an id since reused, is
	// only a miss. Guarded by the ring's mu.
	hints []uint32

	mult  uint64 // odd; drawn when slots are allocated
	shift uint   // 64 - log2(len(slots))
	n     int    // occupied slots
}

// indexSlot is one slot of an index: id 0 marks an empty one.
type indexSlot struct {
	tag uint32 // tagOf the hash of series id
	id  uint32
}

// minIndex is the fewest slots an index allocates.
const minIndex = 16

// tagOf folds a hash to the tag its slot keeps.
func tagOf(hash uint64) uint32 { return uint32(hash ^ hash>>32) }

// makeIndex returns an index with room for n series.
func makeIndex(n int) index {
	var x index
	x.alloc(n)
	return x
}

// alloc gives x empty slots, room for n series at most half full.
func (x *index) alloc(n int) {
	size := minIndex
	for size < 2*n {
		size *= 2
	}
	shift := uint(64)
	for s := size; s > 1; s >>= 1 {
		shift--
	}
	*x = index{slots: make([]indexSlot, size), mult: rand.Uint64() | 1, shift: shift}
	if identities {
		x.hints = make([]uint32, size)
	}
}

// home returns the slot where the probe for hash starts.
func (x *index) home(hash uint64) uint64 { return (hash * x.mult) >> x.shift }

// find returns the position of the slot of the series with hash, and
// whether there is one; if not, the position is that of the empty slot
// where it would go. x must have slots.
func (x *index) find(series []seriesEntry, hash uint64) (uint64, bool) {
	mask := uint64(len(x.slots) - 1)
	tag := tagOf(hash)
	for i := x.home(hash); ; i = (i + 1) & mask {
		s := x.slots[i&mask]
		if s.id == 0 {
			return i, false
		}
		if s.tag == tag && series[s.id].hash == hash {
			return i, true
		}
	}
}

// head returns the first series with hash, or 0. It is find's loop
// again rather than a call of it: it is on the path of every add.
func (x *index) head(series []seriesEntry, hash uint64) uint32 {
	if x.n == 0 {
		return 0
	}
	mask := uint64(len(x.slots) - 1)
	for i := x.home(hash); ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.id == 0 || s.tag == tagOf(hash) && series[s.id].hash == hash {
			return s.id
		}
	}
}

// hinted returns the series whose labels have the data of ls, whose address
// is key, if the hint of the given way (0, the newer, or 1) names it, or 0.
// It inlines, for the first way, into [Ring.AddExemplar].
func (x *index) hinted(series []seriesEntry, key uint64, ls labels.Labels, way uint64) uint32 {
	if len(x.hints) == 0 {
		return 0
	}
	// A hint names an id below len(series): series is never shortened
	// but with the index, by a resize to zero, and its ids are only
	// ever hinted after they are allocated.
	if id := x.hints[x.home(key)&^1|way]; sameData(series[id].lset, ls) {
		return id
	}
	return 0
}

// hint records that key, the address of a label set's data, finds series
// id, in front of the pair's newer hint, which becomes the older.
func (x *index) hint(key uint64, id uint32) {
	if len(x.hints) == 0 {
		return
	}
	i := x.home(key) &^ 1
	x.hints[i+1], x.hints[i] = x.hints[i], id
}

// set makes id the first series with hash, whose entry in series holds
// hash. It allocates when the index grows.
func (x *index) set(series []seriesEntry, hash uint64, id uint32) {
	if x.slots == nil {
		x.alloc(1)
	} else if 2*(x.n+1) > len(x.slots) {
		x.grow(series)
	}
	i, ok := x.find(series, hash)
	if !ok {
		x.n++
	}
	x.slots[i] = indexSlot{tag: tagOf(hash), id: id}
}

// grow doubles the slots of x and puts the series back.
func (x *index) grow(series []seriesEntry) {
	old := x.slots
	x.alloc(len(old))
	mask := uint64(len(x.slots) - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		i := x.home(series[s.id].hash)
		for x.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
		x.n++
	}
}

// remove takes the slot of hash out of x, moving back the slots after it
// in its run that may move, so that every probe still reaches its slot
// without crossing an empty one. Series still hold their hashes.
func (x *index) remove(series []seriesEntry, hash uint64) {
	i, ok := x.find(series, hash)
	if !ok {
		panic("exemplars: removing a hash the index does not have")
	}
	mask := uint64(len(x.slots) - 1)
	for j := (i + 1) & mask; x.slots[j].id != 0; j = (j + 1) & mask {
		// The slot at j may fill i if i lies on its probe, from its home
		// to j.
		h := x.home(series[x.slots[j].id].hash)
		if (j-h)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = indexSlot{}
	x.n--
}
