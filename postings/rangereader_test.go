package postings

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
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
		if a := testing.AllocsPerRun(50, func() {
			if _, err := rr.ReadRange(ctx, "x", 7, n); err != nil {
				t.Fatal(err)
			}
		}); a != 1 {
			t.Errorf("ReadRange(%d bytes): %v allocs, want 1", n, a)
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
