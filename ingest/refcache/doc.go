// Package refcache keeps the series refs of a TSDB across remote-write
// requests: a cache of (hash, labels) to storage.SeriesRef ([Cache]) and
// appenders over Prometheus's storage.Appender ([Appender]) and
// storage.AppenderV2 ([AppenderV2]) that find a series the TSDB already
// holds by its precomputed hash, or, when it comes right after the series
// it followed last time, by its labels alone, so that its labels are
// neither hashed again, nor copied, nor looked up in the head. Only a new
// series has its labels built, once. A series is anything that gives its
// hash and compares with a label set ([SeriesLabels]), such as the series
// of package ingest/decode or labels.HashedBuilder of package
// github.com/ingestkit/ingestkit/labels. Samples, histograms, exemplars,
// metadata and Prometheus's errors pass through unchanged.
//
// Concurrency: a [Cache] is safe for concurrent use and shared by the
// appenders of one TSDB (an appender binds its cache to the storage it
// opens its transaction on, and a cache given another storage starts
// empty); an [Appender] or [AppenderV2] is for one transaction at a time
// on one goroutine, and is reused across requests. Allocations: resolving
// and appending a series in the cache makes none; a new series costs its
// labels, once.
//
// BenchmarkAppend and BenchmarkLookup compare the appenders with
// Prometheus's own Append(0, labels, ...).
package refcache
