package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

// requestPairs returns n series as a decoder yields them: (name, value)
// byte slices into one request buffer.
func requestPairs(n int) [][][2][]byte { return requestPairsOf(seriesSet(n)) }

// requestPairsOf returns sets as a decoder yields them: (name, value) byte
// slices into one request buffer, in the order of sets.
func requestPairsOf(sets []labels.Labels) [][][2][]byte {
	out := make([][][2][]byte, len(sets))
	var buf []byte
	for i, ls := range sets {
		ls.Range(func(l labels.Label) {
			start := len(buf)
			buf = append(buf, l.Name...)
			mid := len(buf)
			buf = append(buf, l.Value...)
			out[i] = append(out[i], [2][]byte{buf[start:mid:mid], buf[mid:len(buf):len(buf)]})
		})
	}
	return out
}

// BenchmarkAppend appends one sample to each of 100k series the head
// already holds and commits; one op is the whole request. Every impl starts
// from the same decoded pairs, so each pays for what it must do with them:
//   - impl=prometheus: what Prometheus's write handler does, labels built
//     with a ScratchBuilder and Append(0, ls);
//   - impl=getref: what Thanos receive does, labels built, then
//     GetRef(ls, ls.Hash()) and Append(ref, ls);
//   - impl=ingestkit: the pairs hashed once, the ref found in a Cache kept
//     across requests and confirmed against the pairs, Append(ref, ls).
//
// In series=100000/impl=... every request lists the series in the same
// order, as a Prometheus remote-write shard sends them, so the cache's guess
// of the next series holds; in series=100000/order=shuffled/impl=... each
// request has an order of its own, so it never does, and every lookup
// probes the cache's map.
func BenchmarkAppend(b *testing.B) {
	const n = 100_000
	sets := seriesSet(n)
	same := requestPairsOf(sets)
	// Three orders, one request after the other, so that no guess holds
	// twice; each request is laid out in its own buffer in its order.
	rng := rand.New(rand.NewPCG(1, 2))
	var shuffled [3][][][2][]byte
	for i := range shuffled {
		order := slices.Clone(sets)
		rng.Shuffle(n, func(x, y int) { order[x], order[y] = order[y], order[x] })
		shuffled[i] = requestPairsOf(order)
	}
	for _, order := range []string{"same", "shuffled"} {
		for _, impl := range []string{"prometheus", "getref", "ingestkit"} {
			// The case keeps its name: series=100000/impl=...
			name := fmt.Sprintf("series=%d/impl=%s", n, impl)
			if order != "same" {
				name = fmt.Sprintf("series=%d/order=%s/impl=%s", n, order, impl)
			}
			b.Run(name, func(b *testing.B) {
				head := newHead(b)
				cache := NewCache(CacheOptions{})
				ts := int64(0)
				sb := labels.NewScratchBuilder(8)
				s := &pairSeries{} // one reused, as a decoder reuses its series view
				var a *Appender
				round := 0
				one := func() {
					ts += 15_000
					req := same
					if order == "shuffled" {
						req = shuffled[round%len(shuffled)]
					}
					round++
					switch impl {
					case "prometheus", "getref":
						app := head.AppenderV2(context.Background())
						getRef, _ := app.(storage.GetRef)
						for i, pairs := range req {
							sb.Reset()
							for _, p := range pairs {
								sb.Add(bytestr.String(p[0]), bytestr.String(p[1]))
							}
							ls := sb.Labels()
							ref := storage.SeriesRef(0)
							if impl == "getref" {
								var hls labels.Labels
								if ref, hls = getRef.GetRef(ls, ls.Hash()); ref != 0 {
									ls = hls
								}
							}
							if _, err := app.Append(ref, ls, 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
								b.Fatal(err)
							}
						}
						if err := app.Commit(); err != nil {
							b.Fatal(err)
						}
					case "ingestkit":
						if a == nil {
							a = NewAppender(context.Background(), head, cache, ts)
						} else {
							a.Reset(context.Background(), head, ts)
						}
						for i, pairs := range req {
							s.set.Reset()
							for _, p := range pairs {
								s.set.Add(p[0], p[1])
							}
							h := mustHandle(a.Lookup(s))
							if err := a.Append(&h, 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
								b.Fatal(err)
							}
						}
						if err := a.Commit(); err != nil {
							b.Fatal(err)
						}
					}
				}
				one() // the series exist before the clock starts: steady state
				b.ReportAllocs()
				for b.Loop() {
					one()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sample")
			})
		}
	}
}

// BenchmarkCache is the cache's hit path from all cores at once.
func BenchmarkCache(b *testing.B) {
	sets := seriesSet(100_000)
	series := make([]*pairSeries, len(sets))
	for i, ls := range sets {
		series[i] = newPairSeries(ls)
	}
	for _, stripes := range []int{16, 256, 4096} {
		b.Run(fmt.Sprintf("stripes=%d/impl=ingestkit", stripes), func(b *testing.B) {
			c := NewCache(CacheOptions{Stripes: stripes})
			for i, ls := range sets {
				c.Store(series[i].Hash(), storage.SeriesRef(i+1), ls, 0)
			}
			hashes := make([]uint64, len(series))
			for i, s := range series {
				hashes[i] = s.Hash()
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, _, ok := c.Lookup(hashes[i], series[i], 1); !ok {
						b.Error("miss")
						return
					}
					if i++; i == len(series) {
						i = 0
					}
				}
			})
		})
	}
}
