// Package ingest is the steady-state append path of a remote-write
// receiver: a request body read into one buffer sized once ([BodyReader]),
// a decoder that yields each series' labels as pairs aliasing that buffer,
// gathered in one pass, with their Prometheus hash computed from those
// pairs when it is first asked for ([Decoder]), and an appender that finds
// a series the TSDB already holds in a ref cache kept across requests
// ([Cache], [Appender], [AppenderV2]), by that hash or, when the series
// comes right after the one it followed last time, by its pairs alone,
// so that its labels are neither hashed again (or at all), nor copied,
// nor looked up in the head. Only a new series has its labels built, once. The same hash
// feeds the active-series tracker of package ingest/activeseries and, with
// the tenant, the routing hash of a Thanos hashring ([Series.ThanosHash],
// which package ingest/hashring's Ring takes). Everything takes and returns
// Prometheus's own types: storage.AppenderV2 and storage.Appender,
// labels.Labels, storage.SeriesRef, histogram and exemplar values, and
// Prometheus's error values pass through unchanged.
//
// Concurrency: [Cache] and [BodyReader] are safe for concurrent use and
// meant to be shared (one cache per TSDB or tenant: an appender binds its
// cache to the storage it opens its transaction on, and a cache given
// another storage starts empty); a [Decoder], an [Appender] or
// [AppenderV2] and the views they hand out are for one goroutine at a
// time, and are reused across requests. Allocations: in the steady state, reading a body with a known
// length into a pooled buffer, decoding a float series and resolving and
// appending it make none of their own; histograms and exemplars are
// allocated because the TSDB keeps them.
//
// BenchmarkAppend, BenchmarkDecode and BenchmarkReadBody compare each block
// with the Prometheus and standard-library code it replaces.
package ingest
