package refcache

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/storage"
)

// BenchmarkAppendOrder measures the ordering of a request's handles by ref,
// alone, against the standard library's sorts of the same result; one op is
// a request's handles:
//   - impl=slices-stable: slices.SortStableFunc of the indices of the
//     handles with a ref, by ref, which keeps the handles of one ref in
//     their order (what AppendOrder falls back to when refs span 2^32);
//   - impl=slices-keys: slices.Sort of ref<<32 | index, one uint64 per
//     handle, whose index breaks ties;
//   - impl=ingestkit: AppendOrder, a radix sort of those keys.
//
// Every impl then lists the handles without a ref, as AppendOrder does.
// Requests are in the order the head created their series (order=same),
// in one of their own (order=shuffled), and of series created by targets
// one after the other and cut into fragments (order=fragments, see
// BenchmarkAppend). One in 50 handles has no ref, a series new to the head.
func BenchmarkAppendOrder(b *testing.B) {
	for _, n := range []int{5000, 100_000} {
		rng := rand.New(rand.NewPCG(uint64(n), 19))
		orders := map[string][]int{
			"same":      identity(n),
			"shuffled":  rng.Perm(n),
			"fragments": fragmentOrders(rng, n, 100, 25, 1)[0],
		}
		for _, order := range []string{"same", "fragments", "shuffled"} {
			hs := make([]Handle, n)
			for i, j := range orders[order] {
				if i%50 != 49 {
					// The head numbers series from 1 in creation order; a
					// head that ran a while has refs far from 0.
					hs[i].ref = storage.SeriesRef(1_000_000 + j)
				}
			}
			want := (&AppenderV2{}).AppendOrder(hs)
			for _, impl := range []string{"slices-stable", "slices-keys", "ingestkit"} {
				b.Run(fmt.Sprintf("handles=%d/order=%s/impl=%s", n, order, impl), func(b *testing.B) {
					var (
						a     AppenderV2
						idx   []int
						keys  []uint64
						order []int
					)
					run := func() []int {
						switch impl {
						case "slices-stable":
							idx = idx[:0]
							for i := range hs {
								if hs[i].ref != 0 {
									idx = append(idx, i)
								}
							}
							slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(hs[x].ref, hs[y].ref) })
							for i := range hs {
								if hs[i].ref == 0 {
									idx = append(idx, i)
								}
							}
							return idx
						case "slices-keys":
							keys = keys[:0]
							for i := range hs {
								if hs[i].ref != 0 {
									keys = append(keys, uint64(hs[i].ref)<<32|uint64(i))
								}
							}
							slices.Sort(keys)
							order = order[:0]
							for _, k := range keys {
								order = append(order, int(uint32(k)))
							}
							for i := range hs {
								if hs[i].ref == 0 {
									order = append(order, i)
								}
							}
							return order
						default:
							return a.AppendOrder(hs)
						}
					}
					if got := run(); !slices.Equal(got, want) {
						b.Fatalf("impl=%s orders the handles differently from AppendOrder", impl)
					}
					b.ReportAllocs()
					for b.Loop() {
						run()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/handle")
				})
			}
		}
	}
}

func identity(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
