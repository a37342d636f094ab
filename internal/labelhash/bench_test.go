package labelhash

import (
	"fmt"
	"testing"
)

// BenchmarkHash compares Labels.Hash() on a built label set with the Hasher
// fed the same pairs from byte slices, as a protobuf decoder would: one
// Write per pair (impl=ingestkit), or the series' pairs in one WritePairs
// (impl=ingestkit-pairs), as package ingest's decoder does.
func BenchmarkHash(b *testing.B) {
	for _, tc := range []struct{ n, valueLen int }{{1, 16}, {10, 16}, {30, 16}, {10, 200}} {
		ls := benchLabels(tc.n, tc.valueLen)
		names, values := pairsOf(ls)
		// The bytes of the names and values, the same in every labels
		// build: ls.ByteSize() counts symbol numbers under dedupelabels,
		// where it named both 10-label cases bytes=40.
		size := 0
		for i := range names {
			size += len(names[i]) + len(values[i])
		}
		name := fmt.Sprintf("labels=%d/bytes=%d", tc.n, size)
		b.Run(name+"/impl=prometheus", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var sink uint64
			for b.Loop() {
				sink += ls.Hash()
			}
			_ = sink
		})
		b.Run(name+"/impl=ingestkit", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var sink uint64
			var h Hasher
			for b.Loop() {
				h.Reset()
				for i := range names {
					h.Write(names[i], values[i])
				}
				sink += h.Sum64()
			}
			_ = sink
		})
		ps := make([]Pair, len(names))
		for i := range names {
			ps[i] = Pair{names[i], values[i]}
		}
		b.Run(name+"/impl=ingestkit-pairs", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var sink uint64
			var h Hasher
			for b.Loop() {
				h.Reset()
				h.WritePairs(ps)
				sink += h.Sum64()
			}
			_ = sink
		})
	}
}
