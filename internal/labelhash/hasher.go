package labelhash

import "github.com/cespare/xxhash/v2"

// sep is the byte Prometheus puts after each name and value when it hashes
// labels as "name sep value sep" (slicelabels, dedupelabels, Thanos).
const sep = 0xff

// bufSize is the size of the buffer that collects short strings before they
// reach the digest. Prometheus's slicelabels Hash uses the same 1 KiB: label
// sets below it are hashed with one xxhash.Sum64 call, which is faster than
// the streaming digest for short inputs.
const bufSize = 1024

// slack is the room past bufSize that [put] and writePairsBytes may write
// into: they copy a string of up to 16 (put) or 48 bytes (the values of
// writePairsBytes) as one block, so a string that starts at bufSize at the
// latest ends its copy within bufSize+slack. Starting below bufSize is also
// all that the compiler can prove of the masked positions in
// writePairsBytes, which is why the slack is the largest block and not the
// most that a block can overrun its string.
const slack = 48

// fastPairMax is the last position at which the first case of
// writePairsBytes and writeSepPairsBytes may start a pair: its two length
// bytes or separators, a 16-byte move for the name and three for the value
// end within bufSize.
const fastPairMax = bufSize - (2 + 16 + 48)

// bufDigest is an xxhash digest that buffers short writes so that a label set
// that fits in bufSize costs one copy and one xxhash.Sum64, as in Prometheus.
// xxhash of a stream equals xxhash of its concatenation, so where the stream
// is cut between the buffer and the digest does not change the sum.
type bufDigest struct {
	n       int  // bytes used in buf
	spilled bool // d holds everything before buf[:n]
	d       xxhash.Digest
	buf     [bufSize + slack]byte // the stream uses buf[:bufSize]; see put
}

func (b *bufDigest) reset() {
	b.n = 0
	b.spilled = false
}

// flush moves buf[:n] into the digest.
func (b *bufDigest) flush() {
	if !b.spilled {
		b.d.Reset()
		b.spilled = true
	}
	_, _ = b.d.Write(b.buf[:b.n])
	b.n = 0
}

// write appends s to the stream.
func write[S ~string | ~[]byte](b *bufDigest, s S) {
	if len(s) <= bufSize-b.n {
		b.n += copy(b.buf[b.n:], s)
		return
	}
	b.flush()
	if len(s) >= bufSize {
		// Long strings go straight to the digest, without a copy.
		switch v := any(s).(type) {
		case string:
			_, _ = b.d.WriteString(v)
		case []byte:
			_, _ = b.d.Write(v)
		default:
			_, _ = b.d.Write([]byte(s))
		}
		return
	}
	b.n = copy(b.buf[:], s)
}

// put copies s into buf at n, where n+len(s) <= bufSize, and returns
// n+len(s). A string of at most 16 bytes whose capacity reaches 8 or 16
// bytes (a view of a request buffer, or most allocations, whose size
// classes are multiples of 8) is copied in one move, without a call to
// memmove, which costs more than the copy for the short strings of label
// sets. The bytes between len(s) and that size are read but land past
// n+len(s) in buf, outside the stream, where the next write covers them or
// the sum ignores them. BenchmarkHash measures it.
func put(buf *[bufSize + slack]byte, n int, s []byte) int {
	switch {
	case len(s) <= 8 && cap(s) >= 8:
		*(*[8]byte)(buf[n:]) = [8]byte(s[:8])
	case len(s) <= 16 && cap(s) >= 16:
		*(*[16]byte)(buf[n:]) = [16]byte(s[:16])
	default:
		copy(buf[n:], s)
	}
	return n + len(s)
}

// put48 copies s, of 17 to 48 bytes and a capacity of at least 48, into buf
// at n as three 16-byte moves, for the loops of WritePairs: put copies such
// a string with memmove, with every live register of the loop spilled
// around the call, and would no longer be inlined with this case (the
// compiler also copies a [48]byte with memmove). The bytes past len(s) land
// past n+len(s), as with put.
func put48(buf *[bufSize + slack]byte, n int, s []byte) {
	d, v := (*[48]byte)(buf[n:]), (*[48]byte)(s[:48])
	*(*[16]byte)(d[:]) = *(*[16]byte)(v[:])
	*(*[16]byte)(d[16:]) = *(*[16]byte)(v[16:])
	*(*[16]byte)(d[32:]) = *(*[16]byte)(v[32:])
}

// writeByte appends c to the stream.
func (b *bufDigest) writeByte(c byte) {
	if b.n == bufSize {
		b.flush()
	}
	b.buf[b.n] = c
	b.n++
}

// sum returns the xxhash of the stream so far. It does not change the state,
// so more may be written after it.
func (b *bufDigest) sum() uint64 {
	if !b.spilled {
		return xxhash.Sum64(b.buf[:b.n])
	}
	d := b.d
	_, _ = d.Write(b.buf[:b.n])
	return d.Sum64()
}

// writeSepPairBytes is writeSepPair for byte slices, copied with put.
func writeSepPairBytes(b *bufDigest, name, value []byte) {
	if n := b.n; len(name)+len(value)+2 <= bufSize-n {
		n = put(&b.buf, n, name)
		b.buf[n] = sep
		n = put(&b.buf, n+1, value)
		b.buf[n] = sep
		b.n = n + 1
		return
	}
	writeSepPair(b, name, value)
}

// writeSepPairsBytes is writeSepPairBytes for each pair in turn, in one
// loop without a call per pair for those that fit the buffer. Like
// writePairsBytes, it keeps the position in a local and masks it, and
// copies the values of 17..48 bytes as three moves.
//
// Its first case is that of writePairsBytes: a decoder's pair, a name of at
// most 16 bytes and a value of at most 48 with room past both, written with
// one check and 16-byte moves.
func writeSepPairsBytes(b *bufDigest, ps []Pair) {
	n := b.n
	for i := range ps {
		name, value := ps[i].Name, ps[i].Value
		if uint(len(name)) <= 16 && uint(len(value)) <= 48 && cap(name) >= 16 && cap(value) >= 48 && n <= fastPairMax {
			n &= bufSize - 1 // n <= fastPairMax: a no-op that drops the bounds checks
			*(*[16]byte)(b.buf[n:]) = [16]byte(name[:16])
			n += len(name)
			n &= bufSize - 1 // still below bufSize-48
			b.buf[n] = sep
			if len(value) > 16 {
				put48(&b.buf, n+1, value)
			} else {
				*(*[16]byte)(b.buf[n+1:]) = [16]byte(value[:16])
			}
			n += 1 + len(value)
			n &= bufSize - 1 // still below bufSize
			b.buf[n] = sep
			n++
			continue
		}
		if len(name)+len(value)+2 > bufSize-n {
			b.n = n
			writeSepPair(b, name, value)
			n = b.n
			continue
		}
		n &= bufSize - 1 // n < bufSize: the pair fits
		n = put(&b.buf, n, name)
		n &= bufSize - 1 // n < bufSize: the separators and the value follow
		b.buf[n] = sep
		if len(value) > 16 && len(value) <= 48 && cap(value) >= 48 {
			put48(&b.buf, n+1, value)
			n += 1 + len(value)
		} else {
			n = put(&b.buf, n+1, value)
		}
		n &= bufSize - 1 // n < bufSize: the last separator follows
		b.buf[n] = sep
		n++
	}
	b.n = n
}

// writeSepPair appends "name sep value sep".
func writeSepPair[S ~string | ~[]byte](b *bufDigest, name, value S) {
	if n := b.n; len(name)+len(value)+2 <= bufSize-n {
		// Fast path: everything fits, no bounds on the way.
		n += copy(b.buf[n:], name)
		b.buf[n] = sep
		n++
		n += copy(b.buf[n:], value)
		b.buf[n] = sep
		b.n = n + 1
		return
	}
	write(b, name)
	b.writeByte(sep)
	write(b, value)
	b.writeByte(sep)
}

// Hasher computes [labels.Labels.Hash] of the pairs written to it.
//
// The zero value is ready to use. Pairs must be written sorted by name, as
// they are in a [labels.Labels]; the hasher hashes what it is given and does
// not check. A Hasher retains nothing that is written to it. Reuse one with
// [Hasher.Reset] rather than declaring a new one per label set: a new one
// costs the zeroing of its 1 KiB buffer.
//
// A Hasher is not safe for concurrent use by multiple goroutines.
type Hasher struct {
	d bufDigest
}

// Reset forgets all pairs written so far.
func (h *Hasher) Reset() {
	h.d.reset()
}

// Write adds one pair, given as byte slices (for example straight from a
// protobuf buffer). The slices are not retained. Write may read the bytes
// between a slice's length and its capacity (it copies short strings as
// whole words), but does not use them: like the bytes of the slices, they
// must not be modified while Write runs.
//
// Write makes no allocation.
func (h *Hasher) Write(name, value []byte) {
	h.d.writePairBytes(name, value)
}

// Pair is one (name, value) pair given as byte slices, for the calls that
// write many pairs at once. It is a plain value.
type Pair struct {
	Name, Value []byte
}

// WritePairs adds the pairs in order, as a [Hasher.Write] of each would,
// in one call: a caller that has a series' pairs at hand saves a call per
// pair. The slices are not retained; the bytes past their length may be
// read, as by Write.
//
// WritePairs makes no allocation.
func (h *Hasher) WritePairs(ps []Pair) {
	h.d.writePairsBytes(ps)
}

// WriteString adds one pair given as strings. The strings are not retained.
//
// WriteString makes no allocation.
func (h *Hasher) WriteString(name, value string) {
	if h.d.tryPair(len(name), len(value)) {
		n := h.d.n
		h.d.n = n + putPairString(h.d.buf[n:n+len(name)+len(value)+pairOverhead], name, value)
		return
	}
	writePair(&h.d, name, value)
}

// Sum64 returns [labels.Labels.Hash] of the pairs written since the last
// reset. It does not change the state: more pairs may be written after it.
//
// Sum64 makes no allocation.
func (h *Hasher) Sum64() uint64 {
	return h.d.sum()
}

// TenantHasher computes, in one pass over the pairs, both
// [labels.Labels.Hash] and the tenant hash that the Thanos receive hashring
// routes by: xxhash over "tenant 0xff name 0xff value 0xff ...", the same in
// every labels build.
//
// The zero value hashes for the empty tenant. Pairs must be written sorted by
// name. A TenantHasher retains nothing that is written to it.
//
// A TenantHasher is not safe for concurrent use by multiple goroutines.
type TenantHasher struct {
	Hasher
	tenant bufDigest
	primed bool // tenant holds "tenant 0xff"
}

// Reset forgets all pairs written so far and sets the tenant of the pairs to
// come.
func (h *TenantHasher) Reset(tenant string) {
	h.d.reset()
	h.tenant.reset()
	write(&h.tenant, tenant)
	h.tenant.writeByte(sep)
	h.primed = true
}

func (h *TenantHasher) prime() {
	if !h.primed {
		h.Reset("")
	}
}

// Write adds one pair given as byte slices. The slices are not retained;
// the bytes past their length may be read, as by [Hasher.Write].
//
// Write makes no allocation.
func (h *TenantHasher) Write(name, value []byte) {
	h.prime()
	h.Hasher.Write(name, value)
	writeSepPairBytes(&h.tenant, name, value)
}

// WriteString adds one pair given as strings. The strings are not retained.
//
// WriteString makes no allocation.
func (h *TenantHasher) WriteString(name, value string) {
	h.prime()
	h.Hasher.WriteString(name, value)
	writeSepPair(&h.tenant, name, value)
}

// WriteTenant adds one pair, given as byte slices, to the tenant hash only:
// the [labels.Labels.Hash] part does not see it. A caller whose pairs
// arrive out of order keeps the tenant hash in arrival order with it (the
// order Thanos hashes) and hashes the sorted pairs again for Sum64. The
// slices are not retained; the bytes past their length may be read, as by
// [Hasher.Write].
//
// WriteTenant makes no allocation.
func (h *TenantHasher) WriteTenant(name, value []byte) {
	h.prime()
	writeSepPairBytes(&h.tenant, name, value)
}

// WritePairs adds the pairs in order to both hashes, as a
// [TenantHasher.Write] of each would, in one call. The slices are not
// retained; the bytes past their length may be read, as by [Hasher.Write].
//
// WritePairs makes no allocation.
func (h *TenantHasher) WritePairs(ps []Pair) {
	h.prime()
	h.Hasher.WritePairs(ps)
	writeSepPairsBytes(&h.tenant, ps)
}

// WriteTenantPairs adds the pairs in order to the tenant hash only, as a
// [TenantHasher.WriteTenant] of each would, in one call.
//
// WriteTenantPairs makes no allocation.
func (h *TenantHasher) WriteTenantPairs(ps []Pair) {
	h.prime()
	writeSepPairsBytes(&h.tenant, ps)
}

// WriteTenantString is [TenantHasher.WriteTenant] for strings.
//
// WriteTenantString makes no allocation.
func (h *TenantHasher) WriteTenantString(name, value string) {
	h.prime()
	writeSepPair(&h.tenant, name, value)
}

// TenantSum64 returns the tenant hash of the pairs written since the last
// reset.
//
// TenantSum64 makes no allocation.
func (h *TenantHasher) TenantSum64() uint64 {
	h.prime()
	return h.tenant.sum()
}

// Stream returns the bytes written since the last reset, and true, when
// they all fit the hasher's buffer (1 KiB). In the default stringlabels
// build they are then exactly the data of the labels.Labels of the pairs,
// which lets a caller compare pairs with a label set in one comparison; in
// the other builds they are "name 0xff value 0xff ...". The slice is valid
// until the next Reset or Write.
//
// Stream makes no allocation.
func (h *Hasher) Stream() ([]byte, bool) {
	if h.d.spilled {
		return nil, false
	}
	return h.d.buf[:h.d.n], true
}

// TenantDigest computes the tenant hash alone: xxhash over "tenant 0xff name
// 0xff value 0xff ..." of the pairs in the order they are written.
//
// The zero value hashes for the empty tenant. A TenantDigest retains nothing
// that is written to it. It is not safe for concurrent use by multiple
// goroutines.
type TenantDigest struct {
	d      bufDigest
	primed bool // d holds "tenant 0xff"
}

// Reset forgets all pairs written so far and sets the tenant of the pairs to
// come.
func (t *TenantDigest) Reset(tenant string) {
	t.d.reset()
	write(&t.d, tenant)
	t.d.writeByte(sep)
	t.primed = true
}

// WriteString adds one pair. The strings are not retained.
//
// WriteString makes no allocation.
func (t *TenantDigest) WriteString(name, value string) {
	if !t.primed {
		t.Reset("")
	}
	writeSepPair(&t.d, name, value)
}

// Sum64 returns the tenant hash of the pairs written since the last reset.
//
// Sum64 makes no allocation.
func (t *TenantDigest) Sum64() uint64 {
	if !t.primed {
		t.Reset("")
	}
	return t.d.sum()
}
