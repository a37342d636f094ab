// Package exemplars is an in-memory exemplar store that a Prometheus fork
// swaps in for tsdb.CircularExemplarStorage: [Ring] keeps the same
// exemplars, rejects the same ones with the same errors, drops the same
// ones when full (the oldest ingested), and answers Select,
// IterateExemplars and Resize the same way, in less memory and time. It
// holds exemplars by value, in 48 bytes each (64 upstream): a slot free of
// pointers, which the garbage collector never reads, and the exemplar's
// labels in a parallel array. It finds a series by the hash of its labels
// that the caller may already have ([Ring.AddExemplarHash]), or, in the
// default build, given the very labels.Labels it was added with (as a
// Prometheus Head passes them), by their address ([Ring.AddExemplar]),
// rather than by a key built from the labels on every add, finds the
// place of an exemplar far out of order by a binary search rather than a
// walk of its series, and resizes in place, moving only the exemplars it
// must and allocating only the slots a grow adds. It takes and returns
// Prometheus's own types (labels.Labels, exemplar.Exemplar,
// exemplar.QueryResult, storage errors), implements
// storage.ExemplarQueryable and, without importing package tsdb,
// tsdb.ExemplarStorage, and reports Prometheus's exemplar metrics through
// an optional [Collector].
//
// Concurrency: a Ring is safe for concurrent use by multiple goroutines;
// one mutex guards it. Adds hold it for the add; Select holds it only to
// list the series, to count the exemplars it selects and to copy them, and
// evaluates matchers, allocates, sorts and builds its result without it.
// Allocations: adding to a series the ring has, validating, and reading
// stats make none; a new series may grow the index or the series table;
// Select makes two (its result and the array of the exemplars it copies);
// a shrink makes none, and a grow two, of the slots it adds and of their
// labels (of the new size, once the ring has 8 segments; see
// Ring.Resize).
//
// BenchmarkAddExemplar, BenchmarkAddExemplarOutOfOrder,
// BenchmarkResizeExemplars and BenchmarkSelectExemplars in this package's
// bench_test.go compare each with tsdb.CircularExemplarStorage in the same
// run; TestDifferential (and FuzzDifferential) drives both with the same
// random sequences and compares every result after every step.
package exemplars
