// Package thanos puts ingestkit's blocks inside Thanos receive (v0.42.5,
// the Thanos module this module requires, at exactly the versions Thanos
// pins: Prometheus v0.309.1 among them, which TestThanosVersionsUnchanged
// checks), in two ways a fork chooses between:
//
//   - [TenantStorage], without changing Thanos: a receive.TenantStorage
//     over Thanos's MultiTSDB whose appenders answer the storage.GetRef of
//     an unchanged receive.Writer (and so receive.Handler) from a per-tenant
//     [refcache.Cache].
//   - [Writer], replacing receive.Writer: the same Write, through the
//     blocks (labels hashed as their pairs arrive, the request looked up in
//     the tenant's cache at once, labels built only for new series, samples
//     appended in the head's order), with Thanos's outcomes and errors.
//
// TestWriterMatchesThanos holds both to Thanos's own Writer over identical
// storages, MultiTSDB included, through a prune that closes and removes the
// tenants' TSDBs and the writes that re-create them. BenchmarkWriter and
// BenchmarkHandlerReceive measure them on Thanos's own benchmark cases, and
// docs/thanos.md tells a fork what to change. [Hashrings] gives ingestkit's
// routing for Thanos's hashrings configuration.
//
// Concurrency: a [TenantStorage] and a [Writer] are safe for concurrent use,
// as Thanos uses its storage and Writer; the appenders a TenantStorage hands
// out are for one request each, as Thanos's are. Allocations: looking up and
// appending a series the cache holds makes none (TestAppenderAllocs); a
// Writer's request makes no more than Thanos's Writer's (TestWriterAllocs).
//
// Thanos builds with -tags slicelabels, and so must anything that runs its
// receive package: its labels conversions are only valid in that build. The
// tests run only in that build.
package thanos
