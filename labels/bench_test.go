package labels

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"unique"

	"github.com/prometheus/prometheus/model/labels"
	"go4.org/intern"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

// BenchmarkHash compares three ways to get the hash of a series whose labels
// arrive as byte slices in a request buffer:
//   - impl=prometheus: Labels.Hash() on a label set that is already built,
//     the floor for a caller that has a labels.Labels;
//   - impl=prometheus-decode: what a Prometheus decoder does to get there,
//     ScratchBuilder.Add of the pairs, Labels(), Hash();
//   - impl=ingestkit: HashedBuilder.Add of the pairs and HashedBuilder.Hash, which builds
//     nothing.
func BenchmarkHash(b *testing.B) {
	for _, n := range []int{1, 10, 30} {
		names, values := typicalPairs(n)
		sb := labels.NewScratchBuilder(n)
		for i := range names {
			sb.Add(string(names[i]), string(values[i]))
		}
		ls := sb.Labels()
		size := int64(ls.ByteSize())
		b.Run(fmt.Sprintf("labels=%d/impl=prometheus", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size)
			var sink uint64
			for b.Loop() {
				sink += ls.Hash()
			}
			_ = sink
		})
		b.Run(fmt.Sprintf("labels=%d/impl=prometheus-decode", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size)
			sb := labels.NewScratchBuilder(n)
			var sink uint64
			for b.Loop() {
				sb.Reset()
				for i := range names {
					sb.Add(bytestr.String(names[i]), bytestr.String(values[i]))
				}
				sink += sb.Labels().Hash()
			}
			_ = sink
		})
		b.Run(fmt.Sprintf("labels=%d/impl=ingestkit", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size)
			var bld HashedBuilder
			var sink uint64
			for b.Loop() {
				bld.Reset()
				for i := range names {
					bld.Add(names[i], values[i])
				}
				sink += bld.Hash()
			}
			_ = sink
		})
	}
}

const (
	internStream   = 1 << 20 // strings per pass
	internDistinct = 10_000
)

// internInput returns internStream fresh byte slices (each its own copy, as
// a decoder would see them in successive request buffers) drawn from
// internDistinct values.
func internInput() [][]byte {
	vals := internValues(internDistinct)
	out := make([][]byte, internStream)
	for i := range out {
		out[i] = append([]byte(nil), vals[(i*7919)%internDistinct]...)
	}
	return out
}

// internGCEvery is how many strings BenchmarkIntern interns between two
// garbage collections: a receiver allocates enough per request that GCs come
// often, and what an interner keeps across them is what it is for.
const internGCEvery = 1 << 16

// BenchmarkIntern interns a stream of 1M strings from 10k distinct values,
// arriving as fresh byte slices; one op is one string, and a GC runs (off the
// clock) every internGCEvery strings. impl=none copies each string (what a
// decoder does without interning); impl=unique and impl=go4 call the
// libraries the usual way, dropping the handle; impl=ingestkit is Table;
// impl=ingestkit-unique and impl=ingestkit-go4 are this package's adapters
// over the two libraries. Two metrics describe memory after interning the 10k
// distinct values once into a fresh interner and collecting garbage:
// heap-B/B, the heap it holds per byte of distinct strings (index included),
// and, for Table, strings-B/B, the memory holding the strings' bytes per byte.
func BenchmarkIntern(b *testing.B) {
	input := internInput()
	for _, tc := range []struct {
		name string
		// setup returns the function that interns one string and the
		// interner behind it (nil for the libraries used directly).
		setup func() (func([]byte) string, any)
	}{
		{"none", func() (func([]byte) string, any) { return func(v []byte) string { return string(v) }, nil }},
		{"unique", func() (func([]byte) string, any) {
			return func(v []byte) string { return unique.Make(string(v)).Value() }, nil
		}},
		{"go4", func() (func([]byte) string, any) {
			return func(v []byte) string { return intern.GetByString(string(v)).Get().(string) }, nil
		}},
		{"ingestkit", func() (func([]byte) string, any) { t := new(Table); return t.Intern, t }},
		{"ingestkit-unique", func() (func([]byte) string, any) { u := new(Unique); return u.Intern, u }},
		{"ingestkit-go4", func() (func([]byte) string, any) { g := new(Go4); return g.Intern, g }},
	} {
		b.Run("impl="+tc.name, func(b *testing.B) {
			f, _ := tc.setup()
			b.ReportAllocs()
			var sink string
			i := 0
			for b.Loop() {
				sink = f(input[i])
				if i++; i%internGCEvery == 0 {
					b.StopTimer()
					runtime.GC()
					b.StartTimer()
					if i == len(input) {
						i = 0
					}
				}
			}
			_ = sink
			b.StopTimer()
			runtime.KeepAlive(input)
			if heap, strs := internRetained(tc.setup); heap > 0 {
				b.ReportMetric(heap, "heap-B/B")
				if strs > 0 {
					b.ReportMetric(strs, "strings-B/B")
				}
			}
		})
	}
}

// internRetained interns the distinct values once into a fresh interner and
// returns the heap it then holds per byte of distinct strings, and for a
// Table the bytes its chunks hold per byte. Zero for no interner.
func internRetained(setup func() (func([]byte) string, any)) (heap, strs float64) {
	vals := internValues(internDistinct)
	var distinct int64
	for _, v := range vals {
		distinct += int64(len(v))
	}
	settle := func() {
		// Weak entries of unique and go4.org/intern go after more than one
		// cycle.
		for range 4 {
			runtime.GC()
		}
	}
	settle()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, in := setup()
	if in == nil {
		return 0, 0
	}
	for _, v := range vals {
		f(bytes.Clone(v))
	}
	settle()
	runtime.ReadMemStats(&after)
	heap = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(distinct)
	if t, ok := in.(*Table); ok {
		st := t.Stats()
		strs = float64(st.Retained) / float64(st.Bytes)
	}
	runtime.KeepAlive(in)
	runtime.KeepAlive(vals) // else freeing them would offset what in holds
	return heap, strs
}

// BenchmarkInternParallel is BenchmarkIntern's hit path from all cores at
// once, to show lock contention.
func BenchmarkInternParallel(b *testing.B) {
	input := internInput()
	for _, tc := range []struct {
		name string
		f    func([]byte) string
	}{
		{"unique", func(v []byte) string { return unique.Make(string(v)).Value() }},
		{"ingestkit", new(Table).Intern},
		{"ingestkit-unique", new(Unique).Intern},
	} {
		b.Run("impl="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					tc.f(input[i])
					if i++; i == len(input) {
						i = 0
					}
				}
			})
		})
	}
}
