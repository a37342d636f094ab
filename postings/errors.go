package postings

import (
	"errors"
	"fmt"
	"io"
)

// Errors of [RangeReader]. Checksum mismatches in an index are reported with
// Prometheus's own encoding.ErrInvalidChecksum.
var (
	// ErrRangeTooLarge is returned when a range is longer than
	// [RangeOptions.MaxRangeSize]; nothing has been requested or allocated.
	// A length read from a corrupt table of contents or offset table ends
	// here rather than in a huge allocation.
	ErrRangeTooLarge = errors.New("postings: range longer than the limit")

	// ErrInvalidRange is returned when a range has a negative offset or
	// length, or an end (offset plus length) past math.MaxInt64, or when
	// the ranges given to [RangeReader.ReadRanges] are not sorted by
	// offset; nothing has been requested or allocated.
	ErrInvalidRange = errors.New("postings: invalid range")

	// ErrShortRead is returned when a source ends a range before its length:
	// the object is shorter than the range, or the connection was cut. No
	// partial buffer is returned with it. errors.Is(err, io.ErrUnexpectedEOF)
	// also holds for it, the meaning io.ReadFull gives a short read.
	ErrShortRead = fmt.Errorf("postings: source returned fewer bytes than the range: %w", io.ErrUnexpectedEOF)
)

// Errors of [Reader].
var (
	// ErrNotIndex is returned by [NewReader] when the object does not start
	// with the magic number of a Prometheus TSDB index.
	ErrNotIndex = errors.New("postings: not a Prometheus TSDB index (bad magic number)")

	// ErrUnsupportedVersion is returned by [NewReader] for an index format
	// other than 2 or 3 (format 1, written before Prometheus 2.0, has an
	// unsorted postings offset table and is not read).
	ErrUnsupportedVersion = errors.New("postings: unsupported index format version")

	// ErrCorrupt is returned when an index's table of contents, postings
	// offset table or a postings list is malformed: a length or offset out of
	// bounds, a truncated entry, entries out of order, or a postings list not
	// in Prometheus's raw big-endian encoding. The error wraps it with what
	// was wrong.
	ErrCorrupt = errors.New("postings: corrupt index")

	// ErrUnexpectedAllPostings is returned by [Reader.ExpandedPostings] for a
	// matcher with an empty name and value among several matchers, where
	// Prometheus's PostingsForMatchers returns the error "unexpected all
	// postings" (alone, such a matcher selects every series).
	ErrUnexpectedAllPostings = errors.New("postings: unexpected all postings")
)
