package postings

import (
	"encoding/binary"
	"math/bits"
)

// sortedRefs is a sorted list of series refs: a postings list as read
// ([rawList]) or decoded ([u32List]).
type sortedRefs interface {
	Len() int
	At(i int) uint32
}

// rawList is a postings list as stored: big-endian uint32 refs.
type rawList []byte

func (l rawList) Len() int        { return len(l) / 4 }
func (l rawList) At(i int) uint32 { return binary.BigEndian.Uint32(l[4*i:]) }
func (l rawList) appendTo(dst []uint32) []uint32 {
	for i := 0; i+4 <= len(l); i += 4 {
		dst = append(dst, binary.BigEndian.Uint32(l[i:]))
	}
	return dst
}

// u32List is a decoded list.
type u32List []uint32

func (l u32List) Len() int        { return len(l) }
func (l u32List) At(i int) uint32 { return l[i] }

// seek returns the first index i >= from with l.At(i) >= x, or l.Len(). It
// gallops, so that intersecting a short list with a long one costs the
// short one's length times the log of the long one's.
func seek[L sortedRefs](l L, from int, x uint32) int {
	n := l.Len()
	if from >= n || l.At(from) >= x {
		return from
	}
	// l.At(lo) < x; find hi with l.At(hi) >= x or hi == n.
	lo, step := from, 1
	hi := lo + step
	for hi < n && l.At(hi) < x {
		lo = hi
		step *= 2
		hi = lo + step
	}
	hi = min(hi, n)
	// Invariant: l.At(lo) < x, and hi == n or l.At(hi) >= x.
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if l.At(m) < x {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// intersect keeps the refs of a that are in b, in place.
func intersect[L sortedRefs](a []uint32, b L) []uint32 {
	out := a[:0]
	j, n := 0, b.Len()
	for _, x := range a {
		j = seek(b, j, x)
		if j == n {
			break
		}
		if b.At(j) == x {
			out = append(out, x)
		}
	}
	return out
}

// subtract removes the refs of b from a, in place.
func subtract[L sortedRefs](a []uint32, b L) []uint32 {
	out := a[:0]
	j, n := 0, b.Len()
	for i, x := range a {
		j = seek(b, j, x)
		if j == n {
			return append(out, a[i:]...)
		}
		if b.At(j) != x {
			out = append(out, x)
		}
	}
	return out
}

// appendBits appends the positions of the set bits of bm, in order.
func appendBits(dst []uint32, bm []uint64) []uint32 {
	for w, word := range bm {
		for word != 0 {
			dst = append(dst, uint32(w*64+bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return dst
}
