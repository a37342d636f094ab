package decode

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"

	// The snappy package Prometheus's storage/remote (the remote-write client
	// and codec.go) imports. Prometheus's receiver middleware
	// (client_golang/exp/api/remote) uses github.com/klauspost/compress/snappy,
	// which delegates to s2 and also accepts s2's "repeat offset" copies; see
	// [BodyReader.DecodeSnappy].
	"github.com/golang/snappy"

	"github.com/ingestkit/ingestkit/internal/bufpool"
)

const (
	// DefaultMaxBodySize is the limit on a request body as it arrives (still
	// snappy-compressed) used when [BodyOptions.MaxBodySize] is zero: 32 MiB,
	// the limit of Prometheus v0.316.0's own remote-write receiver
	// (client_golang/exp/api/remote.SnappyDecodeMiddleware reads at most
	// 32 MiB+1 bytes from its 2026 versions on; the one Prometheus v0.309.1
	// requires reads a body of any size). A Prometheus sender with the default
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

	// DefaultMaxPreallocSize is the largest Content-Length that
	// [BodyReader.ReadBody] trusts when [BodyOptions.MaxPreallocSize] is
	// zero: 1 MiB, 17 times the largest body a Prometheus sender makes at
	// its default of 2000 samples a request, so that the bodies of honest
	// senders keep their one exact allocation
	// (BenchmarkReadBody/size=4KiB and size=1MiB, BenchmarkReadRequest),
	// while a client that announces 32 MiB and sends 3 bytes pins 1 MiB.
	DefaultMaxPreallocSize = 1 << 20
)

const (
	// bodyMinSize is the smallest buffer a BodyReader allocates and pools:
	// 4 KiB, an OS page, so that smaller bodies get a buffer that can be
	// pooled.
	bodyMinSize = 4 << 10

	// bodyMaxEmptyReads is how many consecutive (0, nil) reads are taken as
	// a reader making no progress, as bufio does.
	bodyMaxEmptyReads = 100

	// bodyGrowthFactor is how much the buffer of a body announced above
	// MaxPreallocSize grows each time it fills: a client pins at most this
	// many times what it sent, and the steps before the last, which is
	// exactly the body, add up to less than 4/3 of it. The 10 MiB body of
	// BenchmarkReadBody/size=10MiB/impl=ingestkit goes through 1 and 4 MiB,
	// 1.5 times the body in all where doubling would take 2.5, and a third
	// of the copying.
	bodyGrowthFactor = 4
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

	// MaxPreallocSize is the largest Content-Length that
	// [BodyReader.ReadBody] trusts: a body announced at most this long
	// gets a buffer of exactly its length before its bytes are read. A
	// longer one, unless the pool holds a buffer that fits it, starts in a
	// buffer of MaxPreallocSize that grows fourfold each time it fills, up
	// to exactly the announced length, so that a client pins at most four
	// times the bytes it sent, or MaxPreallocSize, whatever it announces.
	// Zero means [DefaultMaxPreallocSize]; MaxBodySize or more trusts every
	// Content-Length, as Go's bytes.Buffer.Grow(ContentLength) does.
	MaxPreallocSize int64

	// MaxInflightBytes bounds the bytes of the buffers that the BodyReader
	// has handed out and that have not been released, across all
	// requests: bodies being read, with their growth steps, and their
	// snappy-decoded forms. A buffer's capacity is charged to it before the
	// buffer is allocated or taken from the pool, and refunded by
	// [BodyReader.Release]; a read or decode that would go past it fails
	// at once with [ErrInflightLimit], having allocated nothing. It plays
	// the part of Mimir's
	// -distributor.instance-limits.max-inflight-push-requests-bytes, but
	// counts the memory itself rather than announced sizes. A request
	// needs up to its compressed and its decoded size at once, so a limit
	// below MaxBodySize+MaxDecodedSize turns away the largest requests the
	// other limits accept.
	//
	// Zero means no limit, as in Prometheus and by default in Mimir: a
	// library cannot know the memory of its host, and MaxPreallocSize
	// already keeps each connection from pinning more than four times what
	// it sent. A server open to untrusted clients should set it, since
	// without it N connections still pin N times MaxPreallocSize.
	MaxInflightBytes int64
}

// BodyReader reads request bodies into buffers of exactly their length,
// never beyond a limit, and snappy-decodes them into buffers likewise; the
// buffers come from a pool of its own and go back to it through
// [BodyReader.Release]. It trusts a Content-Length only up to
// [BodyOptions.MaxPreallocSize], and can bound the bytes of all the
// buffers in flight ([BodyOptions.MaxInflightBytes]), so that clients that
// announce large bodies and send few bytes pin little memory.
//
// The zero BodyReader is ready to use with the default limits and no
// in-flight limit; [NewBodyReader] sets others. A BodyReader must not be
// copied after first use (it holds sync.Pools and an atomic counter). Each
// pooled buffer is at most the larger of the two size limits, and the pool
// holds nothing the garbage collector cannot free: sync.Pool drops idle
// buffers within two GC cycles.
//
// A BodyReader is safe for concurrent use by multiple goroutines.
type BodyReader struct {
	// maxBody, maxDecoded and maxPrealloc are the limits, 0 meaning the
	// defaults, and maxInflight the in-flight limit, 0 meaning none;
	// written only by NewBodyReader, read-only afterwards.
	maxBody     int
	maxDecoded  int
	maxPrealloc int
	maxInflight int64

	// inflight is the capacity of the Buffers handed out and not released,
	// counted only when maxInflight > 0; atomic. It may exceed maxInflight
	// for an instant, by a charge that is then taken back (see acquire).
	inflight atomic.Int64

	// pool holds the released Buffers of at least bodyMinSize bytes and at
	// most the larger limit, in internal/bufpool's size classes (four to a
	// power of two); it is safe for concurrent use.
	//
	// Why fresh buffers are exactly the requested length rather than the
	// class size: a cold or unpooled read must cost no more memory than the
	// body (BenchmarkReadBody/impl=ingestkit's B/op against the body's
	// size), and Go's allocator does not round allocations above 32 KiB
	// beyond a page. So a fresh buffer of n bytes goes, when released, into
	// the class whose size is <= n, and a request for n bytes looks first in
	// the class whose size is >= n (every buffer there fits) and then in the
	// class below (whose buffers fit if they are at least n): bufpool's Fit.
	// A steady stream of equal lengths therefore hits the class below every
	// time, with no allocation and no waste. When lengths in a class vary,
	// so that a pooled buffer is too small, the new buffer is rounded up to
	// the class size (bufpool.Size): released, it lands in the class above
	// and fits every later request of that class, wasting less than a
	// quarter of it. A pooled buffer is less than 3/2 of the length it
	// serves, or 5 KiB for one of at most 4 KiB.
	pool bodyPool
}

// bodySlice gives the pool the bytes of a Buffer.
type bodySlice struct{}

func (bodySlice) Slice(b *Buffer) *[]byte { return &b.B }

// bodyPool is the size-class pool of Buffers.
type bodyPool = bufpool.Pool[Buffer, bodySlice]

// NewBodyReader returns a BodyReader with the limits of opts. It panics if a
// limit is negative. A limit larger than the largest int is taken as the
// largest int.
func NewBodyReader(opts BodyOptions) *BodyReader {
	if opts.MaxBodySize < 0 {
		panic("decode: BodyOptions.MaxBodySize is negative")
	}
	if opts.MaxDecodedSize < 0 {
		panic("decode: BodyOptions.MaxDecodedSize is negative")
	}
	if opts.MaxPreallocSize < 0 {
		panic("decode: BodyOptions.MaxPreallocSize is negative")
	}
	if opts.MaxInflightBytes < 0 {
		panic("decode: BodyOptions.MaxInflightBytes is negative")
	}
	return &BodyReader{
		maxBody:     int(min(opts.MaxBodySize, math.MaxInt)),
		maxDecoded:  int(min(opts.MaxDecodedSize, math.MaxInt)),
		maxPrealloc: int(min(opts.MaxPreallocSize, math.MaxInt)),
		maxInflight: opts.MaxInflightBytes,
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
// collector, which is always safe, except that under
// [BodyOptions.MaxInflightBytes] its bytes stay charged: the budget shrinks
// by its capacity for good. Release every Buffer (a handler does it in a
// defer, which also runs when it panics).
//
// A Buffer is not safe for concurrent use by multiple goroutines, except
// that, as with any byte slice, several may read B at once.
type Buffer struct {
	// B is the body.
	B []byte

	// probe receives the one byte read to tell whether a body goes on past
	// its length; it lives here so that the read does not allocate.
	probe [1]byte

	// budget is the in-flight counter that charged is counted in, nil if
	// none; Release refunds it. Set by BodyReader.buffer, cleared by
	// Release.
	budget  *atomic.Int64
	charged int64
}

// ReadBody reads the request body r, announced as contentLength bytes (a
// negative length, as [http.Request.ContentLength] gives -1, means
// unknown), into a Buffer whose B is exactly the body. The caller owns the
// Buffer and returns it with [BodyReader.Release]. ReadBody does not close
// r and keeps no reference to it.
//
// A contentLength above [BodyOptions.MaxBodySize] fails with
// [ErrBodyTooLarge] before anything is read or allocated. Otherwise, up to
// [BodyOptions.MaxPreallocSize] (or if the pool holds a buffer that fits),
// the buffer is sized from contentLength once; beyond it, the buffer starts
// at MaxPreallocSize and grows fourfold as it fills, to exactly
// contentLength, so that a client that announces more than it sends pins at
// most four times what it sent. A body that ends early fails with
// [ErrBodyTruncated], one that goes on with [ErrBodyTooLong] after at most
// one byte more has been read. A body of unknown length is read into
// buffers that double from 4 KiB up to the limit (their sizes add up to at
// most twice the limit), and one over the limit fails with
// [ErrBodyTooLarge] after limit+1 bytes have been read. Under
// [BodyOptions.MaxInflightBytes], a buffer or growth step that the budget
// cannot cover fails with [ErrInflightLimit] before it is allocated. An
// error of r is returned wrapped ("reading request body: ...");
// [io.ErrUnexpectedEOF] from r, which net/http gives when the connection
// closes mid-body, is reported as [ErrBodyTruncated]. On error no Buffer
// is returned and none is held (nor charged to the budget).
//
// Allocations: none in the steady state, where the pool holds a buffer that
// fits (also for unknown lengths and growing bodies, whose steps are taken
// from the pool). Otherwise two: the Buffer and exactly contentLength bytes
// (4 KiB at least, which Go's allocator rounds up to its size class below
// 32 KiB and to a page above); or two per growth step for a contentLength
// above MaxPreallocSize (their sizes add up to less than 7/3 of it) or an
// unknown length.
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
	n := int(contentLength)
	var b *Buffer
	if n > max(br.maxPreallocSize(), bodyMinSize) {
		// Untrusted: a pooled buffer that fits costs no new memory; else
		// grow as the bytes come.
		if b, _ = br.pooled(n); b == nil {
			return br.readGrowing(r, n)
		}
		if err := br.charge(b, n); err != nil {
			return nil, err
		}
	} else {
		var err error
		if b, err = br.buffer(n); err != nil {
			return nil, err
		}
	}
	eof, err := bodyReadFull(r, b.B)
	if err == nil && !eof {
		err = bodyProbe(r, b, ErrBodyTooLong)
	}
	if err != nil {
		return br.fail(b, err)
	}
	return b, nil
}

// readGrowing reads a body announced as n bytes, more than MaxPreallocSize
// and 4 KiB, into a buffer of that size that grows bodyGrowthFactor-fold
// each time it fills, the last step to exactly n.
func (br *BodyReader) readGrowing(r io.Reader, n int) (*Buffer, error) {
	b, err := br.buffer(max(br.maxPreallocSize(), bodyMinSize))
	if err != nil {
		return nil, err
	}
	for filled := 0; ; {
		eof, err := bodyReadFull(r, b.B[filled:])
		switch {
		case err != nil:
			return br.fail(b, err)
		case len(b.B) == n:
			if !eof {
				if err := bodyProbe(r, b, ErrBodyTooLong); err != nil {
					return br.fail(b, err)
				}
			}
			return b, nil
		case eof:
			return br.fail(b, ErrBodyTruncated)
		}
		filled = len(b.B)
		grown := n
		if filled <= n/bodyGrowthFactor {
			grown = filled * bodyGrowthFactor
		}
		if grown <= cap(b.B) { // a pooled buffer, already charged for its capacity
			b.B = b.B[:grown]
			continue
		}
		nb, err := br.buffer(grown)
		if err != nil {
			return br.fail(b, err)
		}
		copy(nb.B, b.B)
		br.Release(b)
		b = nb
	}
}

// readUnknown reads a body of unknown length, doubling its buffer from
// bodyMinSize up to limit.
func (br *BodyReader) readUnknown(r io.Reader, limit int) (*Buffer, error) {
	b, err := br.buffer(min(bodyMinSize, limit))
	if err != nil {
		return nil, err
	}
	b.B = b.B[:0]
	for empty := 0; ; {
		end := min(cap(b.B), limit)
		if len(b.B) == end {
			if end == limit {
				if err := bodyProbe(r, b, ErrBodyTooLarge); err != nil {
					return br.fail(b, err)
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
			nb, err := br.buffer(grown)
			if err != nil {
				return br.fail(b, err)
			}
			nb.B = nb.B[:copy(nb.B, b.B)]
			br.Release(b)
			b = nb
			continue
		}
		n, err := r.Read(b.B[len(b.B):end])
		if n < 0 || n > end-len(b.B) {
			return br.fail(b, errBodyReadCount)
		}
		b.B = b.B[:len(b.B)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return br.fail(b, bodyReadError(err))
		case n > 0:
			empty = 0
		default:
			if empty++; empty >= bodyMaxEmptyReads {
				return br.fail(b, bodyReadError(io.ErrNoProgress))
			}
		}
	}
}

// errBodyReadCount reports an io.Reader that returned an invalid count from
// Read; fail turns it into a panic once the Buffer is released, so that a
// handler whose panic net/http recovers does not leak the buffer's charge.
var errBodyReadCount = errors.New("decode: io.Reader returned an invalid count from Read")

// fail releases b and returns err, or panics if err is errBodyReadCount.
func (br *BodyReader) fail(b *Buffer, err error) (*Buffer, error) {
	br.Release(b)
	if err == errBodyReadCount {
		panic(err.Error())
	}
	return nil, err
}

// bodyReadFull fills p from r, as io.ReadFull does, and tells whether r
// reported io.EOF with the last bytes, which makes a probe needless.
func bodyReadFull(r io.Reader, p []byte) (eof bool, err error) {
	for n, empty := 0, 0; n < len(p); {
		m, err := r.Read(p[n:])
		if m < 0 || m > len(p)-n {
			return false, errBodyReadCount
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
// fails with [ErrDecodedTooLarge]. Under [BodyOptions.MaxInflightBytes], the
// decoded buffer is charged to the budget before it is allocated, and fails
// with [ErrInflightLimit] if the budget cannot cover it. (The decoded
// length is not grown as it arrives, as an untrusted Content-Length is: the
// whole block is there, and a header that lies fails the decode at once.)
// An unreadable header or a body that does
// not decode to its header's length fails with an error that wraps both
// [ErrSnappyCorrupt] and the snappy package's error; no input makes it
// panic. Decoding is github.com/golang/snappy's, which Prometheus's
// storage/remote uses. It differs from the klauspost/compress/snappy (s2)
// decoder of Prometheus's receiver middleware on inputs no snappy encoder
// produces: it rejects s2's "repeat offset" copies, which s2 accepts, and
// accepts a length header padded past 5 bytes, which s2 rejects from
// klauspost/compress v1.20 on (v1.18, which Prometheus v0.309.1 requires,
// accepts it too).
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
	b, err := br.buffer(n)
	if err != nil {
		return nil, err
	}
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
// buffer is released before it returns, so that both are in flight, and
// charged to [BodyOptions.MaxInflightBytes], only while it decodes. A
// request whose Content-Encoding is
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
// B was grown by append) or smaller than the smallest pooled size, and
// refunds its bytes to the in-flight budget that they were charged to
// ([BodyOptions.MaxInflightBytes]). b must have come from br, or from
// another BodyReader (whose budget is then the one refunded), and must not
// be used afterwards, nor released twice; a nil b is ignored. Release never
// allocates.
//
// Release is safe for concurrent use by multiple goroutines, each with its
// own Buffer.
func (br *BodyReader) Release(b *Buffer) {
	if b == nil {
		return
	}
	if b.budget != nil {
		b.budget.Add(-b.charged)
		b.budget, b.charged = nil, 0
	}
	br.put(b)
}

// put returns b, whose charge has been refunded or was never made, to br's
// pool (see Release).
func (br *BodyReader) put(b *Buffer) {
	c := cap(b.B)
	if c < bodyMinSize || c > max(br.maxBodySize(), br.maxDecodedSize()) {
		return
	}
	br.pool.Put(b)
}

// buffer returns a Buffer with len(B) == n, from the pool if it holds one
// that fits, else freshly allocated (see the comment on BodyReader.pools),
// its capacity charged to the in-flight budget; if the budget cannot cover
// it, nothing is allocated and buffer returns ErrInflightLimit.
func (br *BodyReader) buffer(n int) (*Buffer, error) {
	b, roundUp := br.pooled(n)
	if b != nil {
		if err := br.charge(b, n); err != nil {
			return nil, err
		}
		return b, nil
	}
	c := max(n, bodyMinSize)
	if roundUp {
		// Lengths in this class vary: round up, so that this buffer,
		// released, serves the whole class.
		c = min(bufpool.Size(c), max(br.maxBodySize(), br.maxDecodedSize()))
	}
	if !br.acquire(c) {
		return nil, ErrInflightLimit
	}
	b = &Buffer{B: make([]byte, n, c)}
	br.record(b, c)
	return b, nil
}

// pooled returns a pooled Buffer whose B holds n bytes, or nil without
// allocating. roundUp reports that the pool held a buffer of n's class too
// small for n (it is put back), so that lengths in that class vary and a
// fresh buffer should be rounded up to the class size.
func (br *BodyReader) pooled(n int) (b *Buffer, roundUp bool) {
	// Every pooled buffer holds at least bodyMinSize bytes: a shorter n
	// looks where those are.
	return br.pool.Fit(max(n, bodyMinSize))
}

// charge charges a pooled b to the in-flight budget and sets len(b.B) to n,
// or puts it back into the pool and returns ErrInflightLimit.
func (br *BodyReader) charge(b *Buffer, n int) error {
	if !br.acquire(cap(b.B)) {
		br.put(b)
		return ErrInflightLimit
	}
	b.B = b.B[:n]
	br.record(b, cap(b.B))
	return nil
}

// acquire takes c bytes from the in-flight budget, reporting whether they
// fit. Adding before comparing, as Mimir's distributor does, keeps the sum
// of the charges granted at or below the limit without a lock; a request
// that does not fit takes its charge back, and may for that instant make
// a concurrent one that would have fitted fail too.
func (br *BodyReader) acquire(c int) bool {
	if br.maxInflight == 0 {
		return true
	}
	if br.inflight.Add(int64(c)) > br.maxInflight {
		br.inflight.Add(-int64(c))
		return false
	}
	return true
}

// record records in b that c bytes of br's budget are charged for it.
func (br *BodyReader) record(b *Buffer, c int) {
	if br.maxInflight > 0 {
		b.budget, b.charged = &br.inflight, int64(c)
	}
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

func (br *BodyReader) maxPreallocSize() int {
	if br.maxPrealloc == 0 {
		return DefaultMaxPreallocSize
	}
	return br.maxPrealloc
}
