package labelhash

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// BenchmarkHash compares Labels.Hash() on a built label set with the Hasher
// fed the same pairs from byte slices, as a protobuf decoder would: one
// Write per pair (impl=ingestkit), or the series' pairs in one WritePairs
// (impl=ingestkit-pairs), as package ingest's decoder does.
//
// impl=floor is the floor of hashing from pairs that the issue names: the
// series' whole stream (the bytes that the hasher gathers) copied into a
// buffer in one move, then one xxhash.Sum64, as if gathering the pairs cost
// no more than copying their bytes in one piece. It shows beside the others
// how much of impl=ingestkit-pairs is the copy and the hash, and how much
// the gathering of separate pieces.
//
// The pairs are views of one remote-write 1.0 encoding of the series, as the
// decoders give them: each name and value is followed in memory by the rest
// of the request, which the hasher's word copies may read.
func BenchmarkHash(b *testing.B) {
	for _, tc := range []struct{ n, valueLen int }{{1, 16}, {10, 16}, {30, 16}, {10, 200}} {
		ls := benchLabels(tc.n, tc.valueLen)
		names, values := wirePairsOf(ls)
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
		b.Run(name+"/impl=floor", func(b *testing.B) {
			var h Hasher
			h.WritePairs(ps)
			stream, ok := h.Stream()
			if !ok {
				b.Skip("the stream does not fit the hasher's buffer")
			}
			stream = slices.Clone(stream)
			if xxhash.Sum64(stream) != ls.Hash() {
				b.Fatal("the stream's xxhash is not Labels.Hash()")
			}
			buf := make([]byte, len(stream))
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var sink uint64
			for b.Loop() {
				copy(buf, stream)
				sink += xxhash.Sum64(buf)
			}
			_ = sink
		})
	}
}
