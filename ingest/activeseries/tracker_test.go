package activeseries

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// newTestTracker returns a tracker with opts, failing the test on error.
func newTestTracker(tb testing.TB, opts Options) *Tracker {
	tb.Helper()
	tr, err := New(opts)
	if err != nil {
		tb.Fatalf("New(%+v) = %v", opts, err)
	}
	return tr
}

// trackerTestLabels returns n label sets {__name__="m", team=..., i="<i>"},
// built with one symbol table.
func trackerTestLabels(n int) []labels.Labels {
	sb := labels.NewScratchBuilder(3)
	out := make([]labels.Labels, n)
	for i := range out {
		sb.Reset()
		sb.Add("__name__", "m")
		sb.Add("i", fmt.Sprint(i))
		sb.Add("team", [...]string{"a", "b", "c"}[i%3])
		out[i] = sb.Labels()
	}
	return out
}

// trackerRaceEnabled reports whether the test binary was built with -race.
func trackerRaceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// trackerMix is splitmix64's finaliser: distinct, well-mixed hashes for
// tests that need many series but no labels of their own.
func trackerMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// check verifies the tracker's invariants: every index slot reachable from
// its home, each entry in use indexed once and alive, the oldest hints at
// most the entries' times, and the counters equal to counts made from the
// entries.
func (t *Tracker) check(tb testing.TB) {
	tb.Helper()
	var all, overflow trackerDelta
	values := map[string]trackerDelta{}
	cs := t.custom.Load()
	custom := make([]trackerDelta, len(cs.custom))
	for si := range t.stripes {
		s := &t.stripes[si]
		s.mu.Lock()
		if s.custom != cs {
			tb.Fatalf("stripe %d: custom trackers %p, the tracker's %p", si, s.custom, cs)
		}
		table := s.table.Load()
		if table == nil {
			if s.used != 0 {
				tb.Fatalf("stripe %d: no table, %d used", si, s.used)
			}
			s.mu.Unlock()
			continue
		}
		if c := trackerCapacity(trackerChunksIn(table.chunks)); s.used > c || len(table.chunks) > 0 && table.chunks[0] == nil {
			tb.Fatalf("stripe %d: %d used, capacity %d", si, s.used, c)
		}
		n := len(table.index)
		seen := make([]bool, s.used)
		slots := 0
		for p, v := range table.index {
			if v == 0 {
				continue
			}
			slots++
			i := uint32(v) - 1
			if i >= s.used || seen[i] {
				tb.Fatalf("stripe %d slot %d: entry %d out of range or indexed twice", si, p, i)
			}
			seen[i] = true
			for q := int(uint64(uint32(v>>32)) * uint64(n) >> 32); q != p; q = (q + 1) % n {
				if table.index[q] == 0 {
					tb.Fatalf("stripe %d slot %d: empty slot %d between it and its home", si, p, q)
				}
			}
			e := trackerEntryAt(table.chunks, i)
			if e.last == trackerDead {
				tb.Fatalf("stripe %d: entry %d is indexed and dead", si, i)
			}
			if e.last < s.oldest.Load() {
				tb.Fatalf("stripe %d: entry %d seen at %d, before the oldest hint %d", si, i, e.last, s.oldest.Load())
			}
			m := e.meta
			if got, want := uint32(m), cs.match(e.lset); got != want {
				tb.Fatalf("stripe %d: entry %d %s has custom mask %b, matches %b", si, i, e.lset, got, want)
			}
			d := trackerHistDelta(uint32(m>>32), 1)
			all.series += d.series
			all.histograms += d.histograms
			all.buckets += d.buckets
			if t.values != nil {
				// Where the rules of labelValues place the series.
				if v := e.lset.Get(t.values.label); t.values.values[v] != nil {
					c := values[v]
					c.series, c.histograms, c.buckets = c.series+d.series, c.histograms+d.histograms, c.buckets+d.buckets
					values[v] = c
				} else {
					overflow.series += d.series
					overflow.histograms += d.histograms
					overflow.buckets += d.buckets
				}
			}
			for mask := uint32(m); mask != 0; mask &= mask - 1 {
				c := &custom[bits.TrailingZeros32(mask)]
				c.series += d.series
				c.histograms += d.histograms
				c.buckets += d.buckets
			}
		}
		if slots != int(s.used) {
			tb.Fatalf("stripe %d: %d slots, %d used", si, slots, s.used)
		}
		if uint64(s.used)*8 > uint64(n)*7 {
			tb.Fatalf("stripe %d: %d used in an index of %d", si, s.used, n)
		}
		s.mu.Unlock()
	}
	if got := (trackerDelta{t.all.series.Load(), t.all.histograms.Load(), t.all.buckets.Load()}); got != all {
		tb.Fatalf("counters = %+v, entries count %+v", got, all)
	}
	if lv := t.values; lv != nil {
		if got := (trackerDelta{lv.overflow.series.Load(), lv.overflow.histograms.Load(), lv.overflow.buckets.Load()}); got != overflow {
			tb.Fatalf("overflow counters = %+v, entries count %+v", got, overflow)
		}
		if len(lv.values) > lv.max {
			tb.Fatalf("%d label values, at most %d", len(lv.values), lv.max)
		}
		for v, c := range lv.values {
			if got := (trackerDelta{c.series.Load(), c.histograms.Load(), c.buckets.Load()}); got != values[v] {
				tb.Fatalf("label value %q counters = %+v, entries count %+v", v, got, values[v])
			}
		}
	}
	for i := range custom {
		c := cs.counts[i]
		if got := (trackerDelta{c.series.Load(), c.histograms.Load(), c.buckets.Load()}); got != custom[i] {
			tb.Fatalf("custom %q counters = %+v, entries count %+v", cs.custom[i].Name, got, custom[i])
		}
	}
}

func TestNewTracker(t *testing.T) {
	m := labels.MustNewMatcher(labels.MatchEqual, "team", "a")
	many := make([]CustomTracker, MaxCustomTrackers+1)
	for i := range many {
		many[i] = CustomTracker{Name: fmt.Sprint(i), Matchers: []*labels.Matcher{m}}
	}
	for _, tc := range []struct {
		name        string
		opts        Options
		wantStripes int
		wantErr     string // a part of the error, "" for none
	}{
		{name: "zero", opts: Options{}, wantStripes: DefaultStripes},
		{name: "negative", opts: Options{Stripes: -1}, wantStripes: DefaultStripes},
		{name: "one", opts: Options{Stripes: 1}, wantStripes: 1},
		{name: "three", opts: Options{Stripes: 3}, wantStripes: 4},
		{name: "127", opts: Options{Stripes: 127}, wantStripes: 128},
		{name: "128", opts: Options{Stripes: 128}, wantStripes: 128},
		{name: "129", opts: Options{Stripes: 129}, wantStripes: 256},
		{name: "max", opts: Options{Stripes: 1 << 16}, wantStripes: 1 << 16},
		{name: "max+1", opts: Options{Stripes: 1<<16 + 1}, wantErr: "65537 stripes"},
		{name: "32 custom", opts: Options{Custom: many[:32]}, wantStripes: DefaultStripes},
		{name: "33 custom", opts: Options{Custom: many}, wantErr: "33 custom trackers"},
		{name: "no name", opts: Options{Custom: []CustomTracker{{Matchers: []*labels.Matcher{m}}}}, wantErr: "no name"},
		{name: "twice", opts: Options{Custom: []CustomTracker{many[0], many[0]}}, wantErr: `"0" defined twice`},
		{name: "no matchers", opts: Options{Custom: []CustomTracker{{Name: "x"}}}, wantStripes: DefaultStripes},
		{name: "nil matcher", opts: Options{Custom: []CustomTracker{{Name: "x", Matchers: []*labels.Matcher{m, nil}}}}, wantErr: "nil matcher"},
		{name: "by label", opts: Options{ByLabel: "team"}, wantStripes: DefaultStripes},
		{name: "by label, max", opts: Options{ByLabel: "team", MaxLabelValues: 1 << 16}, wantStripes: DefaultStripes},
		{name: "by label, max+1", opts: Options{ByLabel: "team", MaxLabelValues: 1<<16 + 1}, wantErr: "65537 label values"},
		{name: "by label, negative", opts: Options{ByLabel: "team", MaxLabelValues: -1}, wantErr: "-1 label values"},
		{name: "max label values alone", opts: Options{MaxLabelValues: 10}, wantErr: "without ByLabel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := New(tc.opts)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New(%s) = %v, want an ErrOptions about %q", tc.name, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%s) = %v, want no error", tc.name, err)
			}
			if got := len(tr.stripes); got != tc.wantStripes {
				t.Fatalf("New(%s) has %d stripes, want %d", tc.name, got, tc.wantStripes)
			}
			if tr.Active() != 0 {
				t.Fatalf("New(%s).Active() = %d, want 0", tc.name, tr.Active())
			}
		})
	}
}

// TestTrackerLayout pins the sizes that the memory claims rest on.
func TestTrackerLayout(t *testing.T) {
	lsSize := reflect.TypeFor[labels.Labels]().Size()
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"trackerStripe", reflect.TypeFor[trackerStripe]().Size(), 128},
		{"trackerEntry", reflect.TypeFor[trackerEntry]().Size(), lsSize + 16},
		{"trackerEntry.last offset", reflect.TypeFor[trackerEntry]().Field(1).Offset, 0},
		{"trackerEntry alignment", uintptr(reflect.TypeFor[trackerEntry]().Align()), 8},
		{"trackerCounts", reflect.TypeFor[trackerCounts]().Size(), 64},
	} {
		if tc.got != tc.want {
			t.Errorf("Sizeof(%s) = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// trackerChunksIn returns the number of chunks allocated in chunks, which
// are the first ones.
func trackerChunksIn(chunks [][]trackerEntry) int {
	n := 0
	for n < len(chunks) && chunks[n] != nil {
		n++
	}
	return n
}

// TestTrackerEntryAt checks the chunk arithmetic at the chunk boundaries,
// in chunks added one by one as inserts add them and in chunks made at
// once by a purge.
func TestTrackerEntryAt(t *testing.T) {
	var grown [][]trackerEntry
	arrays := 0
	for i := uint32(0); i < 5000; i++ {
		k, j := trackerChunkOf(i)
		first := j == 0
		if want := trackerCapacity(k) == i; first != want {
			t.Fatalf("trackerChunkOf(%d) = %d, %d; the first %d chunks hold %d entries", i, k, j, k, trackerCapacity(k))
		}
		if !first {
			continue
		}
		if got := trackerCapacity(k+1) - trackerCapacity(k); got != uint32(trackerChunkLen(k)) {
			t.Fatalf("trackerCapacity(%d) - trackerCapacity(%d) = %d, want trackerChunkLen(%d) = %d", k+1, k, got, k, trackerChunkLen(k))
		}
		before := grown
		var newArray bool
		grown, newArray = trackerAddChunk(grown, k)
		if newArray {
			arrays++
		}
		if newArray != (len(before) == 0 || &before[0] != &grown[0]) || len(grown) != cap(grown) || trackerChunksIn(grown) != k+1 {
			t.Fatalf("trackerAddChunk(%d chunks, %d): %d chunks in an array of %d (capacity %d), a new array %v", len(before), k, trackerChunksIn(grown), len(grown), cap(grown), newArray)
		}
		for j := range before[:min(k, len(before))] {
			if &before[j][0] != &grown[j][0] {
				t.Fatalf("trackerAddChunk(%d chunks, %d) moved chunk %d", len(before), k, j)
			}
		}
	}
	// 64 small chunks and 4 large ones, in arrays of 4, 8, ... 128.
	if got := trackerChunksIn(grown); got != trackerPages+4 || arrays != 6 {
		t.Fatalf("5000 entries in %d chunks and %d arrays, want %d and 6", got, arrays, trackerPages+4)
	}
	for _, n := range []uint32{0, 1, 16, 17, 1024, 1025, 5000} {
		made := trackerNewChunks(n)
		if c := trackerCapacity(trackerChunksIn(made)); c < n || trackerChunksIn(made) > 0 && trackerCapacity(trackerChunksIn(made)-1) >= n {
			t.Fatalf("trackerNewChunks(%d) holds %d entries in %d chunks", n, c, trackerChunksIn(made))
		}
		for name, chunks := range map[string][][]trackerEntry{"grown": grown, "made": made} {
			if name == "grown" && n < 5000 {
				continue
			}
			for k, c := range chunks[:trackerChunksIn(chunks)] {
				if len(c) != trackerChunkLen(k) {
					t.Fatalf("%s: chunk %d holds %d entries, want %d", name, k, len(c), trackerChunkLen(k))
				}
			}
			for i := range n {
				trackerEntryAt(chunks, i).last = int64(i)
			}
			i := int64(0)
			for _, c := range chunks {
				for j := range c {
					if i < int64(n) {
						if got := c[j].last; got != i {
							t.Fatalf("%s: entry %d in memory order is entry %d", name, i, got)
						}
					}
					i++
				}
			}
		}
	}
}

// trackerOp is a step of a table test: an update (buckets < 0 for a float
// sample) or, when purge is set, a purge.
type trackerOp struct {
	series  int // index in the test's label sets
	hash    uint64
	buckets int
	now     int64
	purge   bool

	wantCreated bool
	wantPurged  int
	want        Counts // after the step
}

func TestTrackerUpdate(t *testing.T) {
	float := func(series int, hash uint64, now int64, created bool, want Counts) trackerOp {
		return trackerOp{series: series, hash: hash, buckets: -1, now: now, wantCreated: created, want: want}
	}
	hist := func(series int, hash uint64, buckets int, now int64, created bool, want Counts) trackerOp {
		return trackerOp{series: series, hash: hash, buckets: buckets, now: now, wantCreated: created, want: want}
	}
	purge := func(keepFrom int64, purged int, want Counts) trackerOp {
		return trackerOp{purge: true, now: keepFrom, wantPurged: purged, want: want}
	}
	c := func(series, hists, buckets int) Counts { return Counts{series, hists, buckets} }
	big := math.MaxInt // a variable, for 32-bit platforms
	for _, tc := range []struct {
		name string
		ops  []trackerOp
	}{
		{"empty purge", []trackerOp{purge(10, 0, c(0, 0, 0))}},
		{"one series", []trackerOp{
			float(0, 1, 5, true, c(1, 0, 0)),
			float(0, 1, 6, false, c(1, 0, 0)),
			purge(6, 0, c(1, 0, 0)), // seen at keepFrom: kept
			purge(7, 1, c(0, 0, 0)),
			float(0, 1, 7, true, c(1, 0, 0)),
		}},
		{"older time kept out", []trackerOp{
			float(0, 1, 10, true, c(1, 0, 0)),
			float(0, 1, 3, false, c(1, 0, 0)),
			purge(10, 0, c(1, 0, 0)),
		}},
		{"extreme times", []trackerOp{
			float(0, 1, math.MinInt64, true, c(1, 0, 0)),
			float(1, 2, math.MaxInt64, true, c(2, 0, 0)),
			purge(math.MinInt64, 0, c(2, 0, 0)),
			purge(math.MaxInt64, 1, c(1, 0, 0)),
			purge(math.MaxInt64, 0, c(1, 0, 0)),
		}},
		{"two hashes, one stripe", []trackerOp{
			float(0, 1<<32|7, 1, true, c(1, 0, 0)),
			float(1, 2<<32|7, 2, true, c(2, 0, 0)),
			purge(2, 1, c(1, 0, 0)),
			float(1, 2<<32|7, 2, false, c(1, 0, 0)),
			float(0, 1<<32|7, 3, true, c(2, 0, 0)),
		}},
		{"collision", []trackerOp{
			float(0, 42, 1, true, c(1, 0, 0)),
			float(1, 42, 2, true, c(2, 0, 0)),
			float(0, 42, 3, false, c(2, 0, 0)),
			purge(3, 1, c(1, 0, 0)),
			float(0, 42, 3, false, c(1, 0, 0)),
			float(1, 42, 3, true, c(2, 0, 0)),
		}},
		{"histograms", []trackerOp{
			hist(0, 1, 10, 1, true, c(1, 1, 10)),
			hist(0, 1, 12, 2, false, c(1, 1, 12)),
			hist(1, 2, 0, 2, true, c(2, 2, 12)),
			float(0, 1, 3, false, c(2, 1, 0)), // a float now
			hist(0, 1, 4, 3, false, c(2, 2, 4)),
			purge(3, 1, c(1, 1, 4)),
			hist(1, 2, big, 3, true, c(2, 2, 4+int(min(uint64(big), maxTrackedBuckets)))), // saturated
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets := trackerTestLabels(2)
			for _, stripes := range []int{1, 2, DefaultStripes} {
				tr := newTestTracker(t, Options{Stripes: stripes})
				for i, op := range tc.ops {
					if op.purge {
						if got := tr.Purge(op.now); got != op.wantPurged {
							t.Fatalf("stripes=%d, step %d: Purge(%d) = %d, want %d", stripes, i, op.now, got, op.wantPurged)
						}
					} else {
						var created bool
						if op.buckets < 0 {
							created = tr.Update(op.hash, sets[op.series], op.now)
						} else {
							created = tr.UpdateHistogram(op.hash, sets[op.series], op.buckets, op.now)
						}
						if created != op.wantCreated {
							t.Fatalf("stripes=%d, step %d: update of series %d = %v, want %v", stripes, i, op.series, created, op.wantCreated)
						}
					}
					var st Stats
					tr.UpdateStats(&st)
					if st.Counts != op.want || tr.Active() != op.want.Series {
						t.Fatalf("stripes=%d, step %d: counts %+v, Active() = %d, want %+v", stripes, i, st.Counts, tr.Active(), op.want)
					}
					tr.check(t)
				}
			}
		})
	}
}

func TestTrackerUpdateHistogramNegativePanics(t *testing.T) {
	tr := newTestTracker(t, Options{})
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "activeseries: ") {
			t.Fatalf("UpdateHistogram(buckets=-1) panicked with %v, want an \"activeseries: \" panic", r)
		}
	}()
	tr.UpdateHistogram(1, labels.FromStrings("a", "b"), -1, 0)
}

// TestTrackerCollisions forces many series onto one hash, and onto one
// high half of the hash (the index's tag) with different stripes, and
// checks that each is counted, found and purged on its own.
func TestTrackerCollisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		hash func(i int) uint64
	}{
		{"2 one hash", 2, func(int) uint64 { return 0xdeadbeef }},
		{"3 one hash", 3, func(int) uint64 { return 0xdeadbeef }},
		{"129 one hash", 129, func(int) uint64 { return 0xdeadbeef }},
		{"1000 one hash", 1000, func(int) uint64 { return 0 }},
		{"1000 one tag", 1000, func(i int) uint64 { return 7<<32 | uint64(i) }},
		{"1000 two hashes", 1000, func(i int) uint64 { return uint64(i % 2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets := trackerTestLabels(tc.n)
			for _, stripes := range []int{1, 16} {
				tr := newTestTracker(t, Options{Stripes: stripes})
				for i, ls := range sets {
					if !tr.Update(tc.hash(i), ls, int64(i%2)) {
						t.Fatalf("Update(series %d) = false, want true (new)", i)
					}
				}
				if got := tr.Active(); got != tc.n {
					t.Fatalf("Active() = %d, want %d", got, tc.n)
				}
				for i, ls := range sets {
					if tr.Update(tc.hash(i), ls, int64(i%2)) {
						t.Fatalf("second Update(series %d) = true, want false", i)
					}
				}
				tr.check(t)
				// Drop the even ones, seen at 0.
				if got, want := tr.Purge(1), (tc.n+1)/2; got != want {
					t.Fatalf("Purge(1) = %d, want %d", got, want)
				}
				tr.check(t)
				for i, ls := range sets {
					if got, want := tr.Update(tc.hash(i), ls, 1), i%2 == 0; got != want {
						t.Fatalf("Update(series %d) after purge = %v, want %v", i, got, want)
					}
				}
				tr.check(t)
				if got := tr.Active(); got != tc.n {
					t.Fatalf("Active() = %d, want %d", got, tc.n)
				}
			}
		})
	}
}

func TestTrackerCustom(t *testing.T) {
	tr := newTestTracker(t, Options{Stripes: 4, Custom: []CustomTracker{
		{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}},
		{Name: "not-b-even", Matchers: []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchNotEqual, "team", "b"),
			labels.MustNewMatcher(labels.MatchRegexp, "i", ".*[02468]"),
		}},
		{Name: "no-zone", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "zone", "")}},
		{Name: "none", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "z")}},
	}})
	sets := trackerTestLabels(12) // teams a b c a b c ...
	for i, ls := range sets {
		if i < 6 {
			tr.Update(ls.Hash(), ls, 1)
		} else {
			tr.UpdateHistogram(ls.Hash(), ls, i, 2)
		}
	}
	// team-a: 0 3 | 6 9; not-b-even: 0 2 | 6 8; histograms 6..11.
	want := Stats{
		Counts: Counts{12, 6, 6 + 7 + 8 + 9 + 10 + 11},
		Custom: []CustomTrackerCounts{
			{"team-a", Counts{4, 2, 6 + 9}},
			{"not-b-even", Counts{4, 2, 6 + 8}},
			{"no-zone", Counts{12, 6, 51}},
			{"none", Counts{}},
		},
	}
	got := Stats{Custom: make([]CustomTrackerCounts, 1, 8)}
	tr.UpdateStats(&got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateStats() = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		name   string
		want   int
		wantOK bool
	}{{"team-a", 4, true}, {"not-b-even", 4, true}, {"none", 0, true}, {"team-b", 0, false}, {"", 0, false}} {
		if n, ok := tr.ActiveCustom(tc.name); n != tc.want || ok != tc.wantOK {
			t.Errorf("ActiveCustom(%q) = %d, %v, want %d, %v", tc.name, n, ok, tc.want, tc.wantOK)
		}
	}
	// A bucket change reaches the custom trackers; the purge of the floats
	// takes their counts away. not-b-even: 0 2 | 6 8 (10 is team b).
	tr.UpdateHistogram(sets[6].Hash(), sets[6], 100, 2)
	tr.Purge(2)
	want = Stats{
		Counts: Counts{6, 6, 100 + 7 + 8 + 9 + 10 + 11},
		Custom: []CustomTrackerCounts{
			{"team-a", Counts{2, 2, 100 + 9}},
			{"not-b-even", Counts{2, 2, 100 + 8}},
			{"no-zone", Counts{6, 6, 145}},
			{"none", Counts{}},
		},
	}
	tr.UpdateStats(&got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateStats() after purge = %+v, want %+v", got, want)
	}
	tr.check(t)
}

// trackerModel is the reference the differential test compares a Tracker
// with: a map by the labels' string.
type trackerModel struct {
	series map[string]*trackerModelSeries
	custom []CustomTracker
}

type trackerModelSeries struct {
	last    int64
	buckets int // -1 for a float series
	custom  []bool
}

func (m *trackerModel) update(ls labels.Labels, buckets int, now int64) bool {
	key := ls.String()
	if s, ok := m.series[key]; ok {
		s.last = max(s.last, now)
		s.buckets = buckets
		return false
	}
	s := &trackerModelSeries{last: now, buckets: buckets}
	for _, c := range m.custom {
		ok := true
		for _, mt := range c.Matchers {
			ok = ok && mt.Matches(ls.Get(mt.Name))
		}
		s.custom = append(s.custom, ok)
	}
	m.series[key] = s
	return true
}

func (m *trackerModel) purge(keepFrom int64) int {
	n := 0
	for k, s := range m.series {
		if s.last < keepFrom {
			delete(m.series, k)
			n++
		}
	}
	return n
}

func (m *trackerModel) stats() Stats {
	var st Stats
	for _, c := range m.custom {
		st.Custom = append(st.Custom, CustomTrackerCounts{Name: c.Name})
	}
	add := func(c *Counts, s *trackerModelSeries) {
		c.Series++
		if s.buckets >= 0 {
			c.NativeHistograms++
			c.NativeHistogramBuckets += s.buckets
		}
	}
	for _, s := range m.series {
		add(&st.Counts, s)
		for i, ok := range s.custom {
			if ok {
				add(&st.Custom[i].Counts, s)
			}
		}
	}
	return st
}

// TestTrackerDifferential runs random updates and purges on a Tracker and
// on a map, with hashes that collide often, times out of order, and pools
// of series around the sizes where chunks and indexes grow, and compares
// every result.
func TestTrackerDifferential(t *testing.T) {
	custom := []CustomTracker{
		{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}},
		{Name: "i-ends-in-7", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "i", ".*7")}},
	}
	for _, tc := range []struct {
		stripes, pool, ops int
		collide            float64 // fraction of series on one of 3 shared hashes
	}{
		{1, 1, 200, 0},
		{1, 127, 3000, 0},
		{1, 128, 3000, 0.5},
		{1, 129, 3000, 0},
		{2, 1024, 20000, 0.05},
		{1, 5000, 60000, 0},
		{4, 5000, 60000, 0.01},
		{128, 5000, 30000, 0.5},
	} {
		t.Run(fmt.Sprintf("stripes=%d/pool=%d/collide=%v", tc.stripes, tc.pool, tc.collide), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.pool), uint64(tc.stripes)))
			sets := trackerTestLabels(tc.pool)
			hashes := make([]uint64, tc.pool)
			for i, ls := range sets {
				hashes[i] = ls.Hash()
				if r.Float64() < tc.collide {
					hashes[i] = uint64(r.IntN(3))
				}
			}
			tr := newTestTracker(t, Options{Stripes: tc.stripes, Custom: custom})
			m := &trackerModel{series: map[string]*trackerModelSeries{}, custom: custom}
			clock := int64(100)
			for step := range tc.ops {
				switch x := r.IntN(1000); {
				case x < 3: // purge, mostly a little, sometimes nearly all
					keepFrom := clock - int64(r.IntN(50))
					if r.IntN(4) == 0 {
						keepFrom = clock - 2
					}
					if got, want := tr.Purge(keepFrom), m.purge(keepFrom); got != want {
						t.Fatalf("step %d: Purge(%d) = %d, want %d", step, keepFrom, got, want)
					}
					tr.check(t)
				default:
					i := r.IntN(tc.pool)
					if r.IntN(2) == 0 {
						i = r.IntN(1 + tc.pool/10) // a hot set
					}
					now := clock - int64(r.IntN(5)) // a little out of order
					buckets := -1
					if x%7 == 0 {
						buckets = r.IntN(20)
					}
					var got bool
					if buckets < 0 {
						got = tr.Update(hashes[i], sets[i], now)
					} else {
						got = tr.UpdateHistogram(hashes[i], sets[i], buckets, now)
					}
					if want := m.update(sets[i], buckets, now); got != want {
						t.Fatalf("step %d: update of series %d = %v, want %v", step, i, got, want)
					}
					if r.IntN(10) == 0 {
						clock++
					}
				}
				if step%97 == 0 {
					var got Stats
					tr.UpdateStats(&got)
					if want := m.stats(); !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d: UpdateStats() = %+v, want %+v", step, got, want)
					}
				}
			}
			tr.check(t)
			var got Stats
			tr.UpdateStats(&got)
			if want := m.stats(); !reflect.DeepEqual(got, want) {
				t.Fatalf("UpdateStats() = %+v, want %+v", got, want)
			}
			// Purge everything: the stripes give their tables back.
			tr.Purge(math.MaxInt64)
			tr.check(t)
			for i := range tr.stripes {
				if s := &tr.stripes[i]; s.table.Load() != nil || s.used != 0 {
					t.Fatalf("stripe %d keeps its table, %d used, after purging all", i, s.used)
				}
			}
		})
	}
}

// TestTrackerCompact shrinks a stripe from 10k series to a few and checks
// that its tables shrink to the size of what is left, that it still finds
// its series, and that the entries of the old tables are dead, so that an
// update that found a series there before the purge looks again.
func TestTrackerCompact(t *testing.T) {
	for _, keep := range []int{0, 1, 100, 2500, 9999} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			const n = 10_000
			sets := trackerTestLabels(n)
			tr := newTestTracker(t, Options{Stripes: 1})
			for i, ls := range sets {
				tr.Update(ls.Hash(), ls, int64(i))
			}
			s := &tr.stripes[0]
			before := s.table.Load()
			last, _ := before.find(uint32(sets[n-1].Hash()>>32), sets[n-1])
			if got := tr.Purge(n - int64(keep)); got != n-keep {
				t.Fatalf("Purge() = %d, want %d", got, n-keep)
			}
			tr.check(t)
			if trackerTouch(last, n) {
				t.Fatalf("the entry of the last series in the tables before the purge is alive")
			}
			after := s.table.Load()
			switch {
			case keep == 0:
				if after != nil {
					t.Fatalf("a table of %d slots after dropping every series", len(after.index))
				}
			case uint64(len(after.index)) != trackerIndexLen(uint32(keep)) || trackerCapacity(trackerChunksIn(after.chunks)-1) >= uint32(keep):
				t.Fatalf("keeping %d of %d: %d slots and %d chunks, want %d slots and the fewest chunks",
					keep, n, len(after.index), trackerChunksIn(after.chunks), trackerIndexLen(uint32(keep)))
			}
			for i, ls := range sets {
				if got, want := tr.Update(ls.Hash(), ls, n), i < n-keep; got != want {
					t.Fatalf("Update(series %d) after purge = %v, want %v", i, got, want)
				}
			}
			tr.check(t)
			if tr.Active() != n {
				t.Fatalf("Active() = %d after adding the dropped series again, want %d", tr.Active(), n)
			}
		})
	}
}

// TestTrackerAllocs asserts the allocation contracts: none to update a
// tracked series, none to read the counts, amortised none for a new series
// and none for a purge in the steady state.
func TestTrackerAllocs(t *testing.T) {
	ls := labels.FromStrings("__name__", "up", "job", "api")
	custom := []CustomTracker{{Name: "api", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "job", "a.*")}}}
	tr := newTestTracker(t, Options{Custom: custom})
	const n = 10_000
	for i := range uint64(n) {
		tr.Update(trackerMix(i), ls, 1)
	}
	tr.UpdateHistogram(trackerMix(n), ls, 10, 1)
	byLabel := newTestTracker(t, Options{Custom: custom, ByLabel: "job"})
	for i := range uint64(n) {
		byLabel.Update(trackerMix(i), ls, 1)
	}
	byLabel.UpdateHistogram(trackerMix(n), ls, 10, 1)
	now := int64(2)
	st := Stats{Custom: make([]CustomTrackerCounts, 0, 1)}
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Update/existing", func() { tr.Update(trackerMix(uint64(now)%n), ls, now); now++ }},
		{"UpdateHistogram/existing", func() { tr.UpdateHistogram(trackerMix(n), ls, 10, now); now++ }},
		{"UpdateHistogram/buckets", func() { tr.UpdateHistogram(trackerMix(n), ls, int(now%50), now); now++ }},
		{"Active", func() { _ = tr.Active() }},
		{"ActiveCustom", func() { _, _ = tr.ActiveCustom("api") }},
		{"UpdateStats", func() { tr.UpdateStats(&st) }},
		// With counts by label value.
		{"ByLabel/Update/existing", func() { byLabel.Update(trackerMix(uint64(now)%n), ls, now); now++ }},
		{"ByLabel/UpdateHistogram/buckets", func() { byLabel.UpdateHistogram(trackerMix(n), ls, int(now%50), now); now++ }},
		{"ByLabel/UpdateStats", func() { byLabel.UpdateStats(&st) }},
	} {
		if got := testing.AllocsPerRun(1000, tc.f); got != 0 {
			t.Errorf("%s: %v allocations, want 0", tc.name, got)
		}
	}

	// New series: 1M of them with the default options, in batches of 10k
	// (AllocsPerRun rounds down to whole allocations per run). Each of the
	// 128 stripes allocates a chunk for every 16 of its first 1024 series
	// (0.008 a series here), then one for every 1024, and its index as it
	// grows.
	t.Run("Update/new", func(t *testing.T) {
		if testing.Short() || trackerRaceEnabled() {
			t.Skip("adds 1M series (20 times slower under the race detector)")
		}
		tr := newTestTracker(t, Options{Custom: custom})
		const batch = 10_000
		next := uint64(0)
		perBatch := testing.AllocsPerRun(99, func() {
			for range batch {
				tr.Update(trackerMix(next), ls, 1)
				next++
			}
		})
		perSeries := perBatch / batch
		t.Logf("Update of a new series: %.4f allocations, amortised over %d series", perSeries, next)
		if perSeries > 0.015 {
			t.Errorf("Update of a new series: %.4f allocations amortised, want at most 0.015", perSeries)
		}
	})

	// Purge: drop 4% and add them again. A purge allocates the new tables
	// of the stripes it drops series from, four objects each (the entries'
	// array, the chunks, the index and the table); the old ones are
	// garbage.
	t.Run("Purge", func(t *testing.T) {
		tr := newTestTracker(t, Options{})
		const n = 100_000
		for i := range uint64(n) {
			tr.Update(trackerMix(i), ls, 2)
		}
		got := testing.AllocsPerRun(10, func() {
			for i := range uint64(n / 25) {
				tr.Update(trackerMix(n+i), ls, 1)
			}
			if purged := tr.Purge(2); purged != n/25 {
				t.Fatalf("Purge(2) = %d, want %d", purged, n/25)
			}
		})
		// The updates before each purge grow some stripes by a chunk (1 or
		// 2 allocations each) and, rarely, an index.
		if want := float64(4 * len(tr.stripes)); got < want || got > 2*want {
			t.Errorf("adding 4%% of the series and purging them: %v allocations, want %v for the purge and at most %v for the updates", got, want, want)
		}
	})
}

// TestTrackerConcurrent runs writers, purges and readers at once, for the
// race detector: updates of tracked series, new series, histogram changes,
// collisions, purges that drop a few series or nearly all (and so shrink
// the stripes' tables), and reads of every count. Then it checks the
// tracker's invariants.
func TestTrackerConcurrent(t *testing.T) {
	sets := trackerTestLabels(4000)
	hashes := make([]uint64, len(sets))
	for i, ls := range sets {
		hashes[i] = ls.Hash()
		if i%10 == 0 {
			hashes[i] = uint64(i % 3) // collisions
		}
	}
	tr := newTestTracker(t, Options{Stripes: 2, Custom: []CustomTracker{
		{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}},
	}, ByLabel: "team", MaxLabelValues: 2}) // of 3 teams: one in the overflow
	const writers, updates = 4, 50_000
	var clock atomic.Int64
	clock.Store(100)
	latest := make([]atomic.Int64, len(sets)) // the latest time each series was given
	var maxKeepFrom atomic.Int64              // of the purges so far
	var writing, others sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		writing.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for j := range updates {
				i := r.IntN(len(sets))
				now := clock.Load() - int64(r.IntN(3))
				if j%5 == 0 {
					tr.UpdateHistogram(hashes[i], sets[i], r.IntN(10), now)
				} else {
					tr.Update(hashes[i], sets[i], now)
				}
				trackerAdvance(&latest[i], now)
				if j%100 == 0 {
					clock.Add(1)
				}
			}
		})
	}
	// Reloads cycle through custom trackers that keep, move, change, drop
	// and add some.
	teamA := CustomTracker{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}}
	reloads := [][]CustomTracker{
		{teamA, {Name: "seven", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "i", ".*7")}}},
		{{Name: "all"}, teamA},
		{{Name: "seven", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "i", "1.*")}}, teamA},
		{teamA},
	}
	others.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
				if err := tr.ReloadCustomTrackers(reloads[k%len(reloads)]); err != nil {
					t.Errorf("ReloadCustomTrackers = %v", err)
					return
				}
			}
		}
	})
	others.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
				keepFrom := clock.Load() - 20
				if k%10 == 9 {
					keepFrom = clock.Load() // nearly all
				}
				trackerAdvance(&maxKeepFrom, keepFrom)
				tr.Purge(keepFrom)
			}
		}
	})
	for range 2 {
		others.Go(func() {
			var st Stats
			for {
				select {
				case <-stop:
					return
				default:
					tr.UpdateStats(&st)
					n := tr.Active()
					a, _ := tr.ActiveCustom("team-a")
					if n < 0 || n > len(sets) || a < 0 || a > n+len(sets) || st.NativeHistograms < 0 || st.NativeHistogramBuckets < 0 {
						t.Errorf("counts out of range: Active() = %d, team-a %d, %+v", n, a, st.Counts)
						return
					}
				}
			}
		})
	}
	writing.Wait()
	close(stop)
	others.Wait()
	tr.check(t)
	// No update was lost: a series given a time at least every purge's
	// keepFrom is tracked, at the latest time it was given.
	kept := 0
	for i, ls := range sets {
		m := latest[i].Load()
		if m < maxKeepFrom.Load() {
			continue
		}
		kept++
		s := &tr.stripes[hashes[i]&tr.mask]
		var got int64 = math.MinInt64
		if tb := s.table.Load(); tb != nil {
			if e, _ := tb.find(uint32(hashes[i]>>32), ls); e != nil {
				got = e.last
			}
		}
		if got != m {
			t.Fatalf("series %d last updated at %d, not before any purge's keepFrom (at most %d): tracked at %d", i, m, maxKeepFrom.Load(), got)
		}
	}
	t.Logf("%d series updated at or after every purge's keepFrom, all tracked at their latest time", kept)
}

// trackerAdvance moves *v forward to now.
func trackerAdvance(v *atomic.Int64, now int64) {
	for {
		prev := v.Load()
		if prev >= now || v.CompareAndSwap(prev, now) {
			return
		}
	}
}

// TestTrackerMemoryPerSeries measures what a tracker retains per series,
// the labels being the TSDB's and not counted (all series share one label
// set here, each under its own hash), and compares it with the Cortex
// design. The doc of Tracker quotes it.
func TestTrackerMemoryPerSeries(t *testing.T) {
	if testing.Short() || trackerRaceEnabled() {
		t.Skip("adds 1M series (20 times slower under the race detector)")
	}
	ls := labels.FromStrings("__name__", "up", "job", "api")
	measure := func(n int, fill func() any) float64 {
		runtime.GC()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		keep := fill()
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
	}
	// The default build keeps 16-byte labels headers; slicelabels and
	// dedupelabels 24-byte ones, hence 8 more bytes per series.
	limit := 48.0 + float64(reflect.TypeFor[labels.Labels]().Size()-16)
	for _, tc := range []struct {
		impl string
		n    int
	}{
		{"ingestkit", 10_000},
		{"ingestkit", 100_000},
		{"ingestkit", 1_000_000},
		{"cortex", 1_000_000},
	} {
		perSeries := measure(tc.n, func() any {
			if tc.impl == "cortex" {
				c := newCortexTracker()
				for i := range uint64(tc.n) {
					c.UpdateSeries(ls, trackerMix(i), 1, false)
				}
				return c
			}
			tr := newTestTracker(t, Options{})
			for i := range uint64(tc.n) {
				tr.Update(trackerMix(i), ls, 1)
			}
			return tr
		})
		t.Logf("impl=%s: %.1f bytes per series at %d series (labels %d-byte headers)", tc.impl, perSeries, tc.n, reflect.TypeFor[labels.Labels]().Size())
		if tc.impl == "ingestkit" && tc.n == 1_000_000 && perSeries > limit {
			t.Errorf("impl=%s: %.1f bytes per series at %d series, want at most %.0f", tc.impl, perSeries, tc.n, limit)
		}
	}
}

// TestTrackerEmptyMatchers checks that a custom tracker without matchers
// counts every series, as Cortex's does. Before, New refused it.
func TestTrackerEmptyMatchers(t *testing.T) {
	tr := newTestTracker(t, Options{Custom: []CustomTracker{
		{Name: "all"},
		{Name: "all-too", Matchers: []*labels.Matcher{}},
		{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}},
	}})
	series := trackerTestLabels(10)
	for _, ls := range series {
		tr.Update(ls.Hash(), ls, 1)
	}
	for _, tc := range []struct {
		name string
		want int
	}{{"all", 10}, {"all-too", 10}, {"team-a", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := tr.ActiveCustom(tc.name); !ok || got != tc.want {
				t.Fatalf("ActiveCustom(%q) = %d, %v, want %d, true", tc.name, got, ok, tc.want)
			}
		})
	}
}

// TestTrackerZeroValue checks that a zero Tracker reads as empty and that
// an update or a reload of it panics with the package's name, not an index
// error.
func TestTrackerZeroValue(t *testing.T) {
	var tr Tracker
	if got := tr.Active(); got != 0 {
		t.Fatalf("Tracker{}.Active() = %d, want 0", got)
	}
	if got := tr.Purge(1); got != 0 {
		t.Fatalf("Tracker{}.Purge(1) = %d, want 0", got)
	}
	var s Stats
	tr.UpdateStats(&s)
	if s.Series != 0 || len(s.Custom) != 0 {
		t.Fatalf("Tracker{}.UpdateStats = %+v, want zero", s)
	}
	ls := labels.FromStrings("a", "b")
	for _, tc := range []struct {
		name   string
		update func()
	}{
		{"Update", func() { tr.Update(ls.Hash(), ls, 1) }},
		{"UpdateHistogram", func() { tr.UpdateHistogram(ls.Hash(), ls, 1, 1) }},
		{"ReloadCustomTrackers", func() { _ = tr.ReloadCustomTrackers(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "activeseries: ") {
					t.Fatalf("Tracker{}.%s panicked with %q, want a panic starting %q", tc.name, msg, "activeseries: ")
				}
			}()
			tc.update()
		})
	}
}

// TestTrackerReload checks that ReloadCustomTrackers counts the active
// series of new and changed custom trackers at once, keeps the counters of
// the unchanged ones, and changes nothing when the list is invalid.
func TestTrackerReload(t *testing.T) {
	eq := func(name, value string) []*labels.Matcher {
		return []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, name, value)}
	}
	teamA := CustomTracker{Name: "team-a", Matchers: eq("team", "a")}
	teamB := CustomTracker{Name: "team-b", Matchers: eq("team", "b")}
	seven := CustomTracker{Name: "seven", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "i", ".*7")}}
	many := make([]CustomTracker, MaxCustomTrackers+1)
	for i := range many {
		many[i] = CustomTracker{Name: fmt.Sprint(i), Matchers: eq("team", "c")}
	}
	series := trackerTestLabels(1000)
	for _, tc := range []struct {
		name    string
		custom  []CustomTracker
		kept    []string // custom trackers whose counters stay
		wantErr string
	}{
		{name: "same", custom: []CustomTracker{teamA, teamB, seven}, kept: []string{"team-a", "team-b", "seven"}},
		{name: "reordered", custom: []CustomTracker{seven, teamA, teamB}, kept: []string{"team-a", "team-b", "seven"}},
		{name: "one dropped", custom: []CustomTracker{teamA, seven}, kept: []string{"team-a", "seven"}},
		{name: "one added", custom: []CustomTracker{teamA, teamB, seven, {Name: "all"}}, kept: []string{"team-a", "team-b", "seven"}},
		{name: "one changed", custom: []CustomTracker{teamA, {Name: "team-b", Matchers: eq("team", "c")}, seven}, kept: []string{"team-a", "seven"}},
		{name: "renamed", custom: []CustomTracker{teamA, {Name: "b", Matchers: teamB.Matchers}, seven}, kept: []string{"team-a", "seven"}},
		{name: "none", custom: nil},
		{name: "32", custom: many[:32]},
		{name: "33", custom: many, wantErr: "33 custom trackers"},
		{name: "twice", custom: []CustomTracker{teamA, teamA}, wantErr: `"team-a" defined twice`},
		{name: "nil matcher", custom: []CustomTracker{{Name: "x", Matchers: []*labels.Matcher{nil}}}, wantErr: "nil matcher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestTracker(t, Options{Stripes: 4, Custom: []CustomTracker{teamA, teamB, seven}})
			for i, ls := range series {
				if i%4 == 0 {
					tr.UpdateHistogram(ls.Hash(), ls, i%7, 10)
				} else {
					tr.Update(ls.Hash(), ls, int64(i%3))
				}
			}
			tr.Purge(1) // drops a third of the float series
			prev := tr.custom.Load()
			err := tr.ReloadCustomTrackers(tc.custom)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReloadCustomTrackers(%s) = %v, want an ErrOptions about %q", tc.name, err, tc.wantErr)
				}
				if tr.custom.Load() != prev {
					t.Fatalf("ReloadCustomTrackers(%s) failed and changed the custom trackers", tc.name)
				}
				tr.check(t)
				return
			}
			if err != nil {
				t.Fatalf("ReloadCustomTrackers(%s) = %v, want no error", tc.name, err)
			}
			tr.check(t) // the masks match the new custom trackers, the counters count them
			cs := tr.custom.Load()
			if got, want := len(cs.custom), len(tc.custom); got != want {
				t.Fatalf("after ReloadCustomTrackers(%s), %d custom trackers, want %d", tc.name, got, want)
			}
			for _, name := range tc.kept {
				if cs.counts[cs.names[name]] != prev.counts[prev.names[name]] {
					t.Fatalf("ReloadCustomTrackers(%s) replaced the counters of %q, want them kept", tc.name, name)
				}
			}
			var st Stats
			tr.UpdateStats(&st)
			for i, c := range st.Custom {
				want := 0
				for _, ls := range series {
					if tr.stripes[ls.Hash()&tr.mask].table.Load() == nil {
						continue
					}
					if e, _ := tr.stripes[ls.Hash()&tr.mask].table.Load().find(uint32(ls.Hash()>>32), ls); e != nil && matchesAll(tc.custom[i].Matchers, ls) {
						want++
					}
				}
				if c.Name != tc.custom[i].Name || c.Series != want {
					t.Fatalf("after ReloadCustomTrackers(%s), Custom[%d] = %s %d series, want %s %d", tc.name, i, c.Name, c.Series, tc.custom[i].Name, want)
				}
			}
			// Updates and purges go on with the new custom trackers.
			for _, ls := range series {
				tr.Update(ls.Hash(), ls, 20)
			}
			tr.Purge(15)
			tr.check(t)
		})
	}
}

// TestTrackerByLabel checks the counts by label value against the rules
// of Options.MaxLabelValues, step by step.
func TestTrackerByLabel(t *testing.T) {
	tr := newTestTracker(t, Options{Stripes: 4, ByLabel: "team", MaxLabelValues: 2})
	type step struct {
		name      string
		update    []string // values of team of new series, "-" for none
		histogram bool     // the updates are of native histograms of 3 buckets
		want      string   // Stats.Values and Overflow, as value=series/histograms/buckets
	}
	n := 0
	now := int64(10)
	update := func(team string, histogram bool) {
		ls := labels.FromStrings("__name__", "m", "i", fmt.Sprint(n), "team", team)
		if team == "-" {
			ls = labels.FromStrings("__name__", "m", "i", fmt.Sprint(n))
		}
		n++
		if histogram {
			tr.UpdateHistogram(ls.Hash(), ls, 3, now)
		} else {
			tr.Update(ls.Hash(), ls, now)
		}
	}
	for _, st := range []step{
		{name: "empty", want: "overflow=0/0/0"},
		{name: "two values", update: []string{"a", "b", "a"}, want: "a=2/0/0 b=1/0/0 overflow=0/0/0"},
		{name: "a third overflows", update: []string{"c", "c"}, want: "a=2/0/0 b=1/0/0 overflow=2/0/0"},
		{name: "histograms", update: []string{"a", "c"}, histogram: true, want: "a=3/1/3 b=1/0/0 overflow=3/1/3"},
	} {
		t.Run(st.name, func(t *testing.T) {
			for _, v := range st.update {
				update(v, st.histogram)
			}
			if got := byLabelString(tr); got != st.want {
				t.Fatalf("Stats = %s, want %s", got, st.want)
			}
			tr.check(t)
		})
	}

	// The series of b go idle: b loses its place, but the overflow holds
	// series, so a new value d joins it rather than taking b's place. The
	// histograms, updated as floats, count as floats.
	now = 20
	for _, ls := range trackerByLabelSeries(tr) {
		if v := ls.Get("team"); v != "b" {
			tr.Update(ls.Hash(), ls, now)
		}
	}
	tr.Purge(15)
	update("d", false)
	if got, want := byLabelString(tr), "a=3/0/0 overflow=4/0/0"; got != want {
		t.Fatalf("after b went and d came, Stats = %s, want %s", got, want)
	}
	tr.check(t)

	// The overflow drains (c and d go idle): the next new value, e, takes
	// the free place; OverflowValue itself counts in the overflow, and so,
	// the places all taken, do a series without the label and f. Once all
	// go idle, the empty value of a series without the label takes a
	// place.
	now = 30
	for _, ls := range trackerByLabelSeries(tr) {
		if v := ls.Get("team"); v == "a" {
			tr.Update(ls.Hash(), ls, now)
		}
	}
	tr.Purge(25)
	if got, want := byLabelString(tr), "a=3/0/0 overflow=0/0/0"; got != want {
		t.Fatalf("after the overflow drained, Stats = %s, want %s", got, want)
	}
	update("e", false)
	update(OverflowValue, false)
	update("-", false)
	update("f", false)
	if got, want := byLabelString(tr), "a=3/0/0 e=1/0/0 overflow=3/0/0"; got != want {
		t.Fatalf("after e, no team, and f, Stats = %s, want %s", got, want)
	}
	tr.check(t)
	now = 40
	tr.Purge(35)
	update("-", false)
	if got, want := byLabelString(tr), "=1/0/0 overflow=0/0/0"; got != want {
		t.Fatalf("after a purge of all and a series without the label, Stats = %s, want %s", got, want)
	}
	tr.check(t)
}

// byLabelString returns t's Stats.Values and Overflow as
// value=series/histograms/buckets, in order.
func byLabelString(t *Tracker) string {
	var st Stats
	t.UpdateStats(&st)
	var b strings.Builder
	for _, v := range st.Values {
		fmt.Fprintf(&b, "%s=%d/%d/%d ", v.Value, v.Series, v.NativeHistograms, v.NativeHistogramBuckets)
	}
	fmt.Fprintf(&b, "overflow=%d/%d/%d", st.Overflow.Series, st.Overflow.NativeHistograms, st.Overflow.NativeHistogramBuckets)
	return b.String()
}

// trackerByLabelSeries returns the labels of the series t tracks.
func trackerByLabelSeries(t *Tracker) []labels.Labels {
	var out []labels.Labels
	for i := range t.stripes {
		tb := t.stripes[i].table.Load()
		if tb == nil {
			continue
		}
		for j := range t.stripes[i].used {
			out = append(out, trackerEntryAt(tb.chunks, j).lset)
		}
	}
	return out
}
