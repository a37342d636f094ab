package postings

import (
	"context"
	"io"
	"math"
	"sync"
)

// Source reads byte ranges of named objects. Its single method has the
// signature of GetRange in github.com/thanos-io/objstore, so every objstore
// Bucket (and BucketReader) is a Source as it is, with no adapter.
//
// GetRange returns a reader of exactly length bytes of the object name
// starting at off; the caller closes it. A Source must be safe for
// concurrent use by multiple goroutines: [RangeReader.ReadRanges] calls it
// from several at once.
type Source interface {
	GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error)
}

// ReaderAtSource returns a [Source] that reads every object name from r,
// such as an *os.File holding one index: the name is ignored. Its readers
// come from a pool and go back to it on Close, so a range read through it
// makes no allocation of its own in the steady state. A range with a
// negative offset or length, or an end past math.MaxInt64, fails with
// [ErrInvalidRange]. It is safe for concurrent use by multiple goroutines
// if r is, as an *os.File is.
func ReaderAtSource(r io.ReaderAt) Source {
	return &readerAtSource{r: r}
}

type readerAtSource struct {
	r io.ReaderAt
	// pool holds *sectionReader; sync.Pool is safe for concurrent use.
	pool sync.Pool
}

func (s *readerAtSource) GetRange(ctx context.Context, _ string, off, length int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// An end past math.MaxInt64 would wrap negative and read as an empty
	// range.
	if off < 0 || length < 0 || length > math.MaxInt64-off {
		return nil, ErrInvalidRange
	}
	sr, ok := s.pool.Get().(*sectionReader)
	if !ok {
		sr = new(sectionReader)
	}
	sr.src, sr.off, sr.end = s, off, off+length
	return sr, nil
}

// sectionReader is io.SectionReader with a Close that returns it to its
// source's pool.
type sectionReader struct {
	src      *readerAtSource
	off, end int64
}

func (r *sectionReader) Read(p []byte) (int, error) {
	if r.src == nil {
		return 0, io.ErrClosedPipe
	}
	if r.off >= r.end {
		return 0, io.EOF
	}
	if rem := r.end - r.off; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := r.src.r.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n == len(p) && n > 0 {
		// ReadAt may report EOF with the last bytes of the object; the
		// next Read reports it if the range goes on.
		err = nil
	}
	return n, err
}

func (r *sectionReader) Close() error {
	if s := r.src; s != nil {
		r.src = nil
		r.off, r.end = 0, 0
		// Like any io.ReadCloser, a closed reader must not be used again:
		// the next GetRange may hand it out.
		s.pool.Put(r)
	}
	return nil
}
