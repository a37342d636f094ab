// Package bufpool is a pool of byte buffers in size classes four to a power
// of two, so that a buffer handed out for n bytes wastes less than a quarter
// of its capacity and a buffer returned for one size serves every later
// request of that size without allocating.
//
// A [Pool] is safe for concurrent use by multiple goroutines; its zero value
// is ready to use. [Pool.Get] makes no allocation when the pool holds a
// buffer of the class, else two (the [Buffer] and its bytes, rounded up to
// the class size); [Pool.Put] makes none.
//
// BenchmarkReadRange/impl=ingestkit-pool in package postings backs the
// zero-allocation claim.
package bufpool
