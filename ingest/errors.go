package ingest

import "errors"

// ErrExemplarsUnsupported is returned by [Appender.AppendExemplars] when the
// wrapped storage.AppenderV2 does not implement storage.ExemplarAppenderV2.
var ErrExemplarsUnsupported = errors.New("ingest: appender does not implement storage.ExemplarAppenderV2")
