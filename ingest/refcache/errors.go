package refcache

import "errors"

// Errors of the appenders.
var (
	// ErrExemplarsUnsupported is returned by [AppenderV2.AppendExemplars]
	// when the wrapped storage.AppenderV2 has no AppendExemplars method
	// (storage.ExemplarAppenderV2, Prometheus v0.316.0 on): exemplars then
	// go in the options of [AppenderV2.Append].
	ErrExemplarsUnsupported = errors.New("refcache: appender does not implement storage.ExemplarAppenderV2")

	// ErrInvalidSeries is returned by [AppenderV2.Lookup] and
	// [Appender.Lookup] for a series whose Err method reports an error (a
	// 2.0 series of package ingest/decode whose label or metadata
	// references do not resolve); the error returned also wraps the
	// series' own error. Such a series has no labels and must not be
	// appended: Prometheus's handler skips it, writes the rest of the
	// request and answers 400 Bad Request, and a receiver should do the
	// same.
	ErrInvalidSeries = errors.New("refcache: series cannot be appended")
)
