// Package activeseries counts the active series of a tenant: those a
// receiver or ingester appended since the last purge that could have
// dropped them, overall, per custom tracker (a set of matchers, as Mimir's
// "custom trackers"), and for native histograms, their series and buckets
// apart; optionally, per value of one label, up to a cap of values. [Tracker]
// takes the hash the caller already computed and the TSDB's own
// labels.Labels, which it keeps by reference, and maintains its totals as
// series come and go, so that reading them walks nothing. Since it holds
// every active series' labels, it reloads custom trackers without losing
// counts ([Tracker.ReloadCustomTrackers]). Times are milliseconds since the
// Unix epoch, as Prometheus timestamps. [Collector] exports the counts
// with the metric names of Mimir's ingester.
//
// Concurrency: a [Tracker] is safe for concurrent use by multiple
// goroutines, and an update of a series it already tracks takes no lock;
// see [Tracker] for the rules of its lock-free table. Allocations: an
// update of a tracked series makes none; a new series makes none of its
// own, its stripe's tables growing now and then, and the first series of
// a label value counted apart copies the value; reading the counts makes
// none.
//
// BenchmarkTrackerUpdate and BenchmarkTrackerPurge compare the tracker
// with Cortex's design (impl=cortex and impl=ingestkit; their figures are
// in BENCHMARKS.md), BenchmarkTrackerByLabel the counts by label value on
// and off, and TestTrackerMemoryPerSeries measures the memory held per
// series.
package activeseries
