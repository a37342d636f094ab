package activeseries

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// cortexTracker is Cortex's active-series tracker, re-implemented from
// pkg/ingester/active_series.go (ActiveSeries, master) for comparison: 512
// fixed stripes, each a map[uint64][]entry from the label hash, an entry
// holding the labels and a heap-allocated atomic last-seen time in
// nanoseconds, collisions compared with labels.Equal, a new series looked
// up under the read lock and then created under the write lock, Active()
// walking every stripe under its read lock, and Purge locking every stripe
// whose oldest-entry hint does not rule it out. Only what does not bear on
// the comparison differs: sync/atomic for go.uber.org/atomic, int64 times
// for time.Time, and no labelsCopy callback, the labels being the TSDB's
// own and kept, as [Tracker] keeps them (Cortex's ingester copies them
// first, which costs it more than is measured here).
type cortexTracker struct {
	stripes [cortexStripes]cortexStripe
}

const cortexStripes = 512

type cortexStripe struct {
	// Unix nanoseconds, only used by purge; 0 = unknown. Updated in purge,
	// and without the lock when an old timestamp is used (hence atomic).
	oldestEntryTs atomic.Int64

	mu                    sync.RWMutex
	refs                  map[uint64][]cortexEntry
	active                int // guarded by mu
	activeNativeHistogram int // guarded by mu
}

type cortexEntry struct {
	lbs               labels.Labels
	nanos             *atomic.Int64 // a pointer, because the stripe holds entries by value
	isNativeHistogram bool
}

func newCortexTracker() *cortexTracker {
	c := &cortexTracker{}
	for i := range c.stripes {
		c.stripes[i].refs = map[uint64][]cortexEntry{}
	}
	return c
}

func (c *cortexTracker) UpdateSeries(series labels.Labels, hash uint64, nowNanos int64, nativeHistogram bool) {
	c.stripes[hash%cortexStripes].updateSeriesTimestamp(nowNanos, series, hash, nativeHistogram)
}

func (c *cortexTracker) Purge(keepUntilNanos int64) {
	for s := range c.stripes {
		c.stripes[s].purge(keepUntilNanos)
	}
}

func (c *cortexTracker) Active() int {
	total := 0
	for s := range c.stripes {
		total += c.stripes[s].getActive()
	}
	return total
}

func (s *cortexStripe) updateSeriesTimestamp(nowNanos int64, series labels.Labels, fingerprint uint64, nativeHistogram bool) {
	e := s.findEntryForSeries(fingerprint, series)
	entryTimeSet := false
	if e == nil {
		e, entryTimeSet = s.findOrCreateEntryForSeries(fingerprint, series, nowNanos, nativeHistogram)
	}
	if !entryTimeSet {
		if prev := e.Load(); nowNanos > prev {
			entryTimeSet = e.CompareAndSwap(prev, nowNanos)
		}
	}
	if entryTimeSet {
		for prevOldest := s.oldestEntryTs.Load(); nowNanos < prevOldest; {
			// A recent purge removed entries older than the oldest entry
			// timestamp: 0 makes the next purge not take the shortcut.
			if s.oldestEntryTs.CompareAndSwap(prevOldest, 0) {
				break
			}
		}
	}
}

func (s *cortexStripe) findEntryForSeries(fingerprint uint64, series labels.Labels) *atomic.Int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for ix, entry := range s.refs[fingerprint] {
		if labels.Equal(entry.lbs, series) {
			return s.refs[fingerprint][ix].nanos
		}
	}
	return nil
}

func (s *cortexStripe) findOrCreateEntryForSeries(fingerprint uint64, series labels.Labels, nowNanos int64, nativeHistogram bool) (*atomic.Int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ix, entry := range s.refs[fingerprint] {
		if labels.Equal(entry.lbs, series) {
			return s.refs[fingerprint][ix].nanos, false
		}
	}
	s.active++
	if nativeHistogram {
		s.activeNativeHistogram++
	}
	nanos := &atomic.Int64{}
	nanos.Store(nowNanos)
	e := cortexEntry{lbs: series, nanos: nanos, isNativeHistogram: nativeHistogram}
	s.refs[fingerprint] = append(s.refs[fingerprint], e)
	return e.nanos, true
}

func (s *cortexStripe) purge(keepUntilNanos int64) {
	if oldest := s.oldestEntryTs.Load(); oldest > 0 && keepUntilNanos <= oldest {
		return // nothing to do
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	active, activeNativeHistogram := 0, 0
	oldest := int64(math.MaxInt64)
	for fp, entries := range s.refs {
		// Collisions are rare: the common case first.
		if len(entries) == 1 {
			ts := entries[0].nanos.Load()
			if ts < keepUntilNanos {
				delete(s.refs, fp)
				continue
			}
			active++
			if entries[0].isNativeHistogram {
				activeNativeHistogram++
			}
			oldest = min(oldest, ts)
			continue
		}
		for i := 0; i < len(entries); {
			ts := entries[i].nanos.Load()
			if ts < keepUntilNanos {
				entries = append(entries[:i], entries[i+1:]...)
			} else {
				oldest = min(oldest, ts)
				i++
			}
		}
		if cnt := len(entries); cnt == 0 {
			delete(s.refs, fp)
		} else {
			active += cnt
			for _, e := range entries {
				if e.isNativeHistogram {
					activeNativeHistogram++
				}
			}
			s.refs[fp] = entries
		}
	}
	if oldest == math.MaxInt64 {
		s.oldestEntryTs.Store(0)
	} else {
		s.oldestEntryTs.Store(oldest)
	}
	s.active = active
	s.activeNativeHistogram = activeNativeHistogram
}

func (s *cortexStripe) getActive() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.active
}

// trackerImpl is what the benchmarks ask of a tracker.
type trackerImpl interface {
	update(hash uint64, ls labels.Labels, now int64)
	purge(keepFrom int64)
	active() int
}

type cortexImpl struct{ *cortexTracker }

func (c cortexImpl) update(hash uint64, ls labels.Labels, now int64) {
	c.UpdateSeries(ls, hash, now, false)
}
func (c cortexImpl) purge(keepFrom int64) { c.Purge(keepFrom) }
func (c cortexImpl) active() int          { return c.Active() }

type ingestkitImpl struct{ *Tracker }

func (t ingestkitImpl) update(hash uint64, ls labels.Labels, now int64) { t.Update(hash, ls, now) }
func (t ingestkitImpl) purge(keepFrom int64)                            { t.Purge(keepFrom) }
func (t ingestkitImpl) active() int                                     { return t.Active() }

func newIngestkitImpl(stripes int) trackerImpl {
	t, err := New(Options{Stripes: stripes})
	if err != nil {
		panic(err)
	}
	return ingestkitImpl{t}
}

var trackerImpls = []struct {
	name string
	new  func() trackerImpl
}{
	{"cortex", func() trackerImpl { return cortexImpl{newCortexTracker()} }},
	{"ingestkit", func() trackerImpl { return newIngestkitImpl(0) }},
}

// trackerSeries is a series as an ingester has it: the TSDB's labels and
// their hash.
type trackerSeries struct {
	hash uint64
	ls   labels.Labels
}

// trackerBenchSeries returns n 10-label series, built once per n, and the
// same series in a random order to update them in: not the order they were
// added in, which would walk the trackers' memory in order, but one that the
// benchmark loop itself reads in order, as an ingester reads the series of
// a request it has in hand.
func trackerBenchSeries(n int) (series, shuffled []trackerSeries) {
	trackerBenchMu.Lock()
	defer trackerBenchMu.Unlock()
	if s, ok := trackerBenchCache[n]; ok {
		return s.series, s.shuffled
	}
	series = make([]trackerSeries, n)
	sb := labels.NewScratchBuilder(10) // one symbol table for all, under dedupelabels
	for i := range series {
		sb.Reset()
		sb.Add("__name__", fmt.Sprintf("http_requests_%d_total", i%97))
		sb.Add("cluster", "eu-west-3")
		sb.Add("container", "api")
		sb.Add("endpoint", "https")
		sb.Add("instance", fmt.Sprintf("10.3.%d.%d:9090", i/251%256, i%251))
		sb.Add("job", "kubernetes-pods")
		sb.Add("method", [...]string{"GET", "POST", "PUT", "DELETE"}[i%4])
		sb.Add("namespace", fmt.Sprintf("team-%d", i%31))
		sb.Add("pod", fmt.Sprintf("api-%d-7f9c", i))
		sb.Add("status", fmt.Sprint(200+i%7))
		ls := sb.Labels()
		series[i] = trackerSeries{ls.Hash(), ls}
	}
	shuffled = slices.Clone(series)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	trackerBenchCache[n] = trackerBenchSet{series, shuffled}
	return series, shuffled
}

type trackerBenchSet struct {
	series, shuffled []trackerSeries
}

var (
	trackerBenchMu    sync.Mutex
	trackerBenchCache = map[int]trackerBenchSet{}
)

// BenchmarkTrackerUpdate updates series from all cores at once (one op is
// one update), 10-label series whose hash the caller has:
//   - state=existing: series the tracker holds, each at a later time than
//     before, so that every update stores its time. The goroutines walk the
//     same series a few thousand apart: at 10k series, where everything
//     fits in the caches, each update then moves its series' time from one
//     core's cache to another's and, in a tracker whose lookups lock (such
//     as Cortex's), its stripe's lock as well;
//   - state=existing-partitioned: the same, but each goroutine updates a
//     share of the series of its own, as concurrent pushes from different
//     senders do: a series' time then stays in one core's cache, and only
//     what the tracker shares between series, such as a stripe's lock,
//     moves between the cores;
//   - state=existing-batch (impl=ingestkit only): state=existing through
//     Tracker.UpdateBatch, 64 series a call, as a receiver passes the
//     series of a request;
//   - state=new: series the tracker does not hold: each round of n
//     updates adds every series to a tracker made for the round, so that
//     the cost of growing the tracker to n series is in the op.
func BenchmarkTrackerUpdate(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		for _, state := range []string{"new", "existing", "existing-partitioned"} {
			for _, impl := range trackerImpls {
				b.Run(fmt.Sprintf("series=%d/state=%s/impl=%s", n, state, impl.name), func(b *testing.B) {
					switch state {
					case "new":
						benchTrackerNew(b, n, impl.new)
					case "existing":
						benchTrackerExisting(b, n, impl.new())
					default:
						benchTrackerPartitioned(b, n, impl.new())
					}
				})
			}
			if state == "existing" {
				b.Run(fmt.Sprintf("series=%d/state=existing-batch/impl=ingestkit", n), func(b *testing.B) {
					benchTrackerBatch(b, n, newIngestkitImpl(0).(ingestkitImpl).Tracker)
				})
			}
		}
	}
}

// benchTrackerBatch is benchTrackerExisting through UpdateBatch.
func benchTrackerBatch(b *testing.B, n int, tr *Tracker) {
	shuffled := fillTracker(b, n, ingestkitImpl{tr})
	const batch = 64
	var goroutines atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(goroutines.Add(1)*7919) % n
		now := int64(2)
		hashes := make([]uint64, 0, batch)
		lsets := make([]labels.Labels, 0, batch)
		for pb.Next() {
			s := &shuffled[i]
			hashes, lsets = append(hashes, s.hash), append(lsets, s.ls)
			if i++; i == n {
				i = 0
				now++
			}
			if len(hashes) == batch {
				tr.UpdateBatch(hashes, lsets, now)
				hashes, lsets = hashes[:0], lsets[:0]
			}
		}
		tr.UpdateBatch(hashes, lsets, now)
	})
}

// fillTracker adds the n benchmark series to tr at time 1 and returns them
// in the random order.
func fillTracker(b *testing.B, n int, tr trackerImpl) []trackerSeries {
	series, shuffled := trackerBenchSeries(n)
	for _, s := range series {
		tr.update(s.hash, s.ls, 1)
	}
	if got := tr.active(); got != n {
		b.Fatalf("active() = %d after adding %d series, want %d", got, n, n)
	}
	return shuffled
}

func benchTrackerExisting(b *testing.B, n int, tr trackerImpl) {
	shuffled := fillTracker(b, n, tr)
	var goroutines atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine walks the series in the random order from its own
		// place, one round after the other, with its own clock.
		i := int(goroutines.Add(1)*7919) % n
		now := int64(2)
		for pb.Next() {
			s := &shuffled[i]
			tr.update(s.hash, s.ls, now)
			if i++; i == n {
				i = 0
				now++
			}
		}
	})
}

func benchTrackerPartitioned(b *testing.B, n int, tr trackerImpl) {
	shuffled := fillTracker(b, n, tr)
	// RunParallel starts GOMAXPROCS goroutines: goroutine g takes the g-th
	// share of the series in the random order.
	shares := runtime.GOMAXPROCS(0)
	var goroutines atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(goroutines.Add(1)-1) % shares
		share := shuffled[g*n/shares : (g+1)*n/shares]
		i, now := 0, int64(2)
		for pb.Next() {
			s := &share[i]
			tr.update(s.hash, s.ls, now)
			if i++; i == len(share) {
				i = 0
				now++
			}
		}
	})
}

func benchTrackerNew(b *testing.B, n int, newImpl func() trackerImpl) {
	_, shuffled := trackerBenchSeries(n)
	// Goroutines take blocks of updates from next: block divides n, so that
	// a block is in one round.
	const block = 100
	type round struct{ tr trackerImpl }
	rounds := make([]atomic.Pointer[round], b.N/n+2)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var k, end int
		var tr trackerImpl
		for pb.Next() {
			if k == end {
				k = int(next.Add(block)) - block
				end = k + block
				r := k / n
				rp := rounds[r].Load()
				if rp == nil {
					// The first to reach a round makes its tracker and
					// lets go of the one two rounds back. A goroutine
					// that fell two rounds behind finds its round let go
					// of, and finishes its block on a tracker of its own.
					fresh := &round{newImpl()}
					if rounds[r].CompareAndSwap(nil, fresh) {
						if r >= 2 {
							rounds[r-2].Store(nil)
						}
					} else if rp = rounds[r].Load(); rp != nil {
						fresh = rp
					}
					rp = fresh
				}
				tr = rp.tr
			}
			s := &shuffled[k%n]
			tr.update(s.hash, s.ls, int64(k/n+1))
			k++
		}
	})
}

// BenchmarkTrackerPurge purges 4% of 1M series (one op is one Purge); the
// purged series are added again between ops, outside the timer.
func BenchmarkTrackerPurge(b *testing.B) {
	const n = 1_000_000
	_, shuffled := trackerBenchSeries(n)
	idle, busy := shuffled[:n*4/100], shuffled[n*4/100:]
	for _, impl := range trackerImpls {
		b.Run(fmt.Sprintf("series=%d/impl=%s", n, impl.name), func(b *testing.B) {
			tr := impl.new()
			addIdle := func() {
				for _, s := range idle {
					tr.update(s.hash, s.ls, 1)
				}
			}
			addIdle()
			for _, s := range busy {
				tr.update(s.hash, s.ls, 2)
			}
			b.ReportAllocs()
			for b.Loop() {
				tr.purge(2)
				b.StopTimer()
				if got := tr.active(); got != n-len(idle) {
					b.Fatalf("active() = %d after purge, want %d", got, n-len(idle))
				}
				addIdle()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkTrackerStripes chose DefaultStripes: parallel updates of
// 10k and 1M existing series and additions of new ones, by stripe count.
func BenchmarkTrackerStripes(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		for _, state := range []string{"new", "existing"} {
			for _, stripes := range []int{16, 32, 64, 128, 256, 512, 1024} {
				b.Run(fmt.Sprintf("series=%d/state=%s/stripes=%d", n, state, stripes), func(b *testing.B) {
					if state == "new" {
						benchTrackerNew(b, n, func() trackerImpl { return newIngestkitImpl(stripes) })
					} else {
						benchTrackerExisting(b, n, newIngestkitImpl(stripes))
					}
				})
			}
		}
	}
}

// BenchmarkTrackerByLabel measures what counting by label value
// (Options.ByLabel, here namespace, 31 values, under the default cap) adds
// to updates of new and existing series, against the same tracker without
// it (bylabel=off): nothing on the path of an existing series.
func BenchmarkTrackerByLabel(b *testing.B) {
	const n = 10_000
	for _, state := range []string{"new", "existing"} {
		for _, byLabel := range []string{"off", "on"} {
			newImpl := func() trackerImpl {
				opts := Options{}
				if byLabel == "on" {
					opts.ByLabel = "namespace"
				}
				t, err := New(opts)
				if err != nil {
					panic(err)
				}
				return ingestkitImpl{t}
			}
			b.Run(fmt.Sprintf("series=%d/state=%s/bylabel=%s/impl=ingestkit", n, state, byLabel), func(b *testing.B) {
				if state == "new" {
					benchTrackerNew(b, n, newImpl)
				} else {
					benchTrackerExisting(b, n, newImpl())
				}
			})
		}
	}
}
