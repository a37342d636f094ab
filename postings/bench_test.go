package postings

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
)

// BenchmarkReadRange reads one range of an in-memory object through
// ReaderAtSource (which allocates nothing itself), so that B/op is the
// cost of the range read alone: impl=readall is io.ReadAll of the range
// reader, as the Thanos store gateway once read index ranges; impl=minread
// is its later form, a buffer of length+bytes.MinRead filled by ReadFrom;
// impl=ingestkit is ReadRange (length bytes: a 300-byte range is carved
// from a shared 32 KiB slab, where a buffer of its own would take Go's
// 320-byte size class; longer ranges are allocations of exactly their
// length); impl=ingestkit-pool is ReadRangeBuffer and Release (none).
func BenchmarkReadRange(b *testing.B) {
	ctx := context.Background()
	data := randomBytes(2 << 20)
	src := ReaderAtSource(bytes.NewReader(data))
	rr := NewRangeReader(src, RangeOptions{})
	for _, size := range []struct {
		name string
		n    int64
	}{{"300B", 300}, {"64KiB", 64 << 10}, {"1.5MiB", 1536 << 10}} {
		const off = 1234
		b.Run("size="+size.name+"/impl=readall", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size.n)
			for b.Loop() {
				rc, err := src.GetRange(ctx, "x", off, size.n)
				if err != nil {
					b.Fatal(err)
				}
				buf, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || int64(len(buf)) != size.n {
					b.Fatal(len(buf), err)
				}
			}
		})
		b.Run("size="+size.name+"/impl=minread", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size.n)
			for b.Loop() {
				rc, err := src.GetRange(ctx, "x", off, size.n)
				if err != nil {
					b.Fatal(err)
				}
				buf := bytes.NewBuffer(make([]byte, 0, size.n+bytes.MinRead))
				_, err = buf.ReadFrom(rc)
				rc.Close()
				if err != nil || int64(buf.Len()) != size.n {
					b.Fatal(buf.Len(), err)
				}
			}
		})
		b.Run("size="+size.name+"/impl=ingestkit", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size.n)
			for b.Loop() {
				if _, err := rr.ReadRange(ctx, "x", off, size.n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("size="+size.name+"/impl=ingestkit-pool", func(b *testing.B) {
			// The steady state: the pool holds a buffer of the class. (The
			// first b.Loop call resets the counters.)
			buf, err := rr.ReadRangeBuffer(ctx, "x", off, size.n)
			if err != nil {
				b.Fatal(err)
			}
			rr.Release(buf)
			b.ReportAllocs()
			b.SetBytes(size.n)
			for b.Loop() {
				buf, err := rr.ReadRangeBuffer(ctx, "x", off, size.n)
				if err != nil {
					b.Fatal(err)
				}
				rr.Release(buf)
			}
		})
	}
}

// BenchmarkExpandedPostings answers the seed matcher sets of the issue
// (those of Thanos's benchmarkExpandedPostings) on the 300,010-series test
// block held in memory. Both impls are the same Reader: impl=readall reads
// every request with io.ReadAll into a new buffer, as the Thanos store
// gateway did before it preallocated; impl=ingestkit reads into pooled
// buffers sized once. Both allocate the result, as Thanos's
// ExpandedPostings does.
func BenchmarkExpandedPostings(b *testing.B) {
	ctx := context.Background()
	data, err := os.ReadFile(testIndex(b))
	if err != nil {
		b.Fatal(err)
	}
	src := ReaderAtSource(bytes.NewReader(data))
	readAll := NewRangeReader(src, RangeOptions{})
	readAll.readAll = true
	impls := []struct {
		name string
		rr   *RangeReader
	}{
		{"readall", readAll},
		{"ingestkit", NewRangeReader(src, RangeOptions{})},
	}
	readers := make([]*Reader, len(impls))
	for i, impl := range impls {
		if readers[i], err = NewReader(ctx, impl.rr, "index", int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range seedCases() {
		for i, impl := range impls {
			b.Run("matchers="+c.name+"/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := readers[i].ExpandedPostings(ctx, nil, c.ms...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
