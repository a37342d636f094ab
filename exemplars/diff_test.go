package exemplars

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/internal/promcompat"
)

var long = flag.Bool("exemplars.long", false, "run the differential test against Prometheus's storage for minutes rather than seconds")

// source is the randomness a differential sequence is drawn from: a seeded
// generator, or a fuzzer's bytes.
type source interface {
	intn(n int) int
}

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }

// byteSource reads its choices from a fuzzer's input, and once that is
// used up, from a generator seeded with its length, so that short inputs
// still drive long sequences.
type byteSource struct {
	b []byte
	r *rand.Rand
}

func (s *byteSource) intn(n int) int {
	if len(s.b) >= 2 {
		v := int(binary.LittleEndian.Uint16(s.b))
		s.b = s.b[2:]
		return v % n
	}
	if s.r == nil {
		s.r = rand.New(rand.NewPCG(uint64(n), 7))
	}
	return s.r.IntN(n)
}

// The universe a differential sequence draws from: series with names and
// labels that the matchers below select in every way, exemplar labels
// that are valid, too long (in bytes and in characters), at the limit, or
// with a repeated name, and values that compare in every way (NaN too).
var (
	diffSeries = []labels.Labels{
		labels.FromStrings("__name__", "http_requests_total", "job", "api", "instance", "a"),
		labels.FromStrings("__name__", "http_requests_total", "job", "api", "instance", "b"),
		labels.FromStrings("__name__", "http_requests_total", "job", "db", "instance", "a"),
		labels.FromStrings("__name__", "rpc_seconds_bucket", "job", "db", "le", "0.1"),
		labels.FromStrings("__name__", "rpc_seconds_bucket", "job", "db", "le", "+Inf"),
		labels.FromStrings("__name__", "up", "job", "api"),
		labels.FromStrings("job", "api"),
		labels.FromStrings("__name__", "x"),
	}
	diffExemplarLabels = []labels.Labels{
		labels.EmptyLabels(),
		labels.FromStrings("trace_id", "a1"),
		labels.FromStrings("trace_id", "b2"),
		labels.FromStrings("trace_id", "c3", "span_id", "d4"),
		labels.FromStrings("trace_id", "a1", "trace_id", "b2"),                             // repeated name
		labels.FromStrings("a", strings.Repeat("b", exemplar.ExemplarMaxLabelSetLength)),   // 129 characters
		labels.FromStrings("a", strings.Repeat("b", exemplar.ExemplarMaxLabelSetLength-1)), // 128, the limit
		labels.FromStrings("a", strings.Repeat("é", exemplar.ExemplarMaxLabelSetLength-1)), // 128 characters, 255 bytes
		labels.FromStrings("a", strings.Repeat("é", exemplar.ExemplarMaxLabelSetLength)),   // 129 characters
	}
	diffValues = []float64{0, 0.1, 0.2, 1, -1, math.NaN(), math.Inf(1)}
	diffSizes  = []int64{0, 1, 2, 3, 5, 8, 13, 40, 100, 300}
)

// diffShape is the shape of one sequence: how many series it uses, its
// first size, its out-of-order window, and how far back out-of-order
// timestamps reach.
type diffShape struct {
	series int
	size   int64
	window int64
	reach  int64
	// rareResize makes resizes 20 times rarer, so that series grow long.
	rareResize bool
}

func pickShape(src source) diffShape {
	return diffShape{
		series:     []int{1, 1, 2, 3, len(diffSeries)}[src.intn(5)],
		size:       diffSizes[src.intn(len(diffSizes))],
		window:     []int64{0, 1, 10, 100, 1000, 1 << 40}[src.intn(6)],
		reach:      []int64{5, 50, 500, 5000}[src.intn(4)],
		rareResize: src.intn(4) == 0,
	}
}

// upstreamStorage is Prometheus's storage under test, with its own
// registry, to read its metrics back.
//
// Its AddExemplar and ValidateExemplar answer as v0.316.0's do for an
// exemplar whose label names repeat, which the storages of the releases
// before take (TestOlderPrometheus shows it): with storage.ErrExemplarsDisabled
// when the storage's size is zero, otherwise with tsdb.ErrInvalidExemplar
// wrapped with the name, and without adding it. So the tests hold the
// ring to v0.316.0's rejection of such exemplars at every release, and
// compare all else with the storage in use.
type upstreamStorage struct {
	*tsdb.CircularExemplarStorage
	reg *prometheus.Registry
	// takesRepeatedNames is set where the storage takes exemplars whose
	// label names repeat (before v0.316.0).
	takesRepeatedNames bool
}

// newUpstream returns Prometheus's storage of the given size and
// out-of-order window. Before v0.310.0 the storage has no window, and a
// window other than zero fails the test.
func newUpstream(t testing.TB, size, window int64) upstreamStorage {
	t.Helper()
	reg := prometheus.NewRegistry()
	es, err := promcompat.NewCircularExemplarStorage(size, tsdb.NewExemplarMetrics(reg), window)
	if err != nil {
		t.Fatalf("tsdb.NewCircularExemplarStorage(%d, %d) = %v", size, window, err)
	}
	return upstreamStorage{es.(*tsdb.CircularExemplarStorage), reg, upstreamTakesRepeatedNames()}
}

// AddExemplar is the storage's AddExemplar, but for an exemplar whose
// label names repeat where the storage would take it (see
// upstreamStorage).
func (u upstreamStorage) AddExemplar(l labels.Labels, e exemplar.Exemplar) error {
	if err := u.repeatedNames(e); err != nil {
		return err
	}
	return u.CircularExemplarStorage.AddExemplar(l, e)
}

// ValidateExemplar is the storage's ValidateExemplar, but for an exemplar
// whose label names repeat where the storage would take it (see
// upstreamStorage).
func (u upstreamStorage) ValidateExemplar(l labels.Labels, e exemplar.Exemplar) error {
	if err := u.repeatedNames(e); err != nil {
		return err
	}
	return u.CircularExemplarStorage.ValidateExemplar(l, e)
}

// repeatedNames returns the error of v0.316.0's storage for e if e's
// label names repeat and the storage in use would take it, and nil
// otherwise. v0.316.0 checks the storage's size first, and then the
// names, before anything else.
func (u upstreamStorage) repeatedNames(e exemplar.Exemplar) error {
	if !u.takesRepeatedNames {
		return nil
	}
	name, dup := e.Labels.HasDuplicateLabelNames()
	if !dup {
		return nil
	}
	if err := u.CircularExemplarStorage.ValidateExemplar(labels.EmptyLabels(), e); errors.Is(err, storage.ErrExemplarsDisabled) {
		return err
	}
	return fmt.Errorf("label name %q is not unique: %w", name, tsdb.ErrInvalidExemplar)
}

// setWindow sets the storage's out-of-order window, and reports whether
// it could: the storage has none before v0.310.0.
func (u upstreamStorage) setWindow(d int64) bool {
	return promcompat.SetOutOfOrderTimeWindow(u.CircularExemplarStorage, d)
}

// metrics gathers the upstream storage's metrics by name.
func (u upstreamStorage) metrics(t testing.TB) map[string]float64 {
	t.Helper()
	mfs, err := u.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, mf := range mfs {
		metric := mf.GetMetric()[0]
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			m[mf.GetName()] = metric.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			m[mf.GetName()] = metric.GetGauge().GetValue()
		}
	}
	return m
}

// runDifferential drives a Ring and Prometheus's storage with the same
// sequence of steps drawn from src, and fails at the first step after
// which an error, a Resize result, a Select result, the IterateExemplars
// order or a count differs.
//
// hashOf, if not nil, gives the hash the ring is given for a series, through
// AddExemplarHash and ValidateExemplarHash; nil uses AddExemplar and
// ValidateExemplar.
//
// Before v0.310.0, whose storage has no out-of-order window, the windows
// drawn are those of comparableWindow: zero, or a negative one, which the
// ring alone is given. The sequence drawn is the same at every release.
func runDifferential(t testing.TB, src source, steps int, hashOf func(labels.Labels) uint64) {
	t.Helper()
	shape := pickShape(src)
	shape.window = comparableWindow(shape.window)
	up := newUpstream(t, shape.size, shape.window)
	ring := New(shape.size, Options{OutOfOrderTimeWindow: shape.window})
	resized := false
	now := int64(1000)
	type added struct {
		series labels.Labels
		e      exemplar.Exemplar
	}
	var history []added
	// log keeps the steps, formatted only when the sequence fails.
	type step struct {
		format string
		args   []any
	}
	var log []step
	fail := func(format string, args ...any) {
		t.Helper()
		var tail []string
		for _, s := range log[max(0, len(log)-30):] {
			tail = append(tail, fmt.Sprintf(s.format, s.args...))
		}
		t.Fatalf("shape %+v, after %d steps (last ones below): %s\n%s", shape, len(log), fmt.Sprintf(format, args...), strings.Join(tail, "\n"))
	}

	for i := range steps {
		switch op := src.intn(100); {
		case op < 80: // add, or validate
			var series labels.Labels
			var e exemplar.Exemplar
			if len(history) > 0 && src.intn(10) == 0 {
				// The same again, or at another timestamp.
				h := history[src.intn(len(history))]
				series, e = h.series, h.e
				if src.intn(2) == 0 {
					e.Ts = now - int64(src.intn(int(shape.reach)))
				}
			} else {
				series = diffSeries[src.intn(shape.series)]
				e = exemplar.Exemplar{
					Labels: diffExemplarLabels[src.intn(len(diffExemplarLabels))],
					Value:  diffValues[src.intn(len(diffValues))],
					HasTs:  src.intn(4) != 0,
				}
				switch k := src.intn(10); {
				case k < 4:
					now += int64(src.intn(3))
					e.Ts = now
				case k < 7:
					e.Ts = now - int64(src.intn(int(shape.reach)))
				case k < 8:
					e.Ts = now - shape.window + int64(src.intn(3)) - 1 // the window's edge
				case k < 9 && len(history) > 0:
					e.Ts = history[src.intn(len(history))].e.Ts
				default:
					e.Ts = now + int64(src.intn(3))
				}
			}
			if i%4 == 3 {
				// A copy, equal but at another address, which the ring
				// finds by hash, not by the address it was added with
				// (ident_unsafe.go); the source is not drawn from, so that
				// the corpus keeps its sequences.
				series = series.Copy()
			}
			if src.intn(8) == 0 {
				var got error
				if hashOf != nil {
					got = ring.ValidateExemplarHash(hashOf(series), series, e)
				} else {
					got = ring.ValidateExemplar(series, e)
				}
				want := up.ValidateExemplar(series, e)
				log = append(log, step{"ValidateExemplar(%s, %+v) = %v", []any{series, e, want}})
				if !sameError(got, want) {
					fail("ValidateExemplar(%s, %+v) = %v, want %v", series, e, got, want)
				}
				break
			}
			var got error
			if hashOf != nil {
				got = ring.AddExemplarHash(hashOf(series), series, e)
			} else {
				got = ring.AddExemplar(series, e)
			}
			want := up.AddExemplar(series, e)
			log = append(log, step{"AddExemplar(%s, %+v) = %v", []any{series, e, want}})
			if !sameError(got, want) {
				fail("AddExemplar(%s, %+v) = %v, want %v", series, e, got, want)
			}
			if want == nil {
				history = append(history, added{series, e})
			}
		case op < 84 && (!shape.rareResize || src.intn(20) == 0): // resize, to zero and back too
			var size int64
			switch k := src.intn(6); k {
			case 0:
				size = 0
			case 1:
				size = int64(ring.size) // unchanged
			case 2:
				size = -1
			default:
				size = diffSizes[src.intn(len(diffSizes))] + int64(src.intn(3))
			}
			got, want := ring.Resize(size), up.Resize(size)
			log = append(log, step{"Resize(%d) = %d", []any{size, want}})
			resized = true
			if got != want {
				fail("Resize(%d) = %d, want %d", size, got, want)
			}
		case op < 86:
			w := comparableWindow([]int64{-5, 0, 1, 10, 100, 1 << 40}[src.intn(6)])
			ring.SetOutOfOrderTimeWindow(w)
			up.setWindow(w) // false before v0.310.0, whose lack of a window w matches
			shape.window = w
			log = append(log, step{"SetOutOfOrderTimeWindow(%d)", []any{w}})
		default: // a select with random matchers, checked below like every step
		}

		// After every step: everything, in ingestion order and by select.
		compareIterate(t, ring, up, fail)
		compareSelect(t, ring, up, math.MinInt64, math.MaxInt64, [][]*labels.Matcher{{}}, fail)
		start := now - int64(src.intn(int(shape.reach)*2))
		end := start + int64(src.intn(int(shape.reach)*2)) - 2
		compareSelect(t, ring, up, start, end, randomMatchers(src), fail)
		if i%16 == 0 || i == steps-1 { // gathering metrics is slow
			compareMetrics(t, ring, up, resized, fail)
		}
	}
}

// sameError reports whether got is want: the same value, or an error with
// the same text that wraps the same Prometheus error.
func sameError(got, want error) bool {
	if got == nil || want == nil {
		return got == want
	}
	if got.Error() != want.Error() {
		return false
	}
	for _, sentinel := range []error{storage.ErrDuplicateExemplar, storage.ErrOutOfOrderExemplar, storage.ErrExemplarLabelLength, storage.ErrExemplarsDisabled, tsdb.ErrInvalidExemplar} {
		if errors.Is(got, sentinel) != errors.Is(want, sentinel) {
			return false
		}
	}
	return true
}

// diffMatchers are matchers of every type on names that series have,
// and one that none has, made once: regexp matchers are slow to make.
var diffMatchers = func() []*labels.Matcher {
	var ms []*labels.Matcher
	for _, name := range []string{"__name__", "job", "instance", "le", "missing"} {
		for _, v := range []string{"", "api", "db", "a", "http_requests_total", "up", "x", "+Inf"} {
			ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, name, v), labels.MustNewMatcher(labels.MatchNotEqual, name, v))
		}
		for _, re := range []string{".*", ".+", "a|db", "http_.*", "rpc.*|up", ""} {
			ms = append(ms, labels.MustNewMatcher(labels.MatchRegexp, name, re), labels.MustNewMatcher(labels.MatchNotRegexp, name, re))
		}
	}
	return ms
}()

// randomMatchers returns zero to two sets of zero to two matchers.
func randomMatchers(src source) [][]*labels.Matcher {
	sets := make([][]*labels.Matcher, src.intn(3))
	for i := range sets {
		for range src.intn(3) {
			sets[i] = append(sets[i], diffMatchers[src.intn(len(diffMatchers))])
		}
	}
	return sets
}

// compareIterate fails unless the ring and upstream iterate over the same
// exemplars in the same order.
func compareIterate(t testing.TB, ring *Ring, up upstreamStorage, fail func(string, ...any)) {
	t.Helper()
	got, want := iterateAll(t, ring), iterateAll(t, up)
	if !sameResults(got, want) {
		fail("IterateExemplars = %v, want %v", got, want)
	}
}

// iterateAll returns what IterateExemplars gives, as one result per
// exemplar.
func iterateAll(t testing.TB, es interface {
	IterateExemplars(func(labels.Labels, exemplar.Exemplar) error) error
}) []exemplar.QueryResult {
	t.Helper()
	var all []exemplar.QueryResult
	if err := es.IterateExemplars(func(s labels.Labels, e exemplar.Exemplar) error {
		all = append(all, exemplar.QueryResult{SeriesLabels: s, Exemplars: []exemplar.Exemplar{e}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return all
}

// compareSelect fails unless Select returns the same on both.
func compareSelect(t testing.TB, ring *Ring, up upstreamStorage, start, end int64, ms [][]*labels.Matcher, fail func(string, ...any)) {
	t.Helper()
	got, err := ring.Select(start, end, ms...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := up.Select(start, end, ms...)
	if err != nil {
		t.Fatal(err)
	}
	if (got == nil) != (want == nil) || !sameResults(got, want) {
		fail("Select(%d, %d, %v) = %v, want %v", start, end, ms, got, want)
	}
}

// sameResults compares results exactly, NaN values by their bits.
func sameResults(got, want []exemplar.QueryResult) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !labels.Equal(got[i].SeriesLabels, want[i].SeriesLabels) || len(got[i].Exemplars) != len(want[i].Exemplars) {
			return false
		}
		for j, g := range got[i].Exemplars {
			w := want[i].Exemplars[j]
			if !labels.Equal(g.Labels, w.Labels) || g.Ts != w.Ts || g.HasTs != w.HasTs || math.Float64bits(g.Value) != math.Float64bits(w.Value) {
				return false
			}
		}
	}
	return true
}

// compareMetrics fails unless the ring's stats agree with upstream's
// metrics. From v0.310.0 on, upstream's count of stored exemplars and
// oldest timestamp are wrong after a resize of a ring that was not full
// (TestUpstreamGaugesAfterResize), so there those two are compared only
// until the first resize; v0.309.1's storage, which packs its exemplars
// into the first slots on a resize, keeps them right.
func compareMetrics(t testing.TB, ring *Ring, up upstreamStorage, resized bool, fail func(string, ...any)) {
	t.Helper()
	m := up.metrics(t)
	s := ring.Stats()
	check := func(name string, got float64) {
		if want := m[name]; got != want {
			fail("%s = %v, want %v (stats %+v)", name, got, want, s)
		}
	}
	check("prometheus_tsdb_exemplar_exemplars_appended_total", float64(s.Appended))
	check("prometheus_tsdb_exemplar_out_of_order_exemplars_total", float64(s.OutOfOrder))
	check("prometheus_tsdb_exemplar_series_with_exemplars_in_storage", float64(s.Series))
	check("prometheus_tsdb_exemplar_max_exemplars", float64(s.Size))
	if !resized || !promcompat.ExemplarsOutOfOrder() {
		check("prometheus_tsdb_exemplar_exemplars_in_storage", float64(s.Exemplars))
		check("prometheus_tsdb_exemplar_last_exemplars_timestamp_seconds", float64(s.OldestTimestamp)/1000)
	}
}

// TestDifferential drives a Ring and tsdb.NewCircularExemplarStorage with
// the same random sequences: many series, duplicates, equal timestamps,
// exemplars out of order within and beyond the window, too-long and
// repeated labels, NaN values, resizes up, down, to zero and back, window
// changes, and selects with every matcher type, comparing everything after
// every step. -exemplars.long runs it for a few minutes.
func TestDifferential(t *testing.T) {
	sequences, steps := 300, 600
	if testing.Short() || raceEnabled {
		sequences = 50
	}
	if *long {
		sequences, steps = 3000, 3000 // some 3 minutes on a 2-core machine
	}
	for seed := range uint64(sequences) {
		src := randSource{rand.New(rand.NewPCG(seed, 0x5eed))}
		runDifferential(t, src, steps, nil)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// TestDifferentialLongSeries drives sequences with one or two series of
// hundreds of exemplars far out of order, so that series build, use and
// drop the orders that replace the walk of their lists.
func TestDifferentialLongSeries(t *testing.T) {
	if !promcompat.ExemplarsOutOfOrder() {
		t.Skip("Prometheus's storage has no out-of-order window before v0.310.0, and this test's sequences are all of exemplars out of order within one (TestOlderPrometheus shows the difference)")
	}
	sequences := 20
	if raceEnabled {
		sequences = 4
	}
	if *long {
		sequences = 200
	}
	for seed := range uint64(sequences) {
		r := rand.New(rand.NewPCG(seed, 0x10c))
		src := &longSeriesSource{r: r}
		runDifferential(t, src, 4000, nil)
	}
}

// longSeriesSource makes the first choices of a sequence (its shape): one
// or two series, a ring of 300, a window that reaches back over most of
// the series, late exemplars across it; then random.
type longSeriesSource struct {
	r *rand.Rand
	n int
}

func (s *longSeriesSource) intn(n int) int {
	s.n++
	switch s.n {
	case 1: // series: 1 or 2
		return s.r.IntN(2)
	case 2: // size 300
		return len(diffSizes) - 1
	case 3: // window 1<<40
		return 5
	case 4: // reach 50 or 500: late exemplars land across the series
		return 1 + s.r.IntN(2)
	case 5: // rare resizes
		return 0
	}
	return s.r.IntN(n)
}

// TestDifferentialCollidingHashes gives the ring hashes that collide, all
// of them or half, through AddExemplarHash, and requires the same results
// as Prometheus's storage, keyed by the labels themselves: series whose
// hashes collide are told apart by their labels, and dropping one from
// the middle of a chain of collisions keeps the others.
func TestDifferentialCollidingHashes(t *testing.T) {
	for name, hashOf := range map[string]func(labels.Labels) uint64{
		"all-equal": func(labels.Labels) uint64 { return 42 },
		"two-ways":  func(l labels.Labels) uint64 { return l.Hash() % 2 },
		"real":      func(l labels.Labels) uint64 { return l.Hash() },
	} {
		t.Run(name, func(t *testing.T) {
			seeds := uint64(60)
			if raceEnabled {
				seeds = 10
			}
			for seed := range seeds {
				runDifferential(t, randSource{rand.New(rand.NewPCG(seed, 0xc011))}, 400, hashOf)
			}
		})
	}
}

// FuzzDifferential is TestDifferential driven by the fuzzer's bytes.
func FuzzDifferential(f *testing.F) {
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 1))
		b := make([]byte, 512)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		runDifferential(t, &byteSource{b: b}, 300, nil)
	})
}

// TestDifferentialSegments compares a Ring with Prometheus's storage at
// sizes of thousands, grown and shrunk many times: rings that wrap, grow
// with their oldest exemplars at the old end into segments of their own,
// shrink across segments, grow past maxSegs segments, go to zero and
// back, and take exemplars out of order in between. Everything is
// compared after every resize and every few thousand adds. Before v0.310.0
// the window is zero, and both reject the exemplars out of order.
func TestDifferentialSegments(t *testing.T) {
	const late = 1000 // how far late exemplars reach back, and the window
	window := comparableWindow(late)
	if window != late {
		t.Logf("Prometheus's storage has no out-of-order window before v0.310.0: a window of %d, not %d", window, late)
	}
	series := diffSeries[:6]
	up := newUpstream(t, 10000, window)
	ring := New(10000, Options{OutOfOrderTimeWindow: window})
	r := rand.New(rand.NewPCG(7, 0xc4))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format, args...)
	}
	now := int64(0)
	add := func(n int) {
		for range n {
			now++
			ts := now
			if r.IntN(8) == 0 {
				ts -= int64(r.IntN(late * 2))
			}
			s := series[r.IntN(len(series))]
			e := exemplar.Exemplar{Labels: diffExemplarLabels[1+r.IntN(3)], Value: float64(r.IntN(4)), Ts: ts, HasTs: true}
			if got, want := ring.AddExemplar(s, e), up.AddExemplar(s, e); !sameError(got, want) {
				fail("AddExemplar(%s, %+v) = %v, want %v", s, e, got, want)
			}
		}
	}
	compare := func() {
		compareIterate(t, ring, up, fail)
		compareSelect(t, ring, up, math.MinInt64, math.MaxInt64, [][]*labels.Matcher{{}}, fail)
		compareSelect(t, ring, up, now-3000, now-1000, [][]*labels.Matcher{{labels.MustNewMatcher(labels.MatchEqual, "job", "api")}}, fail)
	}
	add(15000)
	compare()
	// After 8191, which keeps the memory of 10,000 slots, each grow to
	// 10,100 and on adds a segment, until the grow to 10,800 would make a
	// ninth and copies the ring into one.
	consolidated := false
	for _, size := range []int64{20000, 6000, 9000, 4096, 4097, 30000, 8191, 10100, 10200, 10300, 10400, 10500, 10600, 10700, 10800, 0, 5000, 12289} {
		segs := len(ring.segs)
		if got, want := ring.Resize(size), up.Resize(size); got != want {
			fail("Resize(%d) = %d, want %d", size, got, want)
		}
		if segs == maxSegs && len(ring.segs) == 1 {
			consolidated = true
		}
		compare()
		add(int(size)/2 + 1)
		compare()
		add(int(size) + 7)
		compare()
	}
	if !consolidated {
		t.Error("no grow copied a ring of maxSegs segments into one")
	}
}
