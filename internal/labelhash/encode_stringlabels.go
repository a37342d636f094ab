//go:build !slicelabels && !dedupelabels

package labelhash

// writePair appends a pair in the encoding of stringlabels' Labels.data, over
// which Labels.Hash is the xxhash: each string is preceded by its length, one
// byte for 0..254, or 0xff and the length's three low bytes little-endian.
// Prometheus writes lengths of 2^24 and more truncated to three bytes; so does
// this, so that the hash stays that of the Labels Prometheus would build.
func writePair[S ~string | ~[]byte](b *bufDigest, name, value S) {
	if b.tryPair(len(name), len(value)) {
		n := b.n
		b.n = n + putPairString(b.buf[n:n+len(name)+len(value)+pairOverhead], name, value)
		return
	}
	writeSize(b, len(name))
	write(b, name)
	writeSize(b, len(value))
	write(b, value)
}

func writeSize(b *bufDigest, v int) {
	if v < 255 {
		b.writeByte(byte(v))
		return
	}
	b.writeByte(255)
	b.writeByte(byte(v))
	b.writeByte(byte(v >> 8))
	b.writeByte(byte(v >> 16))
}

// pairOverhead is what a short pair adds to its name and value: two length
// bytes.
const pairOverhead = 2

// tryPair reports whether a pair of these lengths takes the short encoding
// and fits in the buffer.
func (b *bufDigest) tryPair(nameLen, valueLen int) bool {
	return nameLen < 255 && valueLen < 255 && nameLen+valueLen+pairOverhead <= bufSize-b.n
}

// writePairBytes is writePair for byte slices, with the short pair that
// fits the buffer copied by put.
func (b *bufDigest) writePairBytes(name, value []byte) {
	if !b.tryPair(len(name), len(value)) {
		writePair(b, name, value)
		return
	}
	n := b.n
	b.buf[n] = byte(len(name))
	n = put(&b.buf, n+1, name)
	b.buf[n] = byte(len(value))
	b.n = put(&b.buf, n+1, value)
}

// writePairsBytes is writePairBytes for each pair in turn, in one loop
// without a call per pair for those that fit the buffer.
//
// The loop keeps the position in a local, stored back only around the slow
// path, and indexes buf with it masked to bufSize-1, which the fit check
// makes a no-op: the compiler then drops the bounds checks of the stores
// (BenchmarkHash, impl=ingestkit-pairs).
//
// The first case is the pair that a decoder hands over: views of a request
// body, whose capacity runs past the pair to the body's end, with a name of
// at most 16 bytes and a value of at most 48. It is written with one check
// and 16-byte moves, whatever the lengths within those bounds; the bytes
// past each string land past its end in buf, as with put, and a pair that
// starts at fastPairMax at the latest ends its moves within bufSize.
func (b *bufDigest) writePairsBytes(ps []Pair) {
	n := b.n
	for i := range ps {
		name, value := ps[i].Name, ps[i].Value
		if uint(len(name)) <= 16 && uint(len(value)) <= 48 && cap(name) >= 16 && cap(value) >= 48 && n <= fastPairMax {
			n &= bufSize - 1 // n <= fastPairMax: a no-op that drops the bounds checks
			b.buf[n] = byte(len(name))
			*(*[16]byte)(b.buf[n+1:]) = [16]byte(name[:16])
			n += 1 + len(name)
			n &= bufSize - 1 // still below bufSize-48
			b.buf[n] = byte(len(value))
			if len(value) > 16 {
				put48(&b.buf, n+1, value)
			} else {
				*(*[16]byte)(b.buf[n+1:]) = [16]byte(value[:16])
			}
			n += 1 + len(value)
			continue
		}
		if len(name)|len(value) >= 255 || len(name)+len(value)+pairOverhead > bufSize-n {
			// Long, or not in the buffer: the general encoding.
			b.n = n
			writePair(b, name, value)
			n = b.n
			continue
		}
		n &= bufSize - 1 // n < bufSize: the pair fits
		b.buf[n] = byte(len(name))
		n = put(&b.buf, n+1, name)
		n &= bufSize - 1 // n < bufSize: the value and its length follow
		b.buf[n] = byte(len(value))
		if len(value) > 16 && len(value) <= 48 && cap(value) >= 48 {
			// A longer value, such as a metric name.
			put48(&b.buf, n+1, value)
			n += 1 + len(value)
			continue
		}
		n = put(&b.buf, n+1, value)
	}
	b.n = n
}

// putPairString writes a short pair into buf, which has exactly its size,
// and returns that size.
func putPairString[S ~string | ~[]byte](buf []byte, name, value S) int {
	buf[0] = byte(len(name))
	copy(buf[1:], name)
	buf[1+len(name)] = byte(len(value))
	copy(buf[2+len(name):], value)
	return len(buf)
}
