package decode

import (
	"errors"
	"fmt"
	"io"
)

// Errors of [BodyReader]; each says which HTTP status a handler should
// answer with.
var (
	// ErrBodyTooLarge is returned when a request body is larger than
	// [BodyOptions.MaxBodySize]: either its Content-Length says so, in which
	// case nothing has been read or allocated, or its length is unknown and
	// more than the limit arrived, in which case limit+1 bytes were read.
	// A handler should answer 413 Request Entity Too Large.
	ErrBodyTooLarge = errors.New("decode: request body larger than the limit")

	// ErrBodyTruncated is returned when a request body ends before the length
	// its Content-Length announced, or a body of unknown length ends in the
	// middle of its framing (the reader reported [io.ErrUnexpectedEOF]).
	// errors.Is(err, io.ErrUnexpectedEOF) also holds for it, which is the
	// meaning io.ReadFull gives a short read; it is built with fmt.Errorf
	// rather than errors.New for that reason. A handler should answer 400 Bad
	// Request.
	ErrBodyTruncated = fmt.Errorf("decode: request body shorter than its Content-Length: %w", io.ErrUnexpectedEOF)

	// ErrBodyTooLong is returned when a request body goes on after the length
	// its Content-Length announced; at most one byte past that length has been
	// read. A handler should answer 400 Bad Request.
	ErrBodyTooLong = errors.New("decode: request body longer than its Content-Length")

	// ErrDecodedTooLarge is returned when the length in a snappy block's
	// header is larger than [BodyOptions.MaxDecodedSize]; nothing has been
	// decoded or allocated. A handler should answer 413 Request Entity Too
	// Large (Prometheus's own receiver answers 400 Bad Request).
	ErrDecodedTooLarge = errors.New("decode: snappy-decoded request body larger than the limit")

	// ErrSnappyCorrupt is returned when a request body is not a valid snappy
	// block: its length header cannot be read or its data does not decode to
	// that length. The error returned also wraps the snappy package's own
	// error (snappy.ErrCorrupt and the like). A handler should answer 400 Bad
	// Request.
	ErrSnappyCorrupt = errors.New("decode: request body is not a valid snappy block")

	// ErrInflightLimit is returned when a buffer for a request body, one of
	// its growth steps or its snappy-decoded form would take the bytes of
	// the buffers in flight past [BodyOptions.MaxInflightBytes]; nothing
	// more has been allocated, and the request's other buffers have been
	// released. The server is over its capacity, not the client: a handler
	// should answer 503 Service Unavailable, which Prometheus's sender
	// retries with backoff. (429 Too Many Requests would lose the data: the
	// sender retries it only with retry_on_http_429, off by default in
	// Prometheus v0.316.0. Mimir answers its in-flight bytes limit over
	// HTTP with 500, also retried.)
	ErrInflightLimit = errors.New("decode: request body buffers in flight over the limit")

	// ErrContentEncoding is returned by [BodyReader.ReadRequest] when the
	// request's Content-Encoding is neither absent nor "snappy", the only
	// encoding of the remote-write protocols. A handler should answer 415
	// Unsupported Media Type, as Prometheus's own receiver does.
	ErrContentEncoding = errors.New("decode: unsupported Content-Encoding (only snappy is accepted)")
)

// Errors of [Decoder]. The Decoder wraps them with the request's message
// type, the byte offset and what it was decoding, as in "decoding
// io.prometheus.write.v2.Request: ingest: symbol reference outside the
// symbols table: ..."; test for them with [errors.Is].
var (
	// ErrMalformed is returned when a request is not a valid protobuf
	// message of the expected type: truncated, with a known field of the
	// wrong wire type, or with an invalid tag or varint. Where the cause is
	// a truncation the error also wraps [io.ErrUnexpectedEOF].
	ErrMalformed = errors.New("decode: malformed remote-write request")

	// ErrSymbolRef is returned when the references of a remote-write 2.0
	// request do not resolve in its symbols table: a label, exemplar label,
	// help or unit reference at or beyond the end of the table, or label
	// references that are not (name, value) pairs. These are the cases in
	// which Prometheus's ToLabels, ToExemplar and ToMetadata fail.
	ErrSymbolRef = errors.New("decode: symbol reference outside the symbols table")

	// ErrLabelTooLong is reported for a series, or an exemplar, with a
	// label name or value longer than labels.Labels of the build in use can
	// hold: 16 MiB-1 in the default stringlabels build, whose
	// labels.ScratchBuilder panics on a longer one; no limit in the
	// slicelabels and dedupelabels builds. The series has an error
	// ([Series.Err]) and no labels, and the exemplar is left out, as for
	// [ErrSymbolRef]: a handler skips them and answers 400.
	ErrLabelTooLong = errors.New("decode: label longer than the labels build holds")

	// ErrExpandedTooLarge is returned when the label names and values of a
	// remote-write 2.0 request's series, its symbol references resolved,
	// add up to more bytes than [Decoder.SetMaxExpandedSize] allows. A
	// 2.0 request names each string once in its symbols table, so that a
	// small body can expand to series of any size: 2,000 series each
	// referencing one 100 KiB symbol are a 23 KB body and 200 MiB of
	// labels. The request is refused whole, before any series of it is
	// appended: a handler should answer 400 Bad Request, which a sender
	// does not retry.
	ErrExpandedTooLarge = errors.New("decode: labels of the request's series, symbols resolved, larger than the limit")

	// ErrMessageType is returned by [Decoder.Reset] when it is given a
	// message type other than the two of the remote-write protocols,
	// prometheus.WriteRequest and io.prometheus.write.v2.Request.
	ErrMessageType = errors.New("decode: unsupported remote-write message type")
)
