package ingest

import (
	"errors"
	"fmt"
	"io"
)

// The errors of [BodyReader]. They are kept apart from errors.go only until
// the lead merges them there; each says which HTTP status a handler should
// answer with.
var (
	// ErrBodyTooLarge is returned when a request body is larger than
	// [BodyOptions.MaxBodySize]: either its Content-Length says so, in which
	// case nothing has been read or allocated, or its length is unknown and
	// more than the limit arrived, in which case limit+1 bytes were read.
	// A handler should answer 413 Request Entity Too Large.
	ErrBodyTooLarge = errors.New("ingest: request body larger than the limit")

	// ErrBodyTruncated is returned when a request body ends before the length
	// its Content-Length announced, or a body of unknown length ends in the
	// middle of its framing (the reader reported [io.ErrUnexpectedEOF]).
	// errors.Is(err, io.ErrUnexpectedEOF) also holds for it, which is the
	// meaning io.ReadFull gives a short read; it is built with fmt.Errorf
	// rather than errors.New for that reason. A handler should answer 400 Bad
	// Request.
	ErrBodyTruncated = fmt.Errorf("ingest: request body shorter than its Content-Length: %w", io.ErrUnexpectedEOF)

	// ErrBodyTooLong is returned when a request body goes on after the length
	// its Content-Length announced; at most one byte past that length has been
	// read. A handler should answer 400 Bad Request.
	ErrBodyTooLong = errors.New("ingest: request body longer than its Content-Length")

	// ErrDecodedTooLarge is returned when the length in a snappy block's
	// header is larger than [BodyOptions.MaxDecodedSize]; nothing has been
	// decoded or allocated. A handler should answer 413 Request Entity Too
	// Large (Prometheus's own receiver answers 400 Bad Request).
	ErrDecodedTooLarge = errors.New("ingest: snappy-decoded request body larger than the limit")

	// ErrSnappyCorrupt is returned when a request body is not a valid snappy
	// block: its length header cannot be read or its data does not decode to
	// that length. The error returned also wraps the snappy package's own
	// error (snappy.ErrCorrupt and the like). A handler should answer 400 Bad
	// Request.
	ErrSnappyCorrupt = errors.New("ingest: request body is not a valid snappy block")

	// ErrContentEncoding is returned by [BodyReader.ReadRequest] when the
	// request's Content-Encoding is neither absent nor "snappy", the only
	// encoding of the remote-write protocols. A handler should answer 415
	// Unsupported Media Type, as Prometheus's own receiver does.
	ErrContentEncoding = errors.New("ingest: unsupported Content-Encoding (only snappy is accepted)")
)
