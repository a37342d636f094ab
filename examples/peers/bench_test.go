// The peers' hash is that of the default stringlabels build (see promHasher).

//go:build !slicelabels && !dedupelabels

package peers

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// benchSink keeps the compiler from dropping the benchmarks' work.
var benchSink uint64

// BenchmarkDecode compares ingestkit's Decoder with the decoders of the
// fastest peers and with Prometheus's handler, on the same uncompressed
// bytes, with the sub-benchmark names of the root module's BenchmarkDecode:
// series=5000 is its synthetic request of float series with ten labels,
// case=captured its real request (rw1-0005, rw2-0006). Each impl sinks the
// parts of the request it decodes in the same way (see decoder), so
// impl=victoriametrics and impl=mimir include the Prometheus-compatible hash
// that ingestkit and Prometheus compute. Which parts each sinks:
//
//   - impl=prometheus, impl=ingestkit, impl=mimir: every series' hash, float
//     samples, histograms, exemplars and 2.0 metadata (Mimir keeps one
//     metadata per metric family, the others one per series).
//   - impl=victoriametrics, remote-write 1.0 only: the hash and float
//     samples of each series with samples, and for a series of native
//     histograms the float series it makes of them; no exemplars, which
//     VictoriaMetrics's unmarshaler skips.
//   - impl=ingestkit-vmwork, 1.0 only: the same parts of the request as
//     impl=victoriametrics: the hash and float samples of each series with
//     samples, the histograms (decoded into histogram.Histograms), no
//     exemplars. Compare impl=victoriametrics with it, not with
//     impl=ingestkit, which also decodes the exemplars.
//
// On series=5000, which has float samples only, impl=ingestkit and
// impl=ingestkit-vmwork do the same work. TestSameHashes checks what each
// impl sinks.
//
// series=5000/mem=cold is series=5000 on cold memory: each iteration
// decodes the next of many copies of the request (rwtest.Cold), so the body
// comes from main memory, as a request that has just arrived does, where
// series=5000 decodes one body that stays in the caches.
func BenchmarkDecode(b *testing.B) {
	for _, rw := range []int{1, 2} {
		synthetic := syntheticRequest(b, rw, 5000, false)
		cases := []struct {
			name string
			bufs [][]byte // taken in turn; all the same request
		}{
			{"series=5000", [][]byte{synthetic}},
			{"series=5000/mem=cold", rwtest.Cold(b, synthetic)},
			{"case=captured", [][]byte{capturedBody(b, capturedFiles(b, rw)[0])}},
		}
		for _, c := range cases {
			for _, impl := range impls {
				if !slices.Contains(impl.rw, rw) {
					continue
				}
				b.Run(fmt.Sprintf("rw=%d/%s/impl=%s", rw, c.name, impl.name), func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(len(c.bufs[0])))
					d := impl.new()
					// Grow the reused buffers and pools outside the timing.
					if _, err := d.decode(c.bufs[0], rw, nil); err != nil {
						b.Fatal(err)
					}
					i := 0
					for b.Loop() {
						sink, err := d.decode(c.bufs[i%len(c.bufs)], rw, nil)
						if err != nil {
							b.Fatal(err)
						}
						i++
						benchSink += sink
					}
				})
			}
		}
	}
}
