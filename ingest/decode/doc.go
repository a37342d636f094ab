// Package decode reads remote-write requests: a request body read into
// one buffer sized once and snappy-decoded within limits ([BodyReader]),
// and a decoder of Prometheus's remote-write 1.0 and 2.0 messages that
// walks the protobuf in place and yields each series' labels as pairs
// aliasing that buffer, gathered in one pass, with their Prometheus hash
// (labels.Labels.Hash of the build in use) computed from those pairs when
// it is first asked for ([Decoder], [Series]). It is what Prometheus's
// remote.DecodeWriteRequest, io.ReadAll and proto.Unmarshal do for a
// receiver, without the copies: a series' labels are built only when a
// caller asks for them. With the tenant, a series also gives the routing
// hash of a Thanos hashring ([Series.ThanosHash]). [Decoder.NextBatch]
// yields series several at a time, each in a Series of its own, for a
// caller that resolves them together (the LookupBatch of package
// ingest/refcache, as package ingest's handler does for a request whose
// series come in another order than the last one's).
//
// Concurrency: a [BodyReader] is safe for concurrent use and meant to be
// shared by a server's requests (its in-flight budget bounds them all); a
// [Decoder] and the series views it hands out are for one goroutine at a
// time, reused across requests. Allocations: reading a body with a known
// length into a pooled buffer, and decoding a float series, make none in
// the steady state; histograms and exemplars are allocated, as a caller
// may keep them. The package imports neither Prometheus's storage nor its
// tsdb.
//
// BenchmarkDecode and BenchmarkReadBody compare the package with
// Prometheus's gogo-protobuf decoding and the standard library's reading.
package decode
