package postings

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/prometheus/prometheus/tsdb/encoding"
	"github.com/prometheus/prometheus/tsdb/index"
)

// The layout of a Prometheus TSDB index, format 2 (tsdb/docs/format/index.md
// in Prometheus): a 5-byte header (magic, version), the symbol table, the
// series, the label indices, the postings lists, the postings offset table
// and a 52-byte table of contents at the end.
const (
	headerLen = index.HeaderLen
	tocLen    = 6*8 + crc32.Size
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// toc is an index's table of contents: where each section starts.
type toc struct {
	symbols, series, labelIndices, labelIndicesTable, postings, postingsTable uint64
}

// decodeHeader checks an index's 5-byte header and returns its version.
func decodeHeader(b []byte) (int, error) {
	if len(b) != headerLen {
		return 0, fmt.Errorf("%w: header of %d bytes", ErrCorrupt, len(b))
	}
	if binary.BigEndian.Uint32(b) != index.MagicIndex {
		return 0, ErrNotIndex
	}
	v := int(b[4])
	if v != index.FormatV2 && v != index.FormatV3 {
		return 0, fmt.Errorf("%w: %d", ErrUnsupportedVersion, v)
	}
	return v, nil
}

// decodeTOC decodes the table of contents of an index of size bytes from
// its last tocLen bytes, b, and checks that its sections are in order
// within the index.
func decodeTOC(b []byte, size int64) (toc, error) {
	if len(b) != tocLen {
		return toc{}, fmt.Errorf("%w: table of contents of %d bytes", ErrCorrupt, len(b))
	}
	if crc32.Checksum(b[:tocLen-4], castagnoli) != binary.BigEndian.Uint32(b[tocLen-4:]) {
		return toc{}, fmt.Errorf("read table of contents: %w", encoding.ErrInvalidChecksum)
	}
	t := toc{
		symbols:           binary.BigEndian.Uint64(b[0:]),
		series:            binary.BigEndian.Uint64(b[8:]),
		labelIndices:      binary.BigEndian.Uint64(b[16:]),
		labelIndicesTable: binary.BigEndian.Uint64(b[24:]),
		postings:          binary.BigEndian.Uint64(b[32:]),
		postingsTable:     binary.BigEndian.Uint64(b[40:]),
	}
	// The postings offset table needs at least its length, count and
	// checksum (12 bytes) before the table of contents.
	end := uint64(size) - tocLen
	if size < headerLen+tocLen+12 || t.postings < headerLen || t.postings > t.postingsTable || t.postingsTable > end || end-t.postingsTable < 12 {
		return toc{}, fmt.Errorf("%w: table of contents out of bounds (postings at %d, offset table at %d, index of %d bytes)",
			ErrCorrupt, t.postings, t.postingsTable, size)
	}
	return t, nil
}

// table is the postings offset table, decoded once and held compactly: for
// entry k (in the table's order, by label name then value), its value is
// values[valueEnd[k-1]:valueEnd[k]] and its postings list is the bytes
// [offs[k], offs[k+1]) of the index. Entries of names[i] are
// [nameStart[i], nameStart[i+1]). Memory: the value bytes plus 12 bytes an
// entry, plus the names.
type table struct {
	names     []string
	nameStart []int32  // len(names)+1
	values    string   // all values, concatenated
	valueEnd  []uint32 // len = entries
	offs      []uint64 // len = entries+1; the last is the end of the postings section
}

// minEntryLen is the smallest encoded entry of the offset table: key count,
// name length, value length and offset, one byte each.
const minEntryLen = 4

// decodeOffsetTable decodes the postings offset table from b, the bytes of
// the index from the table's start to the table of contents. Every postings
// offset must lie in [postingsStart, postingsEnd) and increase in table
// order, and the entries must be sorted by name then value, as Prometheus's
// writer makes them.
func decodeOffsetTable(b []byte, postingsStart, postingsEnd uint64) (*table, error) {
	if len(b) < 12 {
		return nil, fmt.Errorf("%w: postings offset table of %d bytes", ErrCorrupt, len(b))
	}
	l := uint64(binary.BigEndian.Uint32(b))
	if l < 4 || l+8 > uint64(len(b)) {
		return nil, fmt.Errorf("%w: postings offset table length %d in %d bytes", ErrCorrupt, l, len(b))
	}
	content := b[4 : 4+l]
	if crc32.Checksum(content, castagnoli) != binary.BigEndian.Uint32(b[4+l:]) {
		return nil, fmt.Errorf("read postings offset table: %w", encoding.ErrInvalidChecksum)
	}
	cnt := uint64(binary.BigEndian.Uint32(content))
	d := content[4:]
	if cnt > uint64(len(d))/minEntryLen {
		return nil, fmt.Errorf("%w: %d postings offset table entries in %d bytes", ErrCorrupt, cnt, len(d))
	}
	t := &table{
		valueEnd: make([]uint32, 0, cnt),
		offs:     make([]uint64, 0, cnt+1),
	}
	// The values take less than the table; counting them first would cost a
	// second pass, so the buffer grows, bounded by len(d).
	values := make([]byte, 0, len(d)/4)
	var prevName, prevValue []byte
	for k := uint64(0); k < cnt; k++ {
		keys, n := binary.Uvarint(d)
		if n <= 0 || keys != 2 {
			return nil, fmt.Errorf("%w: postings offset table entry %d has a bad key count", ErrCorrupt, k)
		}
		d = d[n:]
		name, rest, ok := uvarintBytes(d)
		if !ok {
			return nil, fmt.Errorf("%w: postings offset table entry %d: bad label name", ErrCorrupt, k)
		}
		value, rest, ok := uvarintBytes(rest)
		if !ok {
			return nil, fmt.Errorf("%w: postings offset table entry %d: bad label value", ErrCorrupt, k)
		}
		off, n := binary.Uvarint(rest)
		if n <= 0 {
			return nil, fmt.Errorf("%w: postings offset table entry %d: bad offset", ErrCorrupt, k)
		}
		d = rest[n:]
		if off < postingsStart || off >= postingsEnd || (k > 0 && off <= t.offs[k-1]) {
			return nil, fmt.Errorf("%w: postings offset table entry %d: offset %d out of order or outside the postings [%d, %d)",
				ErrCorrupt, k, off, postingsStart, postingsEnd)
		}
		newName := k == 0 || string(name) != string(prevName)
		if k > 0 {
			if newName && string(name) < string(prevName) || !newName && string(value) <= string(prevValue) {
				return nil, fmt.Errorf("%w: postings offset table entry %d out of order", ErrCorrupt, k)
			}
		}
		if newName {
			t.names = append(t.names, string(name))
			t.nameStart = append(t.nameStart, int32(k))
		}
		values = append(values, value...)
		if uint64(len(values)) > math.MaxUint32 {
			return nil, fmt.Errorf("%w: postings offset table values exceed 4 GiB", ErrCorrupt)
		}
		t.valueEnd = append(t.valueEnd, uint32(len(values)))
		t.offs = append(t.offs, off)
		prevName, prevValue = name, value
	}
	t.nameStart = append(t.nameStart, int32(cnt))
	t.offs = append(t.offs, postingsEnd)
	t.values = string(values)
	return t, nil
}

// uvarintBytes splits a uvarint-length-prefixed byte string off b.
func uvarintBytes(b []byte) (s, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	return b[n : n+int(l)], b[n+int(l):], true
}

// len returns the number of entries.
func (t *table) len() int { return len(t.valueEnd) }

// value returns the label value of entry k, without allocating.
func (t *table) value(k int) string {
	s := uint32(0)
	if k > 0 {
		s = t.valueEnd[k-1]
	}
	return t.values[s:t.valueEnd[k]]
}

// name returns the index of name in t.names, or -1.
func (t *table) name(name string) int {
	lo, hi := 0, len(t.names)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.names[m] < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(t.names) && t.names[lo] == name {
		return lo
	}
	return -1
}

// entry returns the entry of (names[ni], value), or -1.
func (t *table) entry(ni int, value string) int {
	lo, hi := int(t.nameStart[ni]), int(t.nameStart[ni+1])
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.value(m) < value {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < int(t.nameStart[ni+1]) && t.value(lo) == value {
		return lo
	}
	return -1
}

// decodePostings checks the postings list read from the bytes between its
// offset and the next list's, b, and returns its series refs: big-endian
// uint32s, a view of b. A list is its length (4 bytes), the number of refs
// (4 bytes), the refs, and the CRC32 of all but the length; up to 3 bytes of
// padding may follow.
func decodePostings(b []byte) ([]byte, error) {
	if len(b) < 12 {
		return nil, fmt.Errorf("%w: postings list of %d bytes", ErrCorrupt, len(b))
	}
	l := uint64(binary.BigEndian.Uint32(b))
	if l < 4 || l+8 > uint64(len(b)) || uint64(len(b))-(l+8) > 3 {
		return nil, fmt.Errorf("%w: postings list length %d in %d bytes", ErrCorrupt, l, len(b))
	}
	content := b[4 : 4+l]
	if crc32.Checksum(content, castagnoli) != binary.BigEndian.Uint32(b[4+l:]) {
		return nil, fmt.Errorf("read postings list: %w", encoding.ErrInvalidChecksum)
	}
	n := uint64(binary.BigEndian.Uint32(content))
	if 4+4*n != l {
		return nil, fmt.Errorf("%w: postings list of %d refs in %d bytes (not the raw encoding)", ErrCorrupt, n, l-4)
	}
	return content[4:], nil
}
