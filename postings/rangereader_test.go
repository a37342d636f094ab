package postings

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingSource counts GetRange calls and the most in flight at once, and
// can hold each request until release is closed.
type countingSource struct {
	Source
	calls, inFlight, maxInFlight atomic.Int64
	delay                        time.Duration
}

func (s *countingSource) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	s.calls.Add(1)
	n := s.inFlight.Add(1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(s.delay)
	defer s.inFlight.Add(-1)
	return s.Source.GetRange(ctx, name, off, length)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestReadRange(t *testing.T) {
	ctx := context.Background()
	data := randomBytes(10<<20 + 100)
	rr := NewRangeReader(ReaderAtSource(bytes.NewReader(data)), RangeOptions{})
	for _, tc := range []struct{ off, length int64 }{
		{0, 0}, {0, 1}, {5, 127}, {5, 128}, {5, 129}, {1000, 1024}, {0, 10 << 20}, {100, 10 << 20}, {int64(len(data)), 0},
	} {
		got, err := rr.ReadRange(ctx, "x", tc.off, tc.length)
		if err != nil {
			t.Fatalf("ReadRange(%d, %d) error %v", tc.off, tc.length, err)
		}
		if want := data[tc.off : tc.off+tc.length]; !bytes.Equal(got, want) || len(got) != cap(got) {
			t.Fatalf("ReadRange(%d, %d) = %d bytes (cap %d), want %d bytes exactly", tc.off, tc.length, len(got), cap(got), len(want))
		}
		b, err := rr.ReadRangeBuffer(ctx, "x", tc.off, tc.length)
		if err != nil {
			t.Fatalf("ReadRangeBuffer(%d, %d) error %v", tc.off, tc.length, err)
		}
		if !bytes.Equal(b.B, data[tc.off:tc.off+tc.length]) {
			t.Fatalf("ReadRangeBuffer(%d, %d) = wrong bytes", tc.off, tc.length)
		}
		rr.Release(b)
	}
}

func TestReadRangeErrors(t *testing.T) {
	ctx := context.Background()
	data := randomBytes(1000)
	src := &countingSource{Source: ReaderAtSource(bytes.NewReader(data))}
	rr := NewRangeReader(src, RangeOptions{MaxRangeSize: 512})
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name        string
		ctx         context.Context
		off, length int64
		want        error
		requested   bool
	}{
		{"over limit", ctx, 0, 513, ErrRangeTooLarge, false},
		{"huge", ctx, 0, 1 << 62, ErrRangeTooLarge, false},
		{"negative length", ctx, 0, -1, ErrInvalidRange, false},
		{"negative offset", ctx, -1, 10, ErrInvalidRange, false},
		{"past the end", ctx, 900, 200, ErrShortRead, true},
		{"at the end", ctx, 1000, 1, ErrShortRead, true},
		{"canceled", canceled, 0, 10, context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := src.calls.Load()
			for _, pooled := range []bool{false, true} {
				var got []byte
				var err error
				if pooled {
					var b *Buffer
					if b, err = rr.ReadRangeBuffer(tc.ctx, "x", tc.off, tc.length); b != nil {
						got = b.B
					}
				} else {
					got, err = rr.ReadRange(tc.ctx, "x", tc.off, tc.length)
				}
				if !errors.Is(err, tc.want) || got != nil {
					t.Errorf("ReadRange(pooled=%v, %d, %d) = %d bytes, %v; want nil, %v", pooled, tc.off, tc.length, len(got), err, tc.want)
				}
			}
			if requested := src.calls.Load() > before; requested != tc.requested {
				t.Errorf("requested = %v, want %v", requested, tc.requested)
			}
		})
	}
	if !errors.Is(ErrShortRead, io.ErrUnexpectedEOF) {
		t.Error("ErrShortRead does not wrap io.ErrUnexpectedEOF")
	}
	if st := rr.Stats(); st.Refused != 8 || st.Failed != 6 {
		t.Errorf("Stats() = %+v, want 8 refused and 6 failed", st)
	}
}

// blockingSource returns readers that give 10 bytes, then block until
// their context is done.
type blockingSource struct{}

func (blockingSource) GetRange(ctx context.Context, _ string, _, _ int64) (io.ReadCloser, error) {
	return io.NopCloser(io.MultiReader(bytes.NewReader(make([]byte, 10)), ctxReader{ctx})), nil
}

type ctxReader struct{ ctx context.Context }

func (r ctxReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, r.ctx.Err()
}

func TestReadRangeCancelWhileReading(t *testing.T) {
	rr := NewRangeReader(blockingSource{}, RangeOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	got, err := rr.ReadRange(ctx, "x", 0, 100)
	if !errors.Is(err, context.DeadlineExceeded) || got != nil {
		t.Fatalf("ReadRange = %d bytes, %v; want nil, %v", len(got), err, context.DeadlineExceeded)
	}
	var b Batch
	err = rr.ReadRanges(ctx, "x", []Range{{0, 10}, {1 << 30, 10}}, &b)
	if !errors.Is(err, context.DeadlineExceeded) || b.Len() != 0 {
		t.Fatalf("ReadRanges = %d ranges, %v; want 0, %v", b.Len(), err, context.DeadlineExceeded)
	}
}

func TestReadRangeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items on purpose under -race")
	}
	ctx := context.Background()
	data := randomBytes(2 << 20)
	rr := NewRangeReader(ReaderAtSource(bytes.NewReader(data)), RangeOptions{})
	for _, n := range []int64{300, 64 << 10, 1536 << 10} {
		// A 300-byte range is carved from a 32 KiB slab: two allocations
		// (the slab and its header) per 109 ranges, which AllocsPerRun,
		// an integer average, shows as 0.
		want := 1.0
		if n <= DefaultSlabSize/64 {
			want = 0
		}
		if a := testing.AllocsPerRun(50, func() {
			if _, err := rr.ReadRange(ctx, "x", 7, n); err != nil {
				t.Fatal(err)
			}
		}); a != want {
			t.Errorf("ReadRange(%d bytes): %v allocs, want %v", n, a, want)
		}
		if a := testing.AllocsPerRun(50, func() {
			b, err := rr.ReadRangeBuffer(ctx, "x", 7, n)
			if err != nil {
				t.Fatal(err)
			}
			rr.Release(b)
		}); a != 0 {
			t.Errorf("ReadRangeBuffer(%d bytes): %v allocs, want 0", n, a)
		}
	}
	var b Batch
	ranges := []Range{{0, 100}, {200, 300}, {1000, 5000}}
	if a := testing.AllocsPerRun(50, func() {
		if err := rr.ReadRanges(ctx, "x", ranges, &b); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("ReadRanges (one request): %v allocs, want 0", a)
	}
}

func TestReadRanges(t *testing.T) {
	ctx := context.Background()
	data := randomBytes(1 << 20)
	for _, tc := range []struct {
		name     string
		opts     RangeOptions
		ranges   []Range
		requests int64
	}{
		{"none", RangeOptions{}, nil, 0},
		{"one", RangeOptions{}, []Range{{10, 20}}, 1},
		{"empty range", RangeOptions{}, []Range{{10, 0}}, 0},
		{"adjacent", RangeOptions{}, []Range{{0, 10}, {10, 10}, {20, 10}}, 1},
		{"overlapping", RangeOptions{}, []Range{{0, 100}, {10, 10}, {50, 100}}, 1},
		{"same offset", RangeOptions{}, []Range{{40, 10}, {40, 30}}, 1},
		{"gap at limit", RangeOptions{MaxGap: 100}, []Range{{0, 10}, {110, 10}}, 1},
		{"gap over limit", RangeOptions{MaxGap: 100}, []Range{{0, 10}, {111, 10}}, 2},
		{"no merging", RangeOptions{MaxGap: -1}, []Range{{0, 10}, {10, 10}, {20, 10}}, 3},
		{"merge bounded by size", RangeOptions{MaxRangeSize: 100}, []Range{{0, 60}, {60, 40}, {100, 1}}, 2},
		{"many", RangeOptions{MaxGap: 1000, Concurrency: 2}, manyRanges(500), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingSource{Source: ReaderAtSource(bytes.NewReader(data))}
			rr := NewRangeReader(src, tc.opts)
			var b Batch
			for range 2 { // a Batch is reusable
				if err := rr.ReadRanges(ctx, "x", tc.ranges, &b); err != nil {
					t.Fatal(err)
				}
				if b.Len() != len(tc.ranges) {
					t.Fatalf("Len() = %d, want %d", b.Len(), len(tc.ranges))
				}
				for i, r := range tc.ranges {
					if v := b.View(i); !bytes.Equal(v, data[r.Off:r.Off+r.Len]) || cap(v) != len(v) {
						t.Fatalf("View(%d) of %+v = %d bytes (cap %d), wrong", i, r, len(v), cap(v))
					}
				}
			}
			b.Release()
			if b.Len() != 0 {
				t.Errorf("Len() after Release = %d", b.Len())
			}
			if tc.requests > 0 && src.calls.Load() != 2*tc.requests {
				t.Errorf("%d requests, want %d", src.calls.Load()/2, tc.requests)
			}
			if st := rr.Stats(); st.Requests != uint64(src.calls.Load()) || st.Bytes < st.RangeBytes/2 {
				t.Errorf("Stats() = %+v, inconsistent with %d calls", st, src.calls.Load())
			}
		})
	}
}

func manyRanges(n int) []Range {
	rs := make([]Range, n)
	for i := range rs {
		rs[i] = Range{Off: int64(i) * 2000, Len: int64(i % 700)}
	}
	return rs
}

func TestReadRangesConcurrencyBound(t *testing.T) {
	for _, limit := range []int{1, 3} {
		src := &countingSource{Source: ReaderAtSource(bytes.NewReader(randomBytes(1 << 16))), delay: time.Millisecond}
		rr := NewRangeReader(src, RangeOptions{MaxGap: -1, Concurrency: limit})
		var b Batch
		if err := rr.ReadRanges(context.Background(), "x", manyRanges(30), &b); err != nil {
			t.Fatal(err)
		}
		if m := src.maxInFlight.Load(); m > int64(limit) || m < 1 {
			t.Errorf("Concurrency %d: %d requests in flight at once", limit, m)
		}
	}
}

func TestReadRangesErrors(t *testing.T) {
	ctx := context.Background()
	src := &countingSource{Source: ReaderAtSource(bytes.NewReader(randomBytes(1000)))}
	rr := NewRangeReader(src, RangeOptions{MaxRangeSize: 100, MaxGap: -1})
	for _, tc := range []struct {
		name   string
		ranges []Range
		want   error
	}{
		{"unsorted", []Range{{10, 10}, {0, 10}}, ErrInvalidRange},
		{"negative", []Range{{0, 10}, {20, -1}}, ErrInvalidRange},
		{"too long", []Range{{0, 10}, {20, 101}}, ErrRangeTooLarge},
		{"one short", []Range{{0, 10}, {500, 10}, {995, 10}}, ErrShortRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Batch
			if err := rr.ReadRanges(ctx, "x", []Range{{0, 5}}, &b); err != nil {
				t.Fatal(err)
			}
			before := src.calls.Load()
			err := rr.ReadRanges(ctx, "x", tc.ranges, &b)
			if !errors.Is(err, tc.want) || b.Len() != 0 {
				t.Errorf("ReadRanges(%v) = %d ranges, %v; want 0, %v", tc.ranges, b.Len(), err, tc.want)
			}
			if tc.want != ErrShortRead && src.calls.Load() != before {
				t.Errorf("ReadRanges(%v) made requests before failing validation", tc.ranges)
			}
		})
	}
}

func TestRangeReaderConcurrent(t *testing.T) {
	ctx := context.Background()
	data := randomBytes(1 << 18)
	rr := NewRangeReader(ReaderAtSource(bytes.NewReader(data)), RangeOptions{MaxGap: 100})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b Batch
			defer b.Release()
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for range 200 {
				ranges := make([]Range, 1+rng.IntN(5))
				off := int64(0)
				for i := range ranges {
					off += rng.Int64N(300)
					ranges[i] = Range{off, rng.Int64N(3000)}
				}
				if err := rr.ReadRanges(ctx, "x", ranges, &b); err != nil {
					t.Error(err)
					return
				}
				for i, r := range ranges {
					if !bytes.Equal(b.View(i), data[r.Off:r.Off+r.Len]) {
						t.Errorf("View(%d) of %+v: wrong bytes", i, r)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// address returns where b's bytes are, as an integer.
func address(b []byte) uintptr { return reflect.ValueOf(b).Pointer() }

// TestReadRangeSlabs checks that short ranges are carved one after the
// other from a slab, with no room to append into the next, that longer
// ones and those of a reader with slabs off are not, and that a carved
// range costs its length in bytes allocated.
func TestReadRangeSlabs(t *testing.T) {
	ctx := context.Background()
	data := randomBytes(1 << 20)
	src := ReaderAtSource(bytes.NewReader(data))
	read := func(rr *RangeReader, off, n int64) []byte {
		t.Helper()
		b, err := rr.ReadRange(ctx, "x", off, n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, data[off:off+n]) || int64(cap(b)) != n {
			t.Fatalf("ReadRange(%d, %d) = %d bytes (cap %d), not the range's", off, n, len(b), cap(b))
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		opts    RangeOptions
		n       int64
		carved  bool
		perSlab int
	}{
		{"default", RangeOptions{}, 300, true, DefaultSlabSize / 300},
		{"default, longest carved", RangeOptions{}, DefaultSlabSize / 64, true, 64},
		{"default, one byte longer", RangeOptions{}, DefaultSlabSize/64 + 1, false, 0},
		{"4 KiB slabs", RangeOptions{SlabSize: 4 << 10}, 64, true, 64},
		{"below 4 KiB: off", RangeOptions{SlabSize: 4<<10 - 1}, 10, false, 0},
		{"off", RangeOptions{SlabSize: -1}, 300, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := NewRangeReader(src, tc.opts)
			prev := read(rr, 0, tc.n)
			adjacent := 0
			for i := 1; i < 200; i++ {
				b := read(rr, int64(i)*tc.n, tc.n)
				if address(b) == address(prev)+uintptr(tc.n) {
					adjacent++
				}
				// Appending to a carved range must not touch the next.
				_ = append(prev, 0xAA)
				if !bytes.Equal(b, data[int64(i)*tc.n:int64(i+1)*tc.n]) {
					t.Fatalf("range %d changed by an append to the one before", i)
				}
				prev = b
			}
			if !tc.carved {
				if adjacent > 10 {
					t.Errorf("%d of 199 ranges follow the one before in memory; want them not carved", adjacent)
				}
				return
			}
			// Every range but the first of each slab follows the one
			// before.
			if want := 199 - 199/tc.perSlab; adjacent < want {
				t.Errorf("%d of 199 ranges follow the one before in memory, want at least %d", adjacent, want)
			}
		})
	}

	if raceEnabled {
		return
	}
	// Bytes allocated per 300-byte range: at most 1.01 times its length,
	// the bound. Other goroutines' allocations only add to the
	// count, so a high figure is measured again.
	rr := NewRangeReader(src, RangeOptions{})
	const runs, n = 10_000, 300
	var perRange float64
	for try := 0; try < 5; try++ {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range runs {
			if _, err := rr.ReadRange(ctx, "x", int64(i), n); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if perRange = float64(after.TotalAlloc-before.TotalAlloc) / runs; perRange <= 1.01*n {
			break
		}
	}
	t.Logf("%.1f bytes allocated per %d-byte range", perRange, n)
	if perRange > 1.01*n {
		t.Errorf("%.1f bytes allocated per %d-byte range, want at most %.0f", perRange, n, 1.01*n)
	}
}

// TestReadRangeSlabsConcurrent reads short ranges from many goroutines at
// once, so that they race to carve and to replace full slabs, and checks
// every range's bytes after all are read: no two share bytes.
func TestReadRangeSlabsConcurrent(t *testing.T) {
	ctx := context.Background()
	data := randomBytes(1 << 20)
	rr := NewRangeReader(ReaderAtSource(bytes.NewReader(data)), RangeOptions{SlabSize: 4 << 10})
	const goroutines, each = 8, 500
	got := make([][][]byte, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				off, n := int64(g*each+i)*7, int64(1+(g+i)%64)
				b, err := rr.ReadRange(ctx, "x", off, n)
				if err != nil {
					t.Error(err)
					return
				}
				got[g] = append(got[g], b)
			}
		})
	}
	wg.Wait()
	for g := range got {
		for i, b := range got[g] {
			off, n := int64(g*each+i)*7, int64(1+(g+i)%64)
			if !bytes.Equal(b, data[off:off+n]) {
				t.Fatalf("goroutine %d range %d: wrong bytes", g, i)
			}
		}
	}
}

// failingSource fails every request.
type failingSource struct{ calls atomic.Int64 }

var errSourceDown = errors.New("source down")

func (s *failingSource) GetRange(context.Context, string, int64, int64) (io.ReadCloser, error) {
	s.calls.Add(1)
	return nil, errSourceDown
}

// TestReadRangesStopsAfterFailure reads a batch of many requests from a
// source that fails them all: once one has failed, the rest are not
// started, so they neither take a buffer of their size from the pool nor
// count as failed requests.
func TestReadRangesStopsAfterFailure(t *testing.T) {
	const parts = 100
	for _, concurrency := range []int{1, 4} {
		src := &failingSource{}
		rr := NewRangeReader(src, RangeOptions{MaxGap: -1, Concurrency: concurrency})
		ranges := make([]Range, parts)
		for i := range ranges {
			ranges[i] = Range{Off: int64(i) << 20, Len: 64<<10 + int64(i)<<12}
		}
		var b Batch
		if err := rr.ReadRanges(context.Background(), "x", ranges, &b); !errors.Is(err, errSourceDown) || b.Len() != 0 {
			t.Fatalf("ReadRanges(Concurrency %d) = %d ranges, %v; want 0, %v", concurrency, b.Len(), err, errSourceDown)
		}
		// Those running when the first failed, and one started as it
		// failed, at most.
		if st := rr.Stats(); st.Failed > uint64(concurrency)+1 || src.calls.Load() > int64(concurrency)+1 {
			t.Errorf("ReadRanges(Concurrency %d, %d requests): Stats() = %+v, %d calls; want at most %d of each", concurrency, parts, st, src.calls.Load(), concurrency+1)
		}
	}
}
