package ingest

import "errors"

// Errors of [Decoder], kept apart from errors.go until the lead merges them
// there. The Decoder wraps them with the request's message type, the
// byte offset and what it was decoding, as in "decoding
// io.prometheus.write.v2.Request: ingest: symbol reference outside the
// symbols table: ..."; test for them with [errors.Is].
var (
	// ErrMalformed is returned when a request is not a valid protobuf
	// message of the expected type: truncated, with a known field of the
	// wrong wire type, or with an invalid tag or varint. Where the cause is
	// a truncation the error also wraps [io.ErrUnexpectedEOF].
	ErrMalformed = errors.New("ingest: malformed remote-write request")

	// ErrSymbolRef is returned when the references of a remote-write 2.0
	// request do not resolve in its symbols table: a label, exemplar label,
	// help or unit reference at or beyond the end of the table, or label
	// references that are not (name, value) pairs. These are the cases in
	// which Prometheus's ToLabels, ToExemplar and ToMetadata fail.
	ErrSymbolRef = errors.New("ingest: symbol reference outside the symbols table")

	// ErrMessageType is returned by [Decoder.Reset] when it is given a
	// message type other than the two of the remote-write protocols,
	// prometheus.WriteRequest and io.prometheus.write.v2.Request.
	ErrMessageType = errors.New("ingest: unsupported remote-write message type")
)
