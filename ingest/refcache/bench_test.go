package refcache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/internal/bytestr"
	"github.com/ingestkit/ingestkit/internal/labelset"
)

// appendRequest is one request: each series' (name, value) pairs, in the
// request's order, in one buffer as compact as a protobuf request's (a
// count of pairs, then each string after a one-byte length), and the index
// in the series set of each series, which tells the oracle its ref. The
// impls read the pairs from buf as a decoder reads a request, as slices
// aliasing it.
type appendRequest struct {
	buf []byte
	idx []int
}

func newAppendRequest(sets []labels.Labels, idx []int) appendRequest {
	var buf []byte
	for _, j := range idx {
		buf = append(buf, byte(sets[j].Len()))
		sets[j].Range(func(l labels.Label) {
			if len(l.Name) > 255 || len(l.Value) > 255 {
				panic("label too long for appendRequest")
			}
			buf = append(buf, byte(len(l.Name)))
			buf = append(buf, l.Name...)
			buf = append(buf, byte(len(l.Value)))
			buf = append(buf, l.Value...)
		})
	}
	return appendRequest{buf: buf, idx: idx}
}

// requestReader reads an appendRequest's buffer.
type requestReader struct {
	buf []byte
	off int
}

// series returns the number of pairs of the next series.
func (r *requestReader) series() int {
	n := int(r.buf[r.off])
	r.off++
	return n
}

// str returns the next string, a view of the buffer that, like the views
// of a request body that the decoders yield, may extend past its length.
func (r *requestReader) str() []byte {
	n := int(r.buf[r.off])
	s := r.buf[r.off+1 : r.off+1+n]
	r.off += 1 + n
	return s
}

// read makes s the next series of r, as decodeV1 reads a series: each
// pair pushed and filled in place (pushPair), each name's first eight
// bytes, zero-padded, compared with the last one's as it is gathered; the
// pairs are then pending, as a decoder's series' are, and added to the Set by the
// first method that needs them (labelSet), in one AddSortedPairs if those
// keys increased, else in one AddPairs, which checks the order itself.
func (s *pairSeries) read(r *requestReader) {
	s.lb.Set.Reset()
	s.lb.Pairs = s.lb.Pairs[:0]
	sorted, prev := true, uint64(0)
	for range r.series() {
		off := r.off + 1
		sorted, prev = labelset.KeyOrder(sorted, prev, r.buf[off:min(len(r.buf), off+8)], int(r.buf[r.off]))
		s.lb.Pairs = labelset.PushPair(s.lb.Pairs)
		q := &s.lb.Pairs[len(s.lb.Pairs)-1]
		q.Name = r.str()
		q.Value = r.str()
	}
	s.lb.Gathered, s.lb.Sorted = true, sorted
}

// TestRequestRead checks that the benchmarks' reader yields each series of
// a request, on both of its ways to hand the pairs over: names whose
// first eight bytes, zero-padded, increase (AddSortedPairs: the typical
// series, and names shorter than eight bytes), and names that tie in them
// or start less than eight bytes before the buffer's end (AddPairs).
func TestRequestRead(t *testing.T) {
	sets := append(seriesSet(300),
		labels.FromStrings("label_name_a", "1", "label_name_b", "2"), // a tie
		labels.FromStrings("a", "x", "b", "y", "c", ""),              // short names
		labels.FromStrings("__name__", "up", "a", ""),                // "a" at the buffer's end
	)
	idx := make([]int, len(sets))
	for i := range idx {
		idx[i] = i
	}
	req := newAppendRequest(sets, idx)
	rr := requestReader{buf: req.buf}
	s := &pairSeries{}
	for _, j := range idx {
		s.read(&rr)
		if got := s.Labels(); !labels.Equal(got, sets[j]) {
			t.Fatalf("series %d: read %s, want %s", j, got, sets[j])
		}
		if got, want := s.Hash(), sets[j].Hash(); got != want {
			t.Fatalf("series %d (%s): hash %x, want %x", j, sets[j], got, want)
		}
		if !s.Equal(sets[j]) {
			t.Fatalf("series %d (%s): not Equal to its labels", j, sets[j])
		}
	}
	if rr.off != len(req.buf) {
		t.Fatalf("read %d of %d bytes", rr.off, len(req.buf))
	}
}

// fragmentOrders returns rounds orders of n series that belong to targets
// of perTarget series each, as a remote-write shard sends them after target
// churn: each target's series keep their scrape order, but each request
// cuts them into fragments of 1 to 2*meanFrag-1 series at boundaries of its
// own and lists the fragments of all targets in an order of its own, as
// scrapes that finish at other times land in other batches.
func fragmentOrders(rng *rand.Rand, n, perTarget, meanFrag, rounds int) [][]int {
	out := make([][]int, rounds)
	for r := range out {
		var frags [][]int
		for start := 0; start < n; start += perTarget {
			end := min(start+perTarget, n)
			for i := start; i < end; {
				l := min(1+rng.IntN(2*meanFrag-1), end-i)
				frag := make([]int, l)
				for k := range frag {
					frag[k] = i + k
				}
				frags = append(frags, frag)
				i += l
			}
		}
		rng.Shuffle(len(frags), func(x, y int) { frags[x], frags[y] = frags[y], frags[x] })
		out[r] = slices.Concat(frags...)
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
//     across requests and confirmed against the pairs, Append(ref, ls);
//   - impl=ingestkit-batch: the same, with the series resolved by
//     LookupBatch, batchSize at a time, then appended in request order;
//   - impl=ingestkit-sorted: the same lookups, with the handles of the
//     whole request kept, then appended in AppendOrder's order (by ref);
//   - impl=oracle: the floor, a perfect cache that costs nothing: the refs
//     and the built labels of every series are known before the clock
//     starts, and the request is Append(ref, ls) alone, on the same head;
//   - impl=oracle-read: the oracle, with each series also read from the
//     request as the ingestkit impls read it and its pairs added to its
//     Set, as the decoder's accessors add them (labelSet: copied and
//     written to the hashers, not summed): the floor of a cache that must
//     read the request before it knows the series.
//
// The orders:
//   - series=100000/impl=...: every request lists the series in the same
//     order, as a Prometheus remote-write shard sends them, so the cache's
//     guess of the next series holds;
//   - order=shuffled: each request has an order of its own, so no guess
//     holds, and every lookup probes the cache's table;
//   - order=fragments: 200 targets of 500 series, created one target
//     after the other, then each request cut into fragments of about 50
//     series at boundaries that shift from request to request, the
//     fragments of all targets in an order of their own (a remote-write
//     shard after target churn); guesses hold inside a fragment and fail
//     at its boundaries.
//
// The ingestkit impls report guess-hit/sample, the fraction of series found as
// the guess of the series before.
//
// Memory is cold in every order: the head's 100k series, their labels and
// the cache's entries take several times the last-level cache of the
// machine BENCHMARKS.md names, so a request reads most of them from main
// memory, and the orders differ in how well the hardware's prefetch can
// follow them.
func BenchmarkAppend(b *testing.B) {
	const (
		n         = 100_000
		batchSize = 64
	)
	sets := seriesSet(n)
	identity := make([]int, n)
	for i := range identity {
		identity[i] = i
	}
	// Several orders, one request after the other, so that no guess holds
	// twice; each request is laid out in its own buffer in its order.
	rng := rand.New(rand.NewPCG(1, 2))
	orders := map[string][]appendRequest{"same": {newAppendRequest(sets, identity)}}
	for range 3 {
		idx := slices.Clone(identity)
		rng.Shuffle(n, func(x, y int) { idx[x], idx[y] = idx[y], idx[x] })
		orders["shuffled"] = append(orders["shuffled"], newAppendRequest(sets, idx))
	}
	for _, idx := range fragmentOrders(rng, n, 500, 50, 4) {
		orders["fragments"] = append(orders["fragments"], newAppendRequest(sets, idx))
	}
	for _, order := range []string{"same", "shuffled", "fragments"} {
		reqs := orders[order]
		for _, impl := range []string{"prometheus", "getref", "ingestkit", "ingestkit-batch", "ingestkit-sorted", "oracle", "oracle-read"} {
			// The case keeps its name: series=100000/impl=...
			name := fmt.Sprintf("series=%d/impl=%s", n, impl)
			if order != "same" {
				name = fmt.Sprintf("series=%d/order=%s/impl=%s", n, order, impl)
			}
			b.Run(name, func(b *testing.B) {
				head := newHead(b)
				cache := New(Options{})
				ts := int64(0)
				sb := labels.NewScratchBuilder(8)
				s := &pairSeries{} // one reused, as a decoder reuses its series view
				var a *AppenderV2
				// impl=ingestkit-batch: series views as a decoder that
				// yields batchSize at a time would reuse them.
				views := make([]pairSeries, batchSize)
				batch := make([]SeriesLabels, batchSize)
				for j := range views {
					batch[j] = &views[j]
				}
				hs := make([]Handle, batchSize)
				errs := make([]error, batchSize)
				var reqHs []Handle           // impl=ingestkit-sorted: the request's handles
				var refs []storage.SeriesRef // impl=oracle: by index in sets
				round := 0
				guessed := 0
				one := func() {
					ts += 15_000
					req := reqs[round%len(reqs)]
					if round == 0 && order == "fragments" {
						// The targets' series were created when each
						// target appeared, one target after the other.
						req = orders["same"][0]
					}
					round++
					switch impl {
					case "prometheus", "getref":
						app := head.AppenderV2(context.Background())
						getRef, _ := app.(storage.GetRef)
						rr := requestReader{buf: req.buf}
						for i := range req.idx {
							sb.Reset()
							for range rr.series() {
								name := rr.str()
								sb.Add(bytestr.String(name), bytestr.String(rr.str()))
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
							a = NewAppenderV2(context.Background(), head, cache, ts)
						} else {
							a.Reset(context.Background(), head, ts)
						}
						rr := requestReader{buf: req.buf}
						for i := range req.idx {
							s.read(&rr)
							h := mustHandle(a.Lookup(s))
							if err := a.Append(&h, 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
								b.Fatal(err)
							}
						}
						guessed += a.Stats().Guessed
						if err := a.Commit(); err != nil {
							b.Fatal(err)
						}
					case "ingestkit-batch":
						if a == nil {
							a = NewAppenderV2(context.Background(), head, cache, ts)
						} else {
							a.Reset(context.Background(), head, ts)
						}
						rr := requestReader{buf: req.buf}
						for start := 0; start < len(req.idx); start += len(views) {
							k := min(len(views), len(req.idx)-start)
							for j := range k {
								v := &views[j]
								v.read(&rr)
							}
							a.LookupBatch(batch[:k], hs[:k], errs[:k])
							for j := range k {
								if errs[j] != nil {
									b.Fatal(errs[j])
								}
								if err := a.Append(&hs[j], 0, ts, float64(start+j), nil, nil, storage.AOptions{}); err != nil {
									b.Fatal(err)
								}
							}
						}
						guessed += a.Stats().Guessed
						if err := a.Commit(); err != nil {
							b.Fatal(err)
						}
					case "ingestkit-sorted":
						if a == nil {
							a = NewAppenderV2(context.Background(), head, cache, ts)
						} else {
							a.Reset(context.Background(), head, ts)
						}
						reqHs = slices.Grow(reqHs[:0], len(req.idx))[:len(req.idx)]
						rr := requestReader{buf: req.buf}
						for start := 0; start < len(req.idx); start += len(views) {
							k := min(len(views), len(req.idx)-start)
							for j := range k {
								v := &views[j]
								v.read(&rr)
							}
							a.LookupBatch(batch[:k], reqHs[start:start+k], errs[:k])
							for j := range k {
								if errs[j] != nil {
									b.Fatal(errs[j])
								}
							}
						}
						for _, i := range a.AppendOrder(reqHs) {
							if err := a.Append(&reqHs[i], 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
								b.Fatal(err)
							}
						}
						guessed += a.Stats().Guessed
						if err := a.Commit(); err != nil {
							b.Fatal(err)
						}
					case "oracle", "oracle-read":
						app := head.AppenderV2(context.Background())
						rr := requestReader{buf: req.buf}
						if refs == nil { // the first request creates the series
							for i, j := range req.idx {
								if _, err := app.Append(0, sets[j], 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
									b.Fatal(err)
								}
							}
							refs = make([]storage.SeriesRef, n)
							getRef := app.(storage.GetRef)
							for j, ls := range sets {
								refs[j], _ = getRef.GetRef(ls, ls.Hash())
							}
						} else {
							for i, j := range req.idx {
								if impl == "oracle-read" {
									// What any cache must do on top of
									// the oracle: read the series from
									// the request, and add its pairs to
									// its Set as a decoder's accessors do.
									s.read(&rr)
									s.lb.LabelSet()
								}
								if _, err := app.Append(refs[j], sets[j], 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
									b.Fatal(err)
								}
							}
						}
						if err := app.Commit(); err != nil {
							b.Fatal(err)
						}
					}
				}
				// The series exist before the clock starts, and the cache
				// has seen a request of them (a batch learns the guesses
				// after new series a request later): steady state.
				one()
				one()
				guessed = 0
				b.ReportAllocs()
				for b.Loop() {
					one()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sample")
				if strings.HasPrefix(impl, "ingestkit") {
					b.ReportMetric(float64(guessed)/float64(b.N*n), "guess-hit/sample")
				}
			})
		}
	}
}

// BenchmarkLookup is BenchmarkAppend's resolving alone: 100k series the
// cache holds, looked up one by one (impl=ingestkit) or 64 at a time
// (impl=ingestkit-batch), with nothing appended; one op is a request. It
// shows the cache's own cost in each order, without the head's.
func BenchmarkLookup(b *testing.B) {
	const n, batchSize = 100_000, 64
	sets := seriesSet(n)
	identity := make([]int, n)
	for i := range identity {
		identity[i] = i
	}
	// Three shuffled orders, one request after the other, so that no guess
	// holds, as in BenchmarkAppend.
	rng := rand.New(rand.NewPCG(1, 2))
	var shuffled []appendRequest
	for range 3 {
		idx := slices.Clone(identity)
		rng.Shuffle(n, func(x, y int) { idx[x], idx[y] = idx[y], idx[x] })
		shuffled = append(shuffled, newAppendRequest(sets, idx))
	}
	for _, order := range []struct {
		name string
		reqs []appendRequest
	}{{"same", []appendRequest{newAppendRequest(sets, identity)}}, {"shuffled", shuffled}} {
		for _, impl := range []string{"ingestkit", "ingestkit-batch"} {
			b.Run(fmt.Sprintf("series=%d/order=%s/impl=%s", n, order.name, impl), func(b *testing.B) {
				head := newHead(b)
				cache := New(Options{})
				views := make([]pairSeries, batchSize)
				batch := make([]SeriesLabels, batchSize)
				for j := range views {
					batch[j] = &views[j]
				}
				hs := make([]Handle, batchSize)
				errs := make([]error, batchSize)
				a := NewAppenderV2(context.Background(), head, cache, 0)
				first := newAppendRequest(sets, identity)
				rr := requestReader{buf: first.buf}
				for i := range n {
					// Every view, so that each has grown its buffers
					// before the clock starts.
					s := &views[i%len(views)]
					s.read(&rr)
					h := mustHandle(a.Lookup(s))
					if err := a.Append(&h, 0, 1000, float64(i), nil, nil, storage.AOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				if err := a.Commit(); err != nil {
					b.Fatal(err)
				}
				ts := int64(1000)
				b.ReportAllocs()
				for b.Loop() {
					ts++
					a.Reset(context.Background(), head, ts)
					rr := requestReader{buf: order.reqs[int(ts)%len(order.reqs)].buf}
					for start := 0; start < n; start += batchSize {
						k := min(batchSize, n-start)
						if impl == "ingestkit" {
							s := &views[0]
							for range k {
								s.read(&rr)
								if _, err := a.Lookup(s); err != nil {
									b.Fatal(err)
								}
							}
							continue
						}
						for j := range k {
							v := &views[j]
							v.read(&rr)
						}
						a.LookupBatch(batch[:k], hs[:k], errs[:k])
					}
					if st := a.Stats(); st.CacheHits != n {
						b.Fatalf("Stats() = %+v, want %d hits", st, n)
					}
					_ = a.Rollback()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/series")
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
			c := New(Options{Stripes: stripes})
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
