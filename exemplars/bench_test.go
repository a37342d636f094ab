package exemplars

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// benchStorage is what the benchmarks drive: Prometheus's storage
// (impl=prometheus), a Ring through the same methods (impl=ingestkit), or
// a Ring through the methods that take the hash, computed beforehand as a
// receiver computes it once per series (impl=ingestkit-hash).
type benchStorage interface {
	add(hash uint64, l labels.Labels, e exemplar.Exemplar) error
	Resize(int64) int
	Select(start, end int64, matchers ...[]*labels.Matcher) ([]exemplar.QueryResult, error)
}

type benchUpstream struct{ *tsdb.CircularExemplarStorage }

func (u benchUpstream) add(_ uint64, l labels.Labels, e exemplar.Exemplar) error {
	return u.AddExemplar(l, e)
}

type benchRing struct{ *Ring }

func (r benchRing) add(_ uint64, l labels.Labels, e exemplar.Exemplar) error {
	return r.AddExemplar(l, e)
}

type benchRingHash struct{ *Ring }

func (r benchRingHash) add(hash uint64, l labels.Labels, e exemplar.Exemplar) error {
	return r.AddExemplarHash(hash, l, e)
}

// benchRingShare is a Ring whose Select copies by one pass over the ring
// from share on rather than from scanShare: 0 copies always by walks,
// MaxSize always by a pass.
type benchRingShare struct {
	benchRing
	share int
}

func (r benchRingShare) Select(start, end int64, matchers ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	return r.selectShare(r.share, start, end, matchers)
}

// benchImpls are the implementations compared, by the name benchstat
// -col /impl shows.
var benchImpls = []struct {
	name string
	new  func(size, window int64) benchStorage
}{
	{"prometheus", func(size, window int64) benchStorage {
		es, err := promcompat.NewCircularExemplarStorage(size, tsdb.NewExemplarMetrics(nil), window)
		if err != nil {
			panic(err)
		}
		return benchUpstream{es.(*tsdb.CircularExemplarStorage)}
	}},
	{"ingestkit", func(size, window int64) benchStorage {
		return benchRing{New(size, Options{OutOfOrderTimeWindow: window})}
	}},
	{"ingestkit-hash", func(size, window int64) benchStorage {
		return benchRingHash{New(size, Options{OutOfOrderTimeWindow: window})}
	}},
}

// benchSeries returns the series of upstream's benchmarks: service=<i>
// for every hundredth i below n, with their hashes.
func benchSeries(n int) ([]labels.Labels, []uint64) {
	ls := make([]labels.Labels, (n+99)/100)
	hs := make([]uint64, len(ls))
	for i := range ls {
		ls[i] = labels.FromStrings("service", strconv.Itoa(i*100))
		hs[i] = ls[i].Hash()
	}
	return ls, hs
}

var benchExemplarLabels = labels.FromStrings("trace_id", "89620921")

// BenchmarkAddExemplar is upstream's BenchmarkAddExemplar: n exemplars, a
// hundred per series, into a ring of cap, every one in order. An op is
// the n adds; ns/exemplar is the time of one add. The series' labels are
// made beforehand (upstream makes them as it goes, in the timed part),
// and so are their hashes, used by impl=ingestkit-hash only. The n=1000000
// rows are skipped under -short.
func BenchmarkAddExemplar(b *testing.B) {
	for _, n := range []int{10000, 100000, 1000000} {
		for _, capacity := range []int64{1000, 10000, 100000} {
			series, hashes := benchSeries(n)
			for _, impl := range benchImpls {
				b.Run(fmt.Sprintf("n=%d/cap=%d/impl=%s", n, capacity, impl.name), func(b *testing.B) {
					if n >= 1000000 && testing.Short() {
						b.Skip("1M exemplars: skipped under -short")
					}
					b.ReportAllocs()
					for b.Loop() {
						b.StopTimer()
						es := impl.new(capacity, 0)
						b.StartTimer()
						for i := range n {
							e := exemplar.Exemplar{Value: float64(i), Ts: int64(i), Labels: benchExemplarLabels}
							if err := es.add(hashes[i/100], series[i/100], e); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/exemplar")
				})
			}
		}
	}
}

// BenchmarkAddExemplarSteady adds exemplars to a ring that has been full
// for a while, the steady state of a long-lived ingester: before the
// timing, each impl takes three times its capacity, so that every slot and
// every series' entry has been written and the ring evicts on every add.
// An op is one add, in order, to the next of cap/100 series in turn.
// BenchmarkAddExemplar's rows are the fresh-ring case, with its first
// touches of memory.
func BenchmarkAddExemplarSteady(b *testing.B) {
	for _, capacity := range []int64{10000, 100000} {
		series, hashes := benchSeries(int(capacity))
		for _, impl := range benchImpls {
			b.Run(fmt.Sprintf("cap=%d/impl=%s", capacity, impl.name), func(b *testing.B) {
				es := impl.new(capacity, 0)
				var ts int64
				add := func() {
					i := int(ts % int64(len(series)))
					e := exemplar.Exemplar{Value: float64(ts), Ts: ts, Labels: benchExemplarLabels}
					if err := es.add(hashes[i], series[i], e); err != nil {
						b.Fatal(err)
					}
					ts++
				}
				for range 3 * capacity {
					add()
				}
				b.ReportAllocs()
				for b.Loop() {
					add()
				}
			})
		}
	}
}

// BenchmarkAddExemplarOutOfOrder adds exemplars out of order to a full
// ring of 5,000 with an out-of-order window that takes them all; an op is
// one add.
//
//   - case=one-series-random: one series of 5,000 exemplars, each added at
//     a random time across it (the case reported upstream, where the
//     walk back from the newest crosses half the series).
//   - case=one-series-recent: one series; half the exemplars in order,
//     half up to 100 ms late, so that the place of a late one is near the
//     newest.
//   - case=50-series-random: 50 series of 100, each exemplar at a random
//     time across its series.
func BenchmarkAddExemplarOutOfOrder(b *testing.B) {
	const capacity = 5000
	const span = capacity * 1000 // ms covered by the fill; random times fall in it
	cases := []struct {
		name   string
		series int
		next   func(r *rand.Rand, i int) int64 // the timestamp of the i-th add
	}{
		{"one-series-random", 1, func(r *rand.Rand, _ int) int64 { return r.Int64N(span) }},
		{"one-series-recent", 1, func(r *rand.Rand, i int) int64 {
			now := int64(span + i*10)
			if i%2 == 0 {
				return now
			}
			return now - 1 - r.Int64N(100)
		}},
		{"50-series-random", 50, func(r *rand.Rand, _ int) int64 { return r.Int64N(span) }},
	}
	for _, c := range cases {
		series := make([]labels.Labels, c.series)
		hashes := make([]uint64, c.series)
		for i := range series {
			series[i] = labels.FromStrings("service", strconv.Itoa(i))
			hashes[i] = series[i].Hash()
		}
		// The same sequence of adds for every implementation.
		const seq = 1 << 16
		r := rand.New(rand.NewPCG(1, 2))
		ts := make([]int64, seq)
		for i := range ts {
			ts[i] = c.next(r, i)
		}
		for _, impl := range benchImpls {
			b.Run(fmt.Sprintf("case=%s/impl=%s", c.name, impl.name), func(b *testing.B) {
				if impl.name == "prometheus" && !promcompat.ExemplarsOutOfOrder() {
					b.Skip("Prometheus's storage has no out-of-order window before v0.310.0: it would reject the late exemplars")
				}
				es := impl.new(capacity, 1<<40)
				for i := range capacity {
					s := i % c.series
					e := exemplar.Exemplar{Value: float64(i), Ts: int64(i) * span / capacity, Labels: benchExemplarLabels}
					if err := es.add(hashes[s], series[s], e); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					s := i % c.series
					e := exemplar.Exemplar{Value: float64(i), Ts: ts[i%seq], Labels: benchExemplarLabels}
					if err := es.add(hashes[s], series[s], e); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkResizeExemplars is upstream's BenchmarkResizeExemplars: a ring
// of from slots takes 1.5 times as many exemplars, a hundred per series,
// then an op resizes it to to. Filling the ring is not timed but takes
// most of the run: run it with a fixed -benchtime such as 20x. The
// 1,000,000-slot rows are skipped under -short.
func BenchmarkResizeExemplars(b *testing.B) {
	cases := []struct {
		name     string
		from, to int64
	}{
		{"grow", 100000, 200000},
		{"shrink", 100000, 50000},
		{"grow", 1000000, 2000000},
		{"shrink", 1000000, 500000},
	}
	for _, c := range cases {
		n := int(c.from * 3 / 2)
		series, hashes := benchSeries(n)
		for _, impl := range benchImpls[:2] {
			b.Run(fmt.Sprintf("case=%s-%d-to-%d/impl=%s", c.name, c.from, c.to, impl.name), func(b *testing.B) {
				if c.from >= 1000000 && testing.Short() {
					b.Skip("1M exemplars: skipped under -short")
				}
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					es := impl.new(c.from, 0)
					for i := range n {
						e := exemplar.Exemplar{Value: float64(i), Ts: int64(i)}
						if err := es.add(hashes[i/100], series[i/100], e); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					es.Resize(c.to)
				}
			})
		}
	}
}

// BenchmarkSelectExemplars selects from a full ring of 100,000 exemplars,
// 100 for each of 1,000 series service=<i>:
//
//   - case=one-series: {service="500"} over all time;
//   - case=regexp-10pct: {service=~"1.*"}, 111 series, over all time;
//   - case=all-recent: every series ({service=~".+"}), the newest tenth of
//     the exemplars;
//   - case=all: every series, over all time.
//
// Beside impl=prometheus and impl=ingestkit, impl=ingestkit-walk and
// impl=ingestkit-pass copy the selection always by walking the series'
// lists and always by one pass over the ring, the two ways Select chooses
// between by scanShare.
func BenchmarkSelectExemplars(b *testing.B) {
	const n, perSeries = 100000, 100
	cases := []struct {
		name       string
		start, end int64
		m          *labels.Matcher
	}{
		{"one-series", 0, n, labels.MustNewMatcher(labels.MatchEqual, "service", "500")},
		{"regexp-10pct", 0, n, labels.MustNewMatcher(labels.MatchRegexp, "service", "1.*")},
		{"all-recent", n - n/10, n, labels.MustNewMatcher(labels.MatchRegexp, "service", ".+")},
		{"all", 0, n, labels.MustNewMatcher(labels.MatchRegexp, "service", ".+")},
	}
	series := make([]labels.Labels, n/perSeries)
	for i := range series {
		series[i] = labels.FromStrings("service", strconv.Itoa(i))
	}
	impls := append(benchImpls[:2:2], []struct {
		name string
		new  func(size, window int64) benchStorage
	}{
		{"ingestkit-walk", func(size, window int64) benchStorage {
			return benchRingShare{benchRing{New(size, Options{OutOfOrderTimeWindow: window})}, 0}
		}},
		{"ingestkit-pass", func(size, window int64) benchStorage {
			return benchRingShare{benchRing{New(size, Options{OutOfOrderTimeWindow: window})}, MaxSize}
		}},
	}...)
	for _, c := range cases {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("case=%s/impl=%s", c.name, impl.name), func(b *testing.B) {
				es := impl.new(n, 0)
				// Round robin, so that every series spans the whole time range.
				for i := range n {
					e := exemplar.Exemplar{Value: float64(i), Ts: int64(i), Labels: benchExemplarLabels}
					if err := es.add(0, series[i%len(series)], e); err != nil {
						b.Fatal(err)
					}
				}
				// Made once: the literal would escape through the interface
				// and cost the loop two allocations of its own.
				ms := [][]*labels.Matcher{{c.m}}
				b.ReportAllocs()
				for b.Loop() {
					res, err := es.Select(c.start, c.end, ms...)
					if err != nil || len(res) == 0 {
						b.Fatal(len(res), err)
					}
				}
			})
		}
	}
}

// BenchmarkRingLock measures, uncontended, the lock a Ring holds, a
// sync.Mutex (impl=ingestkit), against the sync.RWMutex of Prometheus's
// storage (impl=prometheus): case=write as an add takes it (Lock), and
// case=read as Prometheus's reads take theirs (RLock, a plain Lock for a
// Ring). An op is one lock and unlock. The Ring's lock is a Mutex because
// an add, which needs the write lock, is most of its use, and its reads
// hold it briefly. BenchmarkAddExemplarParallel measures the adds under
// contention.
func BenchmarkRingLock(b *testing.B) {
	for _, c := range []string{"write", "read"} {
		b.Run(fmt.Sprintf("case=%s/impl=prometheus", c), func(b *testing.B) {
			var mu sync.RWMutex
			n := 0
			b.ReportAllocs()
			if c == "write" {
				for b.Loop() {
					mu.Lock()
					n++
					mu.Unlock()
				}
				return
			}
			for b.Loop() {
				mu.RLock()
				_ = n
				mu.RUnlock()
			}
		})
		b.Run(fmt.Sprintf("case=%s/impl=ingestkit", c), func(b *testing.B) {
			var mu sync.Mutex
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
}

// BenchmarkAddExemplarParallel validates and adds exemplars from every
// core at once, as a head's appenders validate exemplars when appended and
// add them when committed; each goroutine has its own 100 series, into a
// ring of 100,000. An op is one validation and one add.
func BenchmarkAddExemplarParallel(b *testing.B) {
	type validator interface {
		ValidateExemplar(labels.Labels, exemplar.Exemplar) error
	}
	for _, impl := range benchImpls[:2] {
		b.Run("impl="+impl.name, func(b *testing.B) {
			es := impl.new(100000, 0)
			var mu sync.Mutex
			worker := 0
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				w := worker
				worker++
				mu.Unlock()
				series := make([]labels.Labels, 100)
				for i := range series {
					series[i] = labels.FromStrings("worker", strconv.Itoa(w), "service", strconv.Itoa(i))
				}
				for i := 0; pb.Next(); i++ {
					s := series[i%len(series)]
					e := exemplar.Exemplar{Value: float64(i), Ts: int64(i), Labels: benchExemplarLabels}
					if err := es.(validator).ValidateExemplar(s, e); err != nil {
						b.Error(err)
						return
					}
					if err := es.add(0, s, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
