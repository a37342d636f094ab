// Package promcompat gives tests, and the examples that run Prometheus's
// own code side by side with ingestkit's (the receiver's demo and
// benchmarks), one call for each Prometheus API whose signature changed
// between the releases ingestkit supports (v0.309.1 to v0.316.0), so that
// they build against every one of them and use the release they are built
// with as their oracle. It names no API that the
// oldest release lacks: a newer signature is reached through reflection or
// an interface assertion, and where the release in use cannot do what is
// asked, the function says so (an error, or false) rather than pretending.
//
// The functions keep no state (but for one probe's answer, found once)
// and are safe for concurrent use by multiple
// goroutines. They are outside every hot path and make no allocation
// promise.
package promcompat
