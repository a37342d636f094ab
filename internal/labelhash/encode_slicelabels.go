//go:build slicelabels || dedupelabels

package labelhash

// writePair appends "name 0xff value 0xff", the bytes over which the
// slicelabels and dedupelabels Labels.Hash take the xxhash. Above 1 KiB
// Prometheus switches to a streaming digest; the xxhash of the stream is the
// same, so this needs no special case.
func writePair[S ~string | ~[]byte](b *bufDigest, name, value S) {
	writeSepPair(b, name, value)
}

// pairOverhead is what a pair adds to its name and value: two separators.
const pairOverhead = 2

// tryPair reports whether a pair of these lengths fits in the buffer.
func (b *bufDigest) tryPair(nameLen, valueLen int) bool {
	return nameLen+valueLen+pairOverhead <= bufSize-b.n
}

// writePairBytes is writePair for byte slices, copied by put.
func (b *bufDigest) writePairBytes(name, value []byte) {
	writeSepPairBytes(b, name, value)
}

// writePairsBytes is writePairBytes for each pair in turn.
func (b *bufDigest) writePairsBytes(ps []Pair) {
	writeSepPairsBytes(b, ps)
}

// putPairString writes a pair into buf, which has exactly its size, and
// returns that size.
func putPairString[S ~string | ~[]byte](buf []byte, name, value S) int {
	copy(buf, name)
	buf[len(name)] = sep
	copy(buf[len(name)+1:], value)
	buf[len(buf)-1] = sep
	return len(buf)
}
