package activeseries

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

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

// TestTrackerSharedData checks that label sets whose data share memory
// are told apart under one hash: in the stringlabels build, DropReserved
// returns a prefix of ls's data, at the same address, so a shortcut that
// confirmed a series by its labels' address alone, without their length,
// would take the one for the other.
func TestTrackerSharedData(t *testing.T) {
	ls := labels.FromStrings("A", "1", "__name__", "up")
	prefix := ls.DropReserved(func(n string) bool { return n == "__name__" })
	tr := newTestTracker(t, Options{Stripes: 1})
	for i, tc := range []struct {
		ls   labels.Labels
		want bool
	}{{ls, true}, {prefix, true}, {ls, false}, {prefix, false}} {
		if got := tr.Update(1, tc.ls, int64(i)); got != tc.want {
			t.Fatalf("update %d: Update(1, %s, %d) = %v, want %v", i, tc.ls, i, got, tc.want)
		}
	}
	if got := tr.Active(); got != 2 {
		t.Fatalf("Active() = %d after updating %s and %s under one hash, want 2", got, ls, prefix)
	}
	tr.check(t)
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
