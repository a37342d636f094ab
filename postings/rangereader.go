package postings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/ingestkit/ingestkit/internal/bufpool"
)

// Defaults of [RangeOptions].
const (
	// DefaultMaxRangeSize is the largest range read by default: 1 GiB, above
	// the postings list of every series of a block of 250 million series,
	// and far below what a corrupt 64-bit length would ask for.
	DefaultMaxRangeSize = 1 << 30

	// DefaultMaxGap is the largest gap between two ranges that are read in
	// one request by default: 512 KiB, the gap the Thanos store gateway's
	// partitioner uses for postings, where a request to object storage
	// costs more than half a megabyte of transfer.
	DefaultMaxGap = 512 << 10

	// DefaultConcurrency is the number of requests [RangeReader.ReadRanges]
	// makes at once by default.
	DefaultConcurrency = 4

	// DefaultSlabSize is the size of the buffers that [RangeReader.ReadRange]
	// carves short ranges from by default: 32 KiB, four pages, allocated
	// with no rounding. Ranges of up to 512 bytes (a 64th of it) are carved.
	DefaultSlabSize = 32 << 10
)

// RangeOptions configures a [RangeReader]. The zero value means the
// defaults. [NewRangeReader] copies it and keeps no reference. A
// RangeOptions is a plain value, not safe for concurrent use: goroutines
// may read one together, but not while another writes it.
type RangeOptions struct {
	// MaxRangeSize is the longest range read, and the longest request made
	// when merging ranges. Longer ranges fail with [ErrRangeTooLarge] before
	// anything is requested or allocated. Zero means [DefaultMaxRangeSize].
	MaxRangeSize int64

	// MaxGap is the largest number of unwanted bytes between two ranges that
	// [RangeReader.ReadRanges] reads in one request rather than two. Zero
	// means [DefaultMaxGap]; a negative value turns merging off.
	MaxGap int64

	// Concurrency bounds the requests [RangeReader.ReadRanges] has in flight
	// at once. Zero means [DefaultConcurrency]; it is at least 1.
	Concurrency int

	// SlabSize is the size of the shared buffers (slabs) that
	// [RangeReader.ReadRange] carves ranges of up to SlabSize/64 bytes
	// from, one after the other. Go rounds an allocation up to its size
	// class (a 300-byte buffer takes 320 bytes, up to 12.5% more), and a
	// carved range costs its length alone. The price: a carved range keeps
	// its whole slab in memory while it is referenced, so a caller that
	// keeps short ranges for long (in a cache) should copy them, or turn
	// slabs off. Zero means [DefaultSlabSize]; a negative value, or one
	// below 4 KiB, turns slabs off.
	SlabSize int
}

// Range is a byte range of an object: Len bytes from Off. It is a plain
// value, safe for concurrent use by multiple goroutines once built and not
// modified afterwards.
type Range struct {
	Off, Len int64
}

// Buffer is a byte buffer from a [RangeReader]'s pool: B holds a range's
// bytes, and its capacity is the pool's size class. It is handed back with
// [RangeReader.Release]. A Buffer is not safe for concurrent use.
type Buffer struct {
	B []byte
}

// bufferSlice gives the pool the bytes of a Buffer.
type bufferSlice struct{}

func (bufferSlice) Slice(b *Buffer) *[]byte { return &b.B }

// bufferPool is the size-class pool of Buffers.
type bufferPool = bufpool.Pool[Buffer, bufferSlice]

// Stats are the counters of a [RangeReader] since it was created, as
// [RangeReader.Stats] copies them: a plain value, not updated afterwards,
// and not safe for concurrent use: goroutines may read one together, but
// not while another writes it.
type Stats struct {
	Requests   uint64 // GetRange calls made to the source
	Bytes      uint64 // bytes read from the source, merge gaps included
	Ranges     uint64 // ranges asked for (ReadRange and ReadRangeBuffer count one)
	RangeBytes uint64 // bytes of those ranges: Bytes - RangeBytes were read only to merge requests
	Refused    uint64 // ranges refused before any request: too long or invalid
	Failed     uint64 // requests that failed: source errors, short reads, cancellations
}

// RangeReader reads byte ranges from a [Source] into buffers sized once: a
// range of n bytes costs n bytes ([RangeReader.ReadRange]), or none
// with a buffer from its size-class pool ([RangeReader.ReadRangeBuffer],
// [RangeReader.ReadRanges]). Nearby ranges are read in one request, and
// requests run concurrently within a bound. One RangeReader, and its pool,
// is meant to be shared by every index read from the same bucket.
//
// A RangeReader is safe for concurrent use by multiple goroutines. It must
// not be copied after first use.
type RangeReader struct {
	src         Source
	maxRange    int64
	maxGap      int64
	concurrency int

	// readAll makes ReadRanges read every request with io.ReadAll into a new
	// buffer, as the Thanos store gateway once did: the baseline of
	// BenchmarkExpandedPostings. Set only by tests.
	readAll bool

	pool bufferPool // safe for concurrent use

	// slab is the slab ReadRange carves short ranges from, nil before the
	// first one and when slabs are off (slabSize 0).
	slab     atomic.Pointer[slab]
	slabSize int

	requests, bytes, ranges, rangeBytes, refused, failed atomic.Uint64
}

// NewRangeReader returns a RangeReader of src with the options opts.
func NewRangeReader(src Source, opts RangeOptions) *RangeReader {
	if src == nil {
		panic("postings: NewRangeReader with a nil Source")
	}
	r := &RangeReader{
		src:         src,
		maxRange:    opts.MaxRangeSize,
		maxGap:      opts.MaxGap,
		concurrency: opts.Concurrency,
	}
	if r.maxRange <= 0 {
		r.maxRange = DefaultMaxRangeSize
	}
	if r.maxGap == 0 {
		r.maxGap = DefaultMaxGap
	}
	if r.concurrency <= 0 {
		r.concurrency = DefaultConcurrency
	}
	switch {
	case opts.SlabSize == 0:
		r.slabSize = DefaultSlabSize
	case opts.SlabSize >= minSlabSize:
		r.slabSize = opts.SlabSize
	}
	return r
}

// minSlabSize is the smallest slab: below it, carving would save little
// and cost a slab per few ranges.
const minSlabSize = 4 << 10

// slab is a buffer that short ranges are carved from: used bytes of buf
// are taken, and the rest is free. Carved ranges share it without a lock.
type slab struct {
	used atomic.Int64
	buf  []byte
}

// buffer returns a zeroed buffer of length bytes: carved from r's slab if
// the range is short enough, else a new allocation.
func (r *RangeReader) buffer(length int64) []byte {
	if length == 0 || length > int64(r.slabSize/64) {
		return make([]byte, length)
	}
	for {
		s := r.slab.Load()
		if s != nil {
			// The full slice expression keeps an append to the range
			// from writing into the next one.
			if end := s.used.Add(length); end <= int64(len(s.buf)) {
				return s.buf[end-length : end : end]
			}
		}
		// The slab is full (what is left of it is less than a 64th of
		// it) or there is none: a new one, unless another goroutine
		// replaced it first, whose slab is then tried.
		ns := &slab{buf: make([]byte, r.slabSize)}
		ns.used.Store(length)
		if r.slab.CompareAndSwap(s, ns) {
			return ns.buf[:length:length]
		}
	}
}

// check validates a range before anything is requested or allocated. A
// range must end by math.MaxInt64: past it off+length wraps around, and a
// merged request would not cover the range.
func (r *RangeReader) check(off, length int64) error {
	if off < 0 || length < 0 || length > math.MaxInt64-off {
		r.refused.Add(1)
		return ErrInvalidRange
	}
	if length > r.maxRange {
		r.refused.Add(1)
		return ErrRangeTooLarge
	}
	return nil
}

// ReadRange returns length bytes of the object name from off in a new
// buffer of exactly length bytes, with no room to append. It fails with
// [ErrRangeTooLarge], or [ErrInvalidRange] for a negative off or length or
// an off+length past math.MaxInt64, before requesting or allocating
// anything, with [ErrShortRead] if the source ends early, and with ctx's
// error if ctx is done before or while reading; a buffer is returned only
// whole.
//
// Allocations: the buffer, plus whatever the source makes ([ReaderAtSource]
// makes none in the steady state). A range of up to a 64th of
// [RangeOptions.SlabSize] is carved from a shared slab and costs its
// length, and an allocation per slab; a longer one is an allocation of its
// own, which Go rounds up to its size class (to whole pages from 32 KiB).
func (r *RangeReader) ReadRange(ctx context.Context, name string, off, length int64) ([]byte, error) {
	r.ranges.Add(1)
	if err := r.check(off, length); err != nil {
		return nil, err
	}
	r.rangeBytes.Add(uint64(length))
	buf := r.buffer(length)
	if err := r.fill(ctx, name, off, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// ReadRangeBuffer is [RangeReader.ReadRange] into a buffer from r's pool:
// B of the returned Buffer holds the range. The caller hands it back with
// [RangeReader.Release] once done with its bytes.
//
// Allocations: none in the steady state, where the pool holds a buffer of
// the range's size class (sizes within a quarter of a power of two share
// one); otherwise two, the Buffer and its bytes rounded up to the class.
func (r *RangeReader) ReadRangeBuffer(ctx context.Context, name string, off, length int64) (*Buffer, error) {
	r.ranges.Add(1)
	if err := r.check(off, length); err != nil {
		return nil, err
	}
	r.rangeBytes.Add(uint64(length))
	b := r.pool.Get(int(length))
	if err := r.fill(ctx, name, off, b.B); err != nil {
		r.pool.Put(b)
		return nil, err
	}
	return b, nil
}

// Release hands b back to r's pool; neither b nor its bytes may be used
// afterwards. Release(nil) does nothing.
func (r *RangeReader) Release(b *Buffer) {
	r.pool.Put(b)
}

// fill reads len(buf) bytes of name from off into buf.
func (r *RangeReader) fill(ctx context.Context, name string, off int64, buf []byte) error {
	if err := ctx.Err(); err != nil {
		r.failed.Add(1)
		return err
	}
	r.requests.Add(1)
	rc, err := r.src.GetRange(ctx, name, off, int64(len(buf)))
	if err != nil {
		r.failed.Add(1)
		return fmt.Errorf("postings: get range %d+%d of %q: %w", off, len(buf), name, err)
	}
	n, err := io.ReadFull(rc, buf)
	cerr := rc.Close()
	r.bytes.Add(uint64(n))
	if err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		r.failed.Add(1)
		return r.readError(ctx, name, off, n, len(buf), err)
	}
	return nil
}

// readError describes a failed read of want bytes at off of which got
// arrived.
func (r *RangeReader) readError(ctx context.Context, name string, off int64, got, want int, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %d of %d bytes at %d of %q", ErrShortRead, got, want, off, name)
	}
	return fmt.Errorf("postings: read range %d+%d of %q: %w", off, want, name, err)
}

// readAllRange reads the range with io.ReadAll (the benchmark baseline).
func (r *RangeReader) readAllRange(ctx context.Context, name string, off, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.requests.Add(1)
	rc, err := r.src.GetRange(ctx, name, off, length)
	if err != nil {
		r.failed.Add(1)
		return nil, err
	}
	b, err := io.ReadAll(rc)
	_ = rc.Close()
	r.bytes.Add(uint64(len(b)))
	if err == nil && int64(len(b)) < length {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		r.failed.Add(1)
		return nil, r.readError(ctx, name, off, len(b), int(length), err)
	}
	return b[:length], nil
}

// part is one request of a Batch: bytes [off, end) covering ranges
// [first, last).
type part struct {
	off, end    int64
	first, last int
}

// Batch holds ranges read by [RangeReader.ReadRanges]: a view of each range
// into the buffer of the request that read it, with no second copy. The
// zero value is ready to use; a Batch is reused across calls, and its
// buffers go back to the pool on [Batch.Release] or on the next
// ReadRanges. A Batch is not safe for concurrent use.
type Batch struct {
	views [][]byte
	parts []part
	bufs  []*Buffer
	// pool is where bufs go back to, nil if they were not pooled.
	pool *bufferPool
}

// Len returns the number of ranges in b.
func (b *Batch) Len() int { return len(b.views) }

// View returns the bytes of the i-th range given to ReadRanges. It aliases
// a pooled buffer: it stays valid until [Batch.Release] or the next
// ReadRanges with b, and must not be modified.
func (b *Batch) View(i int) []byte { return b.views[i] }

// Release hands b's buffers back to the pool; the views are invalid
// afterwards. b can be used again.
func (b *Batch) Release() {
	for i, buf := range b.bufs {
		if b.pool != nil {
			b.pool.Put(buf)
		}
		b.bufs[i] = nil
	}
	clear(b.views)
	b.views, b.parts, b.bufs, b.pool = b.views[:0], b.parts[:0], b.bufs[:0], nil
}

// ReadRanges reads ranges of the object name into b, which it first
// releases. The ranges must be sorted by offset and valid as for
// [RangeReader.ReadRange]; they may overlap. If one is not, ReadRanges
// fails with [ErrInvalidRange] or [ErrRangeTooLarge] before requesting
// anything. Ranges whose gap is at most [RangeOptions.MaxGap] are read in
// one request of at most [RangeOptions.MaxRangeSize] bytes into one pooled
// buffer, and up to [RangeOptions.Concurrency] requests run at once. A view
// is only ever of bytes the source returned for its range. On error b holds
// no ranges and its buffers are back in the pool.
//
// Allocations: none of its own in the steady state for a single request
// (b's slices are reused, buffers come from the pool); with more than one
// request, the few of an errgroup and its goroutines.
func (r *RangeReader) ReadRanges(ctx context.Context, name string, ranges []Range, b *Batch) error {
	b.Release()
	if len(ranges) == 0 {
		return nil
	}
	r.ranges.Add(uint64(len(ranges)))
	// Validate everything before requesting anything. From here on every
	// Off+Len is at most math.MaxInt64, so the ends and differences below
	// do not overflow.
	for i, rg := range ranges {
		if err := r.check(rg.Off, rg.Len); err != nil {
			return err
		}
		if i > 0 && rg.Off < ranges[i-1].Off {
			r.refused.Add(1)
			return ErrInvalidRange
		}
	}
	for _, rg := range ranges {
		r.rangeBytes.Add(uint64(rg.Len))
	}
	cur := part{off: ranges[0].Off, end: ranges[0].Off + ranges[0].Len}
	for i := 1; i < len(ranges); i++ {
		rg := ranges[i]
		end := max(cur.end, rg.Off+rg.Len)
		if rg.Off-cur.end <= r.maxGap && end-cur.off <= r.maxRange {
			cur.end = end
			continue
		}
		cur.last = i
		b.parts = append(b.parts, cur)
		cur = part{off: rg.Off, end: rg.Off + rg.Len, first: i}
	}
	cur.last = len(ranges)
	b.parts = append(b.parts, cur)

	if !r.readAll {
		b.pool = &r.pool
	}
	b.bufs = append(b.bufs, make([]*Buffer, len(b.parts))...)
	var err error
	if len(b.parts) == 1 {
		err = r.fetch(ctx, name, b, 0)
	} else {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(r.concurrency)
		for i := range b.parts {
			if gctx.Err() != nil {
				// A request failed (or ctx is done): the parts not
				// started would only take their buffers to see it.
				break
			}
			g.Go(func() error { return r.fetch(gctx, name, b, i) })
		}
		err = g.Wait()
		if err == nil {
			// A cancellation of ctx seen by the group as gctx's.
			err = ctx.Err()
		}
	}
	if err != nil {
		b.Release()
		return err
	}
	if err := b.cut(ranges); err != nil {
		r.failed.Add(1)
		b.Release()
		return err
	}
	return nil
}

// cut sets b's views: each range's bytes in the buffer of the part that
// read it. A view lies within the bytes the source returned for its part,
// or cut fails: slicing a pooled buffer past its length would hand back
// what an earlier read left in its capacity.
func (b *Batch) cut(ranges []Range) error {
	b.views = append(b.views, make([][]byte, len(ranges))...)
	for i, p := range b.parts {
		buf := b.bufs[i].B
		buf = buf[:len(buf):len(buf)]
		for j := p.first; j < p.last; j++ {
			rg := ranges[j]
			s := rg.Off - p.off
			if s < 0 || s > int64(len(buf)) || rg.Len > int64(len(buf))-s {
				return fmt.Errorf("%w: range %d+%d outside the %d bytes read at %d", ErrInvalidRange, rg.Off, rg.Len, len(buf), p.off)
			}
			b.views[j] = buf[s : s+rg.Len : s+rg.Len]
		}
	}
	return nil
}

// fetch reads part i of b into b.bufs[i]. Each goroutine writes only its
// own element of b.bufs.
func (r *RangeReader) fetch(ctx context.Context, name string, b *Batch, i int) error {
	p := b.parts[i]
	n := p.end - p.off
	if r.readAll {
		if n == 0 {
			b.bufs[i] = &Buffer{}
			return nil
		}
		data, err := r.readAllRange(ctx, name, p.off, n)
		if err != nil {
			return err
		}
		b.bufs[i] = &Buffer{B: data}
		return nil
	}
	if err := ctx.Err(); err != nil {
		// Another part failed while this one waited for its turn: no
		// buffer for it.
		r.failed.Add(1)
		return err
	}
	buf := r.pool.Get(int(n))
	if n > 0 {
		if err := r.fill(ctx, name, p.off, buf.B); err != nil {
			r.pool.Put(buf)
			return err
		}
	}
	b.bufs[i] = buf
	return nil
}

// Stats returns r's counters.
func (r *RangeReader) Stats() Stats {
	var s Stats
	r.UpdateStats(&s)
	return s
}

// UpdateStats sets *s to r's counters, without allocating.
func (r *RangeReader) UpdateStats(s *Stats) {
	*s = Stats{
		Requests:   r.requests.Load(),
		Bytes:      r.bytes.Load(),
		Ranges:     r.ranges.Load(),
		RangeBytes: r.rangeBytes.Load(),
		Refused:    r.refused.Load(),
		Failed:     r.failed.Load(),
	}
}
