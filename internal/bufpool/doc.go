// Package bufpool is a pool of byte buffers in size classes four to a power
// of two, so that a buffer rounded up to its class wastes less than a
// quarter of its capacity, and a buffer returned for one size serves every
// later request of that size without allocating. It is the one buffer pool
// of the module: postings' RangeReader and ingest's BodyReader both hold
// one, each of its own buffer type.
//
// A [Pool] is safe for concurrent use by multiple goroutines; its zero value
// is ready to use. [Pool.Fit] and [Pool.Put] make no allocation;
// [Pool.Get] makes none when the pool holds a buffer that fits, else two
// (the buffer and its bytes, rounded up to the class size).
//
// BenchmarkReadRange/impl=ingestkit-pool in package postings and
// BenchmarkReadBody/impl=ingestkit-pooled in package ingest back the
// zero-allocation claim.
package bufpool
