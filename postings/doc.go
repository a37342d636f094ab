// Package postings answers label matchers from a Prometheus TSDB block
// index kept in object storage, reading it in byte ranges sized once: a
// [RangeReader] fetches ranges from any [Source] (an objstore bucket as it
// is, or a local file through [ReaderAtSource]) into buffers of exactly
// their length or from a size-class pool, merging nearby ranges into one
// request, and a [Reader] reads an index's table of contents and postings
// offset table once and then fetches only the postings lists a set of
// labels.Matcher needs, returning the series refs that
// tsdb.PostingsForMatchers would, empty-matcher cases included.
//
// Concurrency: [RangeReader] and [Reader] are safe for concurrent use by
// multiple goroutines and meant to be shared (one RangeReader per bucket,
// one Reader per block); a [Batch] is for one goroutine at a time.
// Allocations: [RangeReader.ReadRange] allocates the range's length (short
// ranges are carved from shared slabs, see [RangeOptions.SlabSize]);
// [RangeReader.ReadRangeBuffer], [RangeReader.ReadRanges] and
// [Reader.ExpandedPostings] allocate nothing for the bytes they read in the
// steady state, and lengths from storage are checked against
// [RangeOptions.MaxRangeSize] before anything is allocated.
//
// BenchmarkReadRange compares a range read with io.ReadAll and with the
// length+bytes.MinRead buffer of the Thanos store gateway;
// BenchmarkExpandedPostings compares the Reader reading with io.ReadAll and
// with pooled buffers on the matcher sets of Thanos's own benchmark.
package postings
