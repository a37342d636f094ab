package ingest

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net/http"
	"strings"
	"sync"

	// The snappy package Prometheus's storage/remote (the remote-write client
	// and codec.go) imports. Prometheus v0.316.0's receiver middleware
	// (client_golang/exp/api/remote) uses github.com/klauspost/compress/snappy,
	// which delegates to s2 and also accepts s2's "repeat offset" copies; see
	// [BodyReader.DecodeSnappy].
	"github.com/golang/snappy"
)

const (
	// DefaultMaxBodySize is the limit on a request body as it arrives (still
	// snappy-compressed) used when [BodyOptions.MaxBodySize] is zero: 32 MiB,
	// the limit of Prometheus v0.316.0's own remote-write receiver
	// (client_golang/exp/api/remote.SnappyDecodeMiddleware reads at most
	// 32 MiB+1 bytes). A Prometheus sender with the default
	// max_samples_per_send of 2000 sends bodies of about 60 KiB (the captured
	// ones in testdata/remote-write are 38 to 60 KiB).
	DefaultMaxBodySize = 32 << 20

	// DefaultMaxDecodedSize is the limit on the snappy-decoded length of a
	// body used when [BodyOptions.MaxDecodedSize] is zero: 32 MiB, the limit
	// Prometheus v0.316.0's own receiver applies to the decoded length, so
	// that a receiver built on this package accepts the bodies Prometheus
	// accepts. It is the real bound on memory per request: snappy expands
	// up to 21 times, so without it a 32 MiB body could make a receiver
	// allocate 670 MiB. The captured remote-write 1.0 bodies decode to 9
	// times their size (0.5 MiB), the 2.0 ones to 3.6 times (0.2 MiB), so a
	// sender may batch 60 times more than Prometheus's default before
	// reaching it.
	DefaultMaxDecodedSize = 32 << 20
)

// Pool size classes. Class i holds buffers whose capacity is in
// [bodyMinClass<<i, bodyMinClass<<(i+1)); buffers below bodyMinClass or
// above the top class are not pooled.
const (
	bodyMinClassShift = 12 // 4 KiB, an OS page: smaller bodies get a 4 KiB buffer so that they can be pooled
	bodyMinClass      = 1 << bodyMinClassShift
	bodyNumClasses    = 29 // up to 1 TiB, beyond any sane limit; a class costs one empty sync.Pool (40 B)

	// bodyMaxEmptyReads is how many consecutive (0, nil) reads are taken as
	// a reader making no progress, as bufio does.
	bodyMaxEmptyReads = 100
)

// BodyOptions are the settings of a [BodyReader]. The zero value of each
// field means its documented default.
//
// A BodyOptions is a plain value that [NewBodyReader] copies; it is not safe
// for concurrent use by multiple goroutines while one of them modifies it.
type BodyOptions struct {
	// MaxBodySize is the largest request body, in bytes as it arrives,
	// that [BodyReader.ReadBody] accepts. Zero means [DefaultMaxBodySize].
	MaxBodySize int64

	// MaxDecodedSize is the largest snappy-decoded length that
	// [BodyReader.DecodeSnappy] accepts. Zero means
	// [DefaultMaxDecodedSize].
	MaxDecodedSize int64
}

// BodyReader reads request bodies into buffers of exactly their length,
// never beyond a limit, and snappy-decodes them into buffers likewise; the
// buffers come from a pool of its own and go back to it through
// [BodyReader.Release].
//
// The zero BodyReader is ready to use with the default limits;
// [NewBodyReader] sets others. A BodyReader must not be copied after first
// use (it holds sync.Pools). Each pooled buffer is at most the larger of the
// two limits, and the pool holds nothing the garbage collector cannot free:
// sync.Pool drops idle buffers within two GC cycles.
//
// A BodyReader is safe for concurrent use by multiple goroutines.
type BodyReader struct {
	// maxBody and maxDecoded are the limits, 0 meaning the defaults; written
	// only by NewBodyReader, read-only afterwards.
	maxBody    int
	maxDecoded int

	// pools[i] holds *Buffer (a pointer, so that Put does not allocate)
	// whose cap(B) is in [bodyMinClass<<i, bodyMinClass<<(i+1)).
	// sync.Pool is safe for concurrent use.
	//
	// Why fresh buffers are exactly the requested length rather than the
	// class size: a cold or unpooled read must cost no more memory than the
	// body (BenchmarkReadBody/impl=ingestkit holds B/op within 1% of the
	// body), and Go's allocator does not round allocations above 32 KiB
	// beyond a page. So a fresh buffer of n bytes goes, when released, into
	// the class whose size is <= n, and a request for n bytes looks first in
	// the class whose size is >= n (every buffer there fits) and then in the
	// class below (whose buffers fit if they are at least n). A steady
	// stream of equal lengths therefore hits the class below every time,
	// with no allocation and no waste. When lengths in a class vary, so that
	// a pooled buffer is too small, the new buffer is rounded up to the class
	// size: released, it lands in the class above and fits every later
	// request of that class. A pooled buffer is less than 4 times the
	// length it serves, or 4 KiB for a shorter one.
	pools [bodyNumClasses]sync.Pool
}

// NewBodyReader returns a BodyReader with the limits of opts. It panics if a
// limit is negative. A limit larger than the largest int is taken as the
// largest int.
func NewBodyReader(opts BodyOptions) *BodyReader {
	if opts.MaxBodySize < 0 {
		panic("ingest: BodyOptions.MaxBodySize is negative")
	}
	if opts.MaxDecodedSize < 0 {
		panic("ingest: BodyOptions.MaxDecodedSize is negative")
	}
	return &BodyReader{
		maxBody:    int(min(opts.MaxBodySize, math.MaxInt)),
		maxDecoded: int(min(opts.MaxDecodedSize, math.MaxInt)),
	}
}

// Buffer is a request body, or a decoded one, in memory from a
// [BodyReader]'s pool. B holds exactly the body: len(B) is its length;
// cap(B) may be larger, and the bytes past len(B) are not part of it.
//
// The caller owns a Buffer from the call that returned it until it passes it
// to [BodyReader.Release]: it may read and modify B, and keep views of it
// (subslices, strings made with unsafe) only until then. After Release the
// memory serves another request, and neither the Buffer nor any view of it
// may be used. A Buffer that is never released is left to the garbage
// collector, which is always safe.
//
// A Buffer is not safe for concurrent use by multiple goroutines, except
// that, as with any byte slice, several may read B at once.
type Buffer struct {
	// B is the body.
	B []byte

	// probe receives the one byte read to tell whether a body goes on past
	// its length; it lives here so that the read does not allocate.
	probe [1]byte
}

// ReadBody reads the request body r, announced as contentLength bytes (a
// negative length, as [http.Request.ContentLength] gives -1, means
// unknown), into a Buffer whose B is exactly the body. The caller owns the
// Buffer and returns it with [BodyReader.Release]. ReadBody does not close
// r and keeps no reference to it.
//
// A contentLength above [BodyOptions.MaxBodySize] fails with
// [ErrBodyTooLarge] before anything is read or allocated. Otherwise the
// buffer is sized from contentLength once; a body that ends early fails with
// [ErrBodyTruncated], one that goes on with [ErrBodyTooLong] after at most
// one byte more has been read. A body of unknown length is read into buffers
// that double from 4 KiB up to the limit (their sizes add up to at most
// twice the limit), and one over the limit fails with [ErrBodyTooLarge]
// after limit+1 bytes have been read. An error of r is
// returned wrapped ("reading request body: ..."); [io.ErrUnexpectedEOF] from
// r, which net/http gives when the connection closes mid-body, is reported
// as [ErrBodyTruncated]. On error no Buffer is returned and none is held.
//
// Allocations: none in the steady state, where the pool holds a buffer that
// fits (also for unknown lengths, whose growth steps are taken from the
// pool). Otherwise two: the Buffer and exactly contentLength bytes (4 KiB at
// least, which Go's allocator rounds up to its size class below 32 KiB and
// to a page above), or two per growth step for an unknown length.
//
// ReadBody is safe for concurrent use by multiple goroutines, each with its
// own r.
func (br *BodyReader) ReadBody(r io.Reader, contentLength int64) (*Buffer, error) {
	limit := br.maxBodySize()
	if contentLength < 0 {
		return br.readUnknown(r, limit)
	}
	if contentLength > int64(limit) {
		return nil, ErrBodyTooLarge
	}
	b := br.buffer(int(contentLength))
	eof, err := bodyReadFull(r, b.B)
	if err == nil && !eof {
		err = bodyProbe(r, b, ErrBodyTooLong)
	}
	if err != nil {
		br.Release(b)
		return nil, err
	}
	return b, nil
}

// readUnknown reads a body of unknown length, doubling its buffer from
// bodyMinClass up to limit.
func (br *BodyReader) readUnknown(r io.Reader, limit int) (*Buffer, error) {
	b := br.buffer(min(bodyMinClass, limit))
	b.B = b.B[:0]
	for empty := 0; ; {
		end := min(cap(b.B), limit)
		if len(b.B) == end {
			if end == limit {
				if err := bodyProbe(r, b, ErrBodyTooLarge); err != nil {
					br.Release(b)
					return nil, err
				}
				return b, nil
			}
			// Double, but go straight to the limit rather than to a
			// power of two just under it: the steps then add up to at
			// most twice the limit, never three times.
			grown := limit
			if cap(b.B) <= limit/4 {
				grown = 2 * cap(b.B)
			}
			nb := br.buffer(grown)
			nb.B = nb.B[:copy(nb.B, b.B)]
			br.Release(b)
			b = nb
			continue
		}
		n, err := r.Read(b.B[len(b.B):end])
		if n < 0 || n > end-len(b.B) {
			panic("ingest: io.Reader returned an invalid count from Read")
		}
		b.B = b.B[:len(b.B)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			br.Release(b)
			return nil, bodyReadError(err)
		case n > 0:
			empty = 0
		default:
			if empty++; empty >= bodyMaxEmptyReads {
				br.Release(b)
				return nil, bodyReadError(io.ErrNoProgress)
			}
		}
	}
}

// bodyReadFull fills p from r, as io.ReadFull does, and tells whether r
// reported io.EOF with the last bytes, which makes a probe needless.
func bodyReadFull(r io.Reader, p []byte) (eof bool, err error) {
	for n, empty := 0, 0; n < len(p); {
		m, err := r.Read(p[n:])
		if m < 0 || m > len(p)-n {
			panic("ingest: io.Reader returned an invalid count from Read")
		}
		n += m
		switch {
		case err == io.EOF:
			if n < len(p) {
				return true, ErrBodyTruncated
			}
			return true, nil
		case err != nil:
			return false, bodyReadError(err)
		case m > 0:
			empty = 0
		default:
			if empty++; empty >= bodyMaxEmptyReads {
				return false, bodyReadError(io.ErrNoProgress)
			}
		}
	}
	return false, nil
}

// bodyProbe reads one byte past a complete body: nil at EOF, over if a byte
// came.
func bodyProbe(r io.Reader, b *Buffer, over error) error {
	for range bodyMaxEmptyReads {
		n, err := r.Read(b.probe[:])
		switch {
		case n > 0:
			return over
		case err == io.EOF:
			return nil
		case err != nil:
			return bodyReadError(err)
		}
	}
	return bodyReadError(io.ErrNoProgress)
}

// bodyReadError reports an error of the body's reader.
func bodyReadError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrBodyTruncated
	}
	return fmt.Errorf("reading request body: %w", err)
}

// DecodeSnappy decodes src, a snappy block (the block format, not the
// framed one, as the remote-write protocols use), into a Buffer whose B is
// exactly the decoded bytes. The caller owns the Buffer and returns it with
// [BodyReader.Release]. src is only read, and not retained; it must not
// overlap a Buffer the caller has released.
//
// The decoded length in the block's header is checked against
// [BodyOptions.MaxDecodedSize] before anything is allocated: a longer one
// fails with [ErrDecodedTooLarge]. An unreadable header or a body that does
// not decode to its header's length fails with an error that wraps both
// [ErrSnappyCorrupt] and the snappy package's error; no input makes it
// panic. Decoding is github.com/golang/snappy's, which Prometheus's
// storage/remote uses. It differs from the klauspost/compress/snappy (s2)
// decoder of Prometheus's receiver middleware on inputs no snappy encoder
// produces: it rejects s2's "repeat offset" copies, which s2 accepts, and
// accepts a length header padded past 5 bytes, which s2 rejects.
//
// Allocations: none in the steady state, where the pool holds a buffer that
// fits; otherwise two, the Buffer and exactly the decoded length (4 KiB at
// least).
//
// DecodeSnappy is safe for concurrent use by multiple goroutines.
func (br *BodyReader) DecodeSnappy(src []byte) (*Buffer, error) {
	n, err := snappy.DecodedLen(src)
	switch {
	case errors.Is(err, snappy.ErrTooLarge): // over 2 GiB on 32-bit platforms
		return nil, ErrDecodedTooLarge
	case err != nil:
		return nil, snappyError(err)
	case n > br.maxDecodedSize():
		return nil, ErrDecodedTooLarge
	}
	b := br.buffer(n)
	if _, err := snappy.Decode(b.B, src); err != nil {
		br.Release(b)
		return nil, snappyError(err)
	}
	return b, nil
}

func snappyError(err error) error {
	return fmt.Errorf("%w: %w", ErrSnappyCorrupt, err)
}

// ReadRequest reads the body of a remote-write request and returns it
// snappy-decoded, as [BodyReader.ReadBody] with req.Body and
// req.ContentLength followed by [BodyReader.DecodeSnappy]; the compressed
// buffer is released before it returns. A request whose Content-Encoding is
// neither absent nor "snappy" fails with [ErrContentEncoding] before its
// body is read: like Prometheus's own receiver, ReadRequest takes a body
// without Content-Encoding to be snappy-compressed, as the remote-write
// specifications require every body to be. ReadRequest neither closes
// req.Body (the http.Server does) nor keeps req.
//
// The caller owns the Buffer and returns it with [BodyReader.Release].
// Errors are those of ReadBody and DecodeSnappy, unwrapped. Allocations:
// none in the steady state.
//
// ReadRequest is safe for concurrent use by multiple goroutines.
func (br *BodyReader) ReadRequest(req *http.Request) (*Buffer, error) {
	if enc := req.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "snappy") {
		return nil, ErrContentEncoding
	}
	body := io.Reader(req.Body)
	if req.Body == nil { // a client request without a body
		body = http.NoBody
	}
	raw, err := br.ReadBody(body, req.ContentLength)
	if err != nil {
		return nil, err
	}
	b, err := br.DecodeSnappy(raw.B)
	br.Release(raw)
	return b, err
}

// Release returns b to br's pool, unless it is larger than both limits (its
// B was grown by append) or smaller than the smallest pooled size. b must
// have come from br, or from another BodyReader, and must not be used
// afterwards, nor released twice; a nil b is ignored. Release never
// allocates.
//
// Release is safe for concurrent use by multiple goroutines, each with its
// own Buffer.
func (br *BodyReader) Release(b *Buffer) {
	if b == nil {
		return
	}
	c := cap(b.B)
	if c < bodyMinClass || c > max(br.maxBodySize(), br.maxDecodedSize()) {
		return
	}
	if i := bodyFloorClass(c); i < bodyNumClasses {
		br.pools[i].Put(b)
	}
}

// buffer returns a Buffer with len(B) == n, from the pool if it holds one
// that fits, else freshly allocated (see the comment on BodyReader.pools).
func (br *BodyReader) buffer(n int) *Buffer {
	i := bodyCeilClass(n)
	if i < bodyNumClasses {
		if b, ok := br.pools[i].Get().(*Buffer); ok {
			b.B = b.B[:n]
			return b
		}
		if i > 0 && uint(n) < bodyClassSize(i) {
			if b, ok := br.pools[i-1].Get().(*Buffer); ok {
				if cap(b.B) >= n {
					b.B = b.B[:n]
					return b
				}
				br.pools[i-1].Put(b)
				// Lengths in this class vary: round up, so that this
				// buffer, released, serves the whole class from class i.
				limit := max(br.maxBodySize(), br.maxDecodedSize())
				return &Buffer{B: make([]byte, n, min(bodyClassSize(i), uint(limit)))}
			}
		}
	}
	if n < bodyMinClass {
		return &Buffer{B: make([]byte, n, bodyMinClass)}
	}
	return &Buffer{B: make([]byte, n)}
}

func (br *BodyReader) maxBodySize() int {
	if br.maxBody == 0 {
		return DefaultMaxBodySize
	}
	return br.maxBody
}

func (br *BodyReader) maxDecodedSize() int {
	if br.maxDecoded == 0 {
		return DefaultMaxDecodedSize
	}
	return br.maxDecoded
}

// bodyClassSize returns the size of class i, as a uint so that the class
// above the largest int (2 GiB on 32-bit platforms) does not overflow.
func bodyClassSize(i int) uint { return bodyMinClass << uint(i) }

// bodyCeilClass returns the smallest class whose size is >= n.
func bodyCeilClass(n int) int {
	if n <= bodyMinClass {
		return 0
	}
	return bits.Len(uint(n-1)) - bodyMinClassShift
}

// bodyFloorClass returns the largest class whose size is <= c, for
// c >= bodyMinClass.
func bodyFloorClass(c int) int {
	return bits.Len(uint(c)) - 1 - bodyMinClassShift
}
