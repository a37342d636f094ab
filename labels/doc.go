// Package labels carries a Prometheus label set together with its hash,
// computed once, and interns the strings of label sets that outlive a request.
//
// [Hashed] pairs a [labels.Labels] with the value of its Hash method. A
// [HashedBuilder] collects (name, value) pairs as they are decoded, from byte
// slices that alias a request buffer or from strings, and hashes them as they
// arrive, so that a receiver can look a series up by hash and confirm the hit
// with [HashedBuilder.Equal] before, or instead of, building anything. Only a
// series that is new needs [HashedBuilder.Labels], which copies the bytes once
// and returns a [labels.Labels], as [labels.Builder.Labels] does;
// [HashedBuilder.Hashed] returns it with its hash. The hash is exactly
// [labels.Labels.Hash] in the labels build in use (default stringlabels, or
// the slicelabels and dedupelabels build tags); it is not stable across builds
// or Prometheus releases, and must not be persisted or sent to a process built
// differently. [HashedBuilder.TenantHash] gives, from the same pass, the
// tenant-prefixed hash that the Thanos receive hashring routes by.
//
// An [Interner] returns one canonical string per distinct byte sequence. Three
// are provided: [Table], this package's own, packs strings into shared chunks
// so that a hit costs no allocation and a miss one copy, with retained memory
// close to the strings' size; [Unique] and [Go4] put the standard library's
// unique package and go4.org/intern behind the same interface, for programs
// that share canonical strings with other code that uses those.
//
// The package is named labels because it is the companion of Prometheus's
// model/labels, whose types it takes and returns, and the repository's layout
// fixes its directory. None of its exported names is one of model/labels':
// the builder is a HashedBuilder, not a Builder. A file that imports both
// keeps the name labels for Prometheus's package, as Prometheus's code and
// the rest of this module do, and imports this one under an alias; this
// module's own code and examples use iklabels:
//
//	import (
//		"github.com/prometheus/prometheus/model/labels"
//
//		iklabels "github.com/ingestkit/ingestkit/labels"
//	)
//
// Concurrency: [Hashed] is an immutable value; [HashedBuilder] is not safe for
// concurrent use (use one per goroutine, or per request); the interners are
// safe for concurrent use by multiple goroutines. Allocations: hashing and
// [HashedBuilder.Equal] make none; [HashedBuilder.Labels] makes one in the
// default build (the label data); an interner hit makes none.
//
// BenchmarkHash and BenchmarkIntern in this package's bench_test.go compare
// each block with the Prometheus and standard-library code it replaces.
package labels
