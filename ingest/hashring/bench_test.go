package hashring

import (
	"fmt"
	"testing"
)

// ringBenchSeries returns n series of ten labels, sorted by name, as a
// Kubernetes scrape of an HTTP server produces them.
func ringBenchSeries(n int) [][]thanosLabel {
	out := make([][]thanosLabel, n)
	for i := range out {
		out[i] = []thanosLabel{
			{"__name__", "http_request_duration_seconds_bucket"},
			{"code", []string{"200", "404", "500"}[i%3]},
			{"container", "api"},
			{"handler", fmt.Sprintf("/api/v1/resource/%d", i%17)},
			{"instance", fmt.Sprintf("10.1.%d.%d:8080", i/250%250, i%250)},
			{"job", "kubernetes-pods"},
			{"le", []string{"0.005", "0.01", "0.1", "1", "+Inf"}[i%5]},
			{"method", []string{"GET", "POST"}[i%2]},
			{"namespace", "production"},
			{"pod", fmt.Sprintf("api-7d9f8b6c5-%05d", i)},
		}
	}
	return out
}

// BenchmarkRing finds the three replicas of a series on a six-endpoint ring
// (ketama with Thanos's 1000 sections per node):
//
//   - rehash: as Thanos receive does, GetN for each replica, which hashes
//     the series' labels again each time and searches Thanos's sections
//     (the reference transcription in hashring_test.go).
//   - hashonce: the routing hash computed once, with the same code as
//     rehash, then [Ring.Replicas]: what the ring saves on its own, for a
//     caller that has only the labels.
//   - ingestkit: [Ring.Replicas] from the hash the decoder computed in the
//     same pass as the Prometheus hash, which costs the ring nothing.
//
// The series cycle through 4096 distinct ones so that the lookups do not
// all hit the same section.
func BenchmarkRing(b *testing.B) {
	const tenant = "default-tenant"
	series := ringBenchSeries(4096)
	hashes := make([]uint64, len(series))
	for i, s := range series {
		hashes[i] = ringTenantHash(tenant, s)
	}
	eps := ringEndpoints("thanos-receive-0.thanos-receive:10901", "thanos-receive-1.thanos-receive:10901",
		"thanos-receive-2.thanos-receive:10901", "thanos-receive-3.thanos-receive:10901",
		"thanos-receive-4.thanos-receive:10901", "thanos-receive-5.thanos-receive:10901")
	const rf = 3
	for _, algo := range []Algorithm{AlgorithmHashmod, AlgorithmKetama} {
		opts := Options{Algorithm: algo, ReplicationFactor: rf}
		r := mustRing(b, eps, opts)
		ref := mustThanos(b, eps, opts)
		name := fmt.Sprintf("ring=%s/replicas=%d/impl=", algo, rf)

		b.Run(name+"rehash", func(b *testing.B) {
			b.ReportAllocs()
			var dst [rf]string
			i := 0
			for b.Loop() {
				s := series[i%len(series)]
				for n := range uint64(rf) {
					e, err := ref.getN(tenant, s, n)
					if err != nil {
						b.Fatal(err)
					}
					dst[n] = e
				}
				i++
			}
			_ = dst
		})
		b.Run(name+"hashonce", func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]int, 0, rf)
			i := 0
			for b.Loop() {
				dst = r.Replicas(thanosHash(tenant, series[i%len(series)]), dst[:0])
				i++
			}
		})
		b.Run(name+"ingestkit", func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]int, 0, rf)
			i := 0
			for b.Loop() {
				dst = r.Replicas(hashes[i%len(hashes)], dst[:0])
				i++
			}
		})
	}
}

// BenchmarkRingParallel is impl=ingestkit of BenchmarkRing on a ketama ring
// shared by all goroutines, as one ring serves every request handler.
func BenchmarkRingParallel(b *testing.B) {
	series := ringBenchSeries(4096)
	hashes := make([]uint64, len(series))
	for i, s := range series {
		hashes[i] = ringTenantHash("default-tenant", s)
	}
	eps := ringEndpoints("r0", "r1", "r2", "r3", "r4", "r5")
	r := mustRing(b, eps, Options{Algorithm: AlgorithmKetama, ReplicationFactor: 3})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]int, 0, 3)
		i := 0
		for pb.Next() {
			dst = r.Replicas(hashes[i%len(hashes)], dst[:0])
			i++
		}
	})
}

// BenchmarkNewRing builds a ketama ring of 6 and of 60 endpoints with 1000
// points each and three replicas, as a receiver does when its hashrings
// file changes.
func BenchmarkNewRing(b *testing.B) {
	for _, n := range []int{6, 60} {
		eps := make([]Endpoint, n)
		for i := range eps {
			eps[i] = Endpoint{Address: fmt.Sprintf("thanos-receive-%d.thanos-receive:10901", i), Zone: fmt.Sprintf("az-%d", i%3)}
		}
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewRing(eps, Options{Algorithm: AlgorithmKetama, ReplicationFactor: 3}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
