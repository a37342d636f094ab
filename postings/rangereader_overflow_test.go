package postings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"testing"
)

// patternSource is an object with a byte at every offset up to
// math.MaxInt64: the byte at p is patternByte(p). It serves any range it is
// asked for, even one whose end overflows, so that a range the reader
// should have refused comes back as bytes rather than as a short read. It
// counts its requests and records one whose end overflows.
type patternSource struct {
	calls      atomic.Int64
	overflowed atomic.Bool
}

func patternByte(p int64) byte { return byte(p ^ p>>8 ^ p>>56 ^ 0x5a) }

func (s *patternSource) GetRange(_ context.Context, _ string, off, length int64) (io.ReadCloser, error) {
	s.calls.Add(1)
	if off < 0 || length < 0 {
		return nil, fmt.Errorf("patternSource: range %d+%d", off, length)
	}
	if length > math.MaxInt64-off {
		s.overflowed.Store(true)
	}
	return io.NopCloser(&patternReader{off: off, left: length}), nil
}

type patternReader struct{ off, left int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	for i := range p {
		p[i] = patternByte(r.off + int64(i))
	}
	r.off += int64(len(p))
	r.left -= int64(len(p))
	return len(p), nil
}

// notFromSource returns how many bytes of b are not the source's bytes of
// the range at off: a view cut past what was read holds another read's
// bytes.
func notFromSource(b []byte, off int64) int {
	n := 0
	for i, c := range b {
		if c != patternByte(off+int64(i)) {
			n++
		}
	}
	return n
}

// catch runs f and returns what it panicked with, nil if it returned.
func catch(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

const maxOff = math.MaxInt64

// overflowLimit is MaxRangeSize in the overflow tests.
const overflowLimit = 1 << 10

// overflowRanges are single ranges around the ends of int64: those whose
// end off+len is at most math.MaxInt64 are read, the others refused.
var overflowRanges = []struct {
	name string
	rg   Range
	want error
}{
	{"empty", Range{0, 0}, nil},
	{"empty at MaxInt64", Range{maxOff, 0}, nil},
	{"last byte", Range{maxOff - 1, 1}, nil},
	{"ends at MaxInt64", Range{maxOff - 200, 200}, nil},
	{"limit, ends at MaxInt64", Range{maxOff - overflowLimit, overflowLimit}, nil},
	{"one past MaxInt64", Range{maxOff, 1}, ErrInvalidRange},
	{"ends one past MaxInt64", Range{maxOff - 199, 200}, ErrInvalidRange},
	{"200 at MaxInt64-4", Range{maxOff - 4, 200}, ErrInvalidRange},
	{"300 at MaxInt64-4", Range{maxOff - 4, 300}, ErrInvalidRange},
	{"limit at MaxInt64", Range{maxOff, overflowLimit}, ErrInvalidRange},
	{"MaxInt64 at 1", Range{1, maxOff}, ErrInvalidRange},
	{"MaxInt64 at MaxInt64", Range{maxOff, maxOff}, ErrInvalidRange},
	{"negative offset", Range{-1, 10}, ErrInvalidRange},
	{"negative length", Range{0, -1}, ErrInvalidRange},
	{"MinInt64 offset", Range{math.MinInt64, 10}, ErrInvalidRange},
	{"MinInt64 length", Range{10, math.MinInt64}, ErrInvalidRange},
	{"MinInt64 offset, MaxInt64 length", Range{math.MinInt64, maxOff}, ErrInvalidRange},
	{"both negative", Range{-1, -1}, ErrInvalidRange},
	{"past the limit", Range{0, overflowLimit + 1}, ErrRangeTooLarge},
	{"past the limit, ends before MaxInt64", Range{maxOff - 2*overflowLimit, overflowLimit + 1}, ErrRangeTooLarge},
}

// TestReadRangeOverflow reads single ranges whose end overflows int64 with
// ReadRange and ReadRangeBuffer: they are refused with ErrInvalidRange
// before any request, and those that end at math.MaxInt64 or before are
// read whole.
func TestReadRangeOverflow(t *testing.T) {
	ctx := context.Background()
	for _, tc := range overflowRanges {
		t.Run(tc.name, func(t *testing.T) {
			for _, pooled := range []bool{false, true} {
				src := &patternSource{}
				rr := NewRangeReader(src, RangeOptions{MaxRangeSize: overflowLimit})
				var got []byte
				var err error
				p := catch(func() {
					if pooled {
						var b *Buffer
						if b, err = rr.ReadRangeBuffer(ctx, "x", tc.rg.Off, tc.rg.Len); b != nil {
							got = b.B
						}
					} else {
						got, err = rr.ReadRange(ctx, "x", tc.rg.Off, tc.rg.Len)
					}
				})
				if p != nil {
					t.Errorf("ReadRange(pooled=%v, %d, %d) panicked: %v", pooled, tc.rg.Off, tc.rg.Len, p)
					continue
				}
				if tc.want != nil {
					if !errors.Is(err, tc.want) || got != nil {
						t.Errorf("ReadRange(pooled=%v, %d, %d) = %d bytes, %v; want nil, %v", pooled, tc.rg.Off, tc.rg.Len, len(got), err, tc.want)
					}
					if n := src.calls.Load(); n != 0 {
						t.Errorf("ReadRange(pooled=%v, %d, %d) made %d requests, want 0", pooled, tc.rg.Off, tc.rg.Len, n)
					}
					continue
				}
				if err != nil || int64(len(got)) != tc.rg.Len || notFromSource(got, tc.rg.Off) != 0 {
					t.Errorf("ReadRange(pooled=%v, %d, %d) = %d bytes (%d not the source's), %v; want the range", pooled, tc.rg.Off, tc.rg.Len, len(got), notFromSource(got, tc.rg.Off), err)
				}
			}
		})
	}
}

// TestReadRangesOverflow reads batches holding ranges whose end overflows
// int64, from a pooled buffer and with io.ReadAll: the batch is refused with
// ErrInvalidRange before any request, and never holds a view of bytes the
// source did not return for it. A request is made first so that the pool
// holds a buffer with other bytes, as in a long-running reader.
func TestReadRangesOverflow(t *testing.T) {
	ctx := context.Background()
	type batchCase struct {
		name   string
		ranges []Range
		want   error
	}
	var cases []batchCase
	for _, tc := range overflowRanges {
		cases = append(cases, batchCase{tc.name, []Range{tc.rg}, tc.want})
	}
	cases = append(cases, []batchCase{
		// The second range's end overflows and the merged request stays the
		// first's 5 bytes: the view of 200 bytes was cut from the pooled
		// buffer's capacity.
		{"merged into 5 bytes, 200", []Range{{maxOff - 5, 5}, {maxOff - 5, 200}}, ErrInvalidRange},
		{"merged into 5 bytes, 300", []Range{{maxOff - 5, 5}, {maxOff - 5, 300}}, ErrInvalidRange},
		{"merged into 5 bytes, next offset", []Range{{maxOff - 5, 5}, {maxOff - 4, 200}}, ErrInvalidRange},
		{"merged into 5 bytes, at MaxInt64", []Range{{maxOff - 5, 5}, {maxOff, 200}}, ErrInvalidRange},
		{"overflow after a valid range", []Range{{0, 10}, {maxOff, 1}}, ErrInvalidRange},
		{"overflow before a valid range", []Range{{maxOff - 4, 200}, {maxOff - 1, 1}}, ErrInvalidRange},
		{"MaxInt64 after a valid range", []Range{{0, 10}, {10, maxOff}}, ErrInvalidRange},
		{"merged, ends at MaxInt64", []Range{{maxOff - 300, 100}, {maxOff - 100, 100}, {maxOff, 0}}, nil},
		{"overlapping, ends at MaxInt64", []Range{{maxOff - 300, 300}, {maxOff - 10, 10}}, nil},
	}...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, readAll := range []bool{false, true} {
				src := &patternSource{}
				rr := NewRangeReader(src, RangeOptions{MaxRangeSize: overflowLimit})
				rr.readAll = readAll
				var b Batch
				if err := rr.ReadRanges(ctx, "x", []Range{{0, 200}}, &b); err != nil {
					t.Fatal(err)
				}
				b.Release()
				before := src.calls.Load()
				var err error
				if p := catch(func() { err = rr.ReadRanges(ctx, "x", tc.ranges, &b) }); p != nil {
					t.Errorf("ReadRanges(readAll=%v, %v) panicked: %v", readAll, tc.ranges, p)
					continue
				}
				if tc.want != nil {
					if !errors.Is(err, tc.want) || b.Len() != 0 {
						t.Errorf("ReadRanges(readAll=%v, %v) = %d ranges, %v; want 0, %v", readAll, tc.ranges, b.Len(), err, tc.want)
						for i, rg := range tc.ranges {
							if i < b.Len() {
								v := b.View(i)
								t.Logf("View(%d) of %+v: %d bytes, %d of them not the source's", i, rg, len(v), notFromSource(v, rg.Off))
							}
						}
					}
					if n := src.calls.Load() - before; n != 0 {
						t.Errorf("ReadRanges(readAll=%v, %v) made %d requests, want 0", readAll, tc.ranges, n)
					}
					continue
				}
				if err != nil || b.Len() != len(tc.ranges) {
					t.Errorf("ReadRanges(readAll=%v, %v) = %d ranges, %v; want %d, nil", readAll, tc.ranges, b.Len(), err, len(tc.ranges))
					continue
				}
				for i, rg := range tc.ranges {
					if v := b.View(i); int64(len(v)) != rg.Len || notFromSource(v, rg.Off) != 0 {
						t.Errorf("ReadRanges(readAll=%v, %v): View(%d) = %d bytes (%d not the source's), want the range", readAll, tc.ranges, i, len(v), notFromSource(v, rg.Off))
					}
				}
				b.Release()
			}
		})
	}
}

// TestBatchCut cuts views from parts whose buffers are shorter than their
// ranges, as a merge that miscounted would leave them: the pooled buffer
// has room past its length, and a view cut into that room would hold an
// earlier read's bytes. The cut fails instead, and views within what was
// read are cut with no room to append.
func TestBatchCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ranges []Range
		ok     bool
	}{
		{"within", []Range{{100, 5}, {101, 3}, {105, 0}}, true},
		{"past the bytes read", []Range{{100, 5}, {100, 200}}, false},
		{"one past", []Range{{100, 6}}, false},
		{"starts past", []Range{{106, 0}}, false},
		{"before the part", []Range{{99, 1}}, false},
		{"MaxInt64 length", []Range{{100, math.MaxInt64}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale := make([]byte, 256)
			for i := range stale {
				stale[i] = 0xEE
			}
			b := Batch{
				parts: []part{{off: 100, end: 105, first: 0, last: len(tc.ranges)}},
				bufs:  []*Buffer{{B: stale[:5]}},
			}
			err := b.cut(tc.ranges)
			if !tc.ok {
				if !errors.Is(err, ErrInvalidRange) {
					t.Errorf("cut(%v) error %v, want %v", tc.ranges, err, ErrInvalidRange)
				}
				return
			}
			if err != nil {
				t.Fatalf("cut(%v) error %v", tc.ranges, err)
			}
			for i, rg := range tc.ranges {
				if v := b.View(i); int64(len(v)) != rg.Len || cap(v) != len(v) {
					t.Errorf("View(%d) of %+v = %d bytes (cap %d), want %d", i, rg, len(v), cap(v), rg.Len)
				}
			}
		})
	}
}
