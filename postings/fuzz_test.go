package postings

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// The decoders check a CRC32 before looking inside, which random mutation
// almost never gets right; each fuzz target therefore takes a flag that
// makes it frame the input with a correct length and checksum, so that the
// fuzzer reaches the parsing behind them too.

// frame returns content preceded by its 4-byte length and followed by its
// CRC32 (Castagnoli), as index sections are stored.
func frame(content []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(content)))
	b = append(b, content...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(content, castagnoli))
}

// FuzzTOC decodes an index header and table of contents: b is the header
// followed by the table of contents (57 bytes in a real index) and size the
// index's length.
func FuzzTOC(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte, size int64, fix bool) {
		if len(b) < headerLen {
			return
		}
		if _, err := decodeHeader(b[:headerLen]); err != nil && len(b) == headerLen+tocLen {
			return
		}
		tb := b[headerLen:]
		if fix && len(tb) == tocLen {
			tb = binary.BigEndian.AppendUint32(slices.Clone(tb[:tocLen-4]), crc32.Checksum(tb[:tocLen-4], castagnoli))
		}
		toc, err := decodeTOC(tb, size)
		if err != nil {
			return
		}
		if toc.postings > toc.postingsTable || toc.postingsTable+12 > uint64(size)-tocLen {
			t.Fatalf("decodeTOC accepted %+v for an index of %d bytes", toc, size)
		}
	})
}

// FuzzOffsetTable decodes a postings offset table; with fix, b is the
// table's content (count and entries) and gets framed.
func FuzzOffsetTable(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte, postingsStart, postingsEnd uint64, fix bool) {
		if fix {
			b = frame(b)
		}
		tab, err := decodeOffsetTable(b, postingsStart, postingsEnd)
		if err != nil {
			return
		}
		// What was accepted is consistent, and every entry can be found.
		n := tab.len()
		if len(tab.offs) != n+1 || int(tab.nameStart[len(tab.names)]) != n || n > len(b)/minEntryLen {
			t.Fatalf("inconsistent table: %d entries, %d offsets, names end at %d", n, len(tab.offs), tab.nameStart[len(tab.names)])
		}
		for k := 0; k < n; k++ {
			if tab.offs[k] >= tab.offs[k+1] || tab.offs[k] < postingsStart {
				t.Fatalf("entry %d: offsets %d, %d out of order", k, tab.offs[k], tab.offs[k+1])
			}
		}
		for ni, name := range tab.names {
			if tab.name(name) != ni {
				t.Fatalf("name(%q) = %d, want %d", name, tab.name(name), ni)
			}
			for k := tab.nameStart[ni]; k < tab.nameStart[ni+1]; k++ {
				if got := tab.entry(ni, tab.value(int(k))); got != int(k) {
					t.Fatalf("entry(%q, %q) = %d, want %d", name, tab.value(int(k)), got, k)
				}
			}
		}
	})
}

// FuzzPostings decodes a postings list; with fix, b is the list's content
// (count and refs) and gets framed, followed by pad bytes of padding. The
// refs accepted then go through the set operations.
func FuzzPostings(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte, fix bool, pad uint8) {
		if fix {
			b = append(frame(b), make([]byte, pad%5)...)
		}
		refs, err := decodePostings(b)
		if err != nil {
			return
		}
		l := rawList(refs)
		if 4*l.Len() != len(refs) || len(refs)+8 > len(b) {
			t.Fatalf("decodePostings returned %d bytes from %d", len(refs), len(b))
		}
		a := l.appendTo(nil)
		if got := intersect(slices.Clone(a), l); len(got) > len(a) {
			t.Fatalf("intersect grew: %d > %d", len(got), len(a))
		}
		if got := subtract(slices.Clone(a), u32List(a)); slices.IsSorted(a) && len(got) != 0 {
			t.Fatalf("a - a = %v, want empty", got)
		}
	})
}

// FuzzReader opens a whole index, possibly corrupt, and answers a few
// matcher sets: errors are fine; panics are not, nor a request to the
// source longer than the limit (the size of any buffer read into) or with
// a negative or overflowing range.
func FuzzReader(f *testing.F) {
	ctx := context.Background()
	m := labels.MustNewMatcher
	sets := [][]*labels.Matcher{
		{m(labels.MatchEqual, "n", "1")},
		{m(labels.MatchRegexp, "i", ".+"), m(labels.MatchNotEqual, "j", "foo")},
		{m(labels.MatchRegexp, "i", "")},
		{m(labels.MatchEqual, "", "")},
	}
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, b []byte) {
		src := &limitSource{Source: ReaderAtSource(bytes.NewReader(b)), limit: limit}
		rr := NewRangeReader(src, RangeOptions{MaxRangeSize: limit})
		defer func() {
			if src.over.Load() {
				t.Fatalf("a request longer than %d bytes, or with a negative or overflowing range, reached the source", limit)
			}
		}()
		r, err := NewReader(ctx, rr, "index", int64(len(b)))
		if err != nil {
			return
		}
		for _, ms := range sets {
			_, _ = r.ExpandedPostings(ctx, nil, ms...)
		}
	})
}

// FuzzReadRanges reads the ranges encoded in b (pairs of big-endian int64
// offset and length, any values, up to 32 ranges; with sorted, sorted by
// offset first) from a source with a byte at every offset, in a batch
// (pooled, or with io.ReadAll) and one by one: a range is refused before
// any request, or every view is exactly the source's bytes of its range.
// No request reaches the source with an end past math.MaxInt64.
func FuzzReadRanges(f *testing.F) {
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, b []byte, sorted, readAll bool) {
		var ranges []Range
		for i := 0; i+16 <= len(b) && len(ranges) < 32; i += 16 {
			ranges = append(ranges, Range{
				Off: int64(binary.BigEndian.Uint64(b[i:])),
				Len: int64(binary.BigEndian.Uint64(b[i+8:])),
			})
		}
		if sorted {
			slices.SortStableFunc(ranges, func(a, b Range) int { return cmp.Compare(a.Off, b.Off) })
		}
		src := &patternSource{}
		rr := NewRangeReader(src, RangeOptions{MaxRangeSize: 4 << 10})
		rr.readAll = readAll
		// Leave other bytes in the pool, as an earlier read would.
		var batch Batch
		if err := rr.ReadRanges(ctx, "x", []Range{{0, 4 << 10}}, &batch); err != nil {
			t.Fatal(err)
		}
		batch.Release()
		before := src.calls.Load()
		err := rr.ReadRanges(ctx, "x", ranges, &batch)
		switch {
		case errors.Is(err, ErrInvalidRange) || errors.Is(err, ErrRangeTooLarge):
			if batch.Len() != 0 || src.calls.Load() != before {
				t.Fatalf("ReadRanges(%v) = %d ranges, %d requests, %v; want none refused", ranges, batch.Len(), src.calls.Load()-before, err)
			}
		case err != nil:
			t.Fatalf("ReadRanges(%v) error %v", ranges, err)
		default:
			if batch.Len() != len(ranges) {
				t.Fatalf("ReadRanges(%v) = %d ranges", ranges, batch.Len())
			}
			for i, rg := range ranges {
				if v := batch.View(i); int64(len(v)) != rg.Len || notFromSource(v, rg.Off) != 0 {
					t.Fatalf("ReadRanges(%v): View(%d) = %d bytes, %d not the source's; want %d", ranges, i, len(v), notFromSource(v, rg.Off), rg.Len)
				}
			}
		}
		batch.Release()
		for _, rg := range ranges {
			before := src.calls.Load()
			got, err := rr.ReadRange(ctx, "x", rg.Off, rg.Len)
			switch {
			case errors.Is(err, ErrInvalidRange) || errors.Is(err, ErrRangeTooLarge):
				if got != nil || src.calls.Load() != before {
					t.Fatalf("ReadRange(%d, %d) = %d bytes, %d requests, %v; want none refused", rg.Off, rg.Len, len(got), src.calls.Load()-before, err)
				}
			case err != nil:
				t.Fatalf("ReadRange(%d, %d) error %v", rg.Off, rg.Len, err)
			case int64(len(got)) != rg.Len || notFromSource(got, rg.Off) != 0:
				t.Fatalf("ReadRange(%d, %d) = %d bytes, %d not the source's", rg.Off, rg.Len, len(got), notFromSource(got, rg.Off))
			}
		}
		if src.overflowed.Load() {
			t.Fatalf("ranges %v: a request past math.MaxInt64 reached the source", ranges)
		}
	})
}

// limitSource records a request longer than limit or with an offset or end
// outside [0, math.MaxInt64].
type limitSource struct {
	Source
	limit int64
	over  atomic.Bool
}

func (s *limitSource) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if off < 0 || length < 0 || length > s.limit || length > math.MaxInt64-off {
		s.over.Store(true)
	}
	return s.Source.GetRange(ctx, name, off, length)
}
