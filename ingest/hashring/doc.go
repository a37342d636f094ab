// Package hashring places series on the receivers of a Thanos receive
// hashring exactly as Thanos does: the hashmod and ketama placement of
// [Ring], with Thanos's zone-aware replica spreading, and the tenant routing
// and shuffle sharding of a Thanos hashrings file ([ParseConfig],
// [Hashrings]). A Thanos, Cortex or Mimir fork routes a series by its
// routing hash, Thanos's labelpb.HashWithPrefix of the tenant and the
// series' labels; a [Ring] takes that hash once and returns every replica
// from it, where Thanos hashes the labels again for each replica. [Hash]
// computes it from a labels.Labels; package ingest's decoder computes the
// same value in its decoding pass (Series.ThanosHash), with no second pass
// over the labels.
//
// The names are those of Thanos receive, with the package name standing in
// for its "Hashring" prefix: [Endpoint]; [Algorithm] (HashringAlgorithm)
// with [AlgorithmHashmod] and [AlgorithmKetama]; [Config] (HashringConfig)
// for one hashring of the file, read by [ParseConfig]; and
// [ShuffleShardingConfig]. [Hashrings] is what Thanos builds from the whole
// file (its multiHashring), and [Options] holds the settings Thanos takes
// from its flags.
//
// Concurrency: a [Ring] and a [Hashrings] are immutable once built (but for
// the cache of shuffle-sharded rings, which guards itself) and safe for
// concurrent use by multiple goroutines; one is meant to serve every
// request handler, and is replaced, not changed, when the hashrings file
// changes. Allocations: [Ring.Replicas] makes none when its destination has
// room, [Ring.Replica] and [Hash] make none, and [Hashrings.Ring] makes
// none but when it builds a tenant's shuffle-sharded ring.
//
// BenchmarkRing compares [Ring.Replicas] with Thanos's own GetN, which
// hashes the series' labels again for each replica; BenchmarkNewRing
// measures building a ketama ring. Their figures are in BENCHMARKS.md.
package hashring
