// Package thanos is, for now, a build proof: it compiles ingestkit's
// blocks inside the module graph of Thanos v0.42.5, at exactly the versions
// Thanos pins (Prometheus v0.309.1 among them, which its own tests check),
// beside the Thanos types each block takes or replaces. It holds two
// small pieces of the integration: [TenantStorage], a
// receive.TenantStorage whose appenders keep each tenant's series refs in
// a [refcache.Cache], and [Hashrings], Thanos's hashrings configuration as
// ingestkit's rings. The integration itself, the wrapper wired into a
// Thanos receiver, measured and documented for a fork, comes in a later
// issue.
//
// Concurrency: a [TenantStorage] is safe for concurrent use, as Thanos's
// receive.Writer uses its storage; the appenders it hands out are for one
// request each, as Thanos's are. Allocations: a request's appendable and
// appenders are a few allocations; looking up and appending a series the
// cache holds makes none (TestAppenderAllocs).
//
// Thanos builds with -tags slicelabels, and so must anything that runs its
// receive package: its labels conversions are only valid in that build.
// TestWriterDifferential, which compares Thanos's Writer over a
// [TenantStorage] with Thanos's Writer alone, runs only in that build.
package thanos
