package exemplars

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/internal/promcompat"
)

var (
	seriesFoo = labels.FromStrings("trace_id", "foo")
	seriesBar = labels.FromStrings("trace_id", "bar")
	matchAll  = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "trace_id", ".*")}
)

// ex is an exemplar of series foo (its own labels, as in upstream's tests).
func ex(v float64, ts int64) exemplar.Exemplar {
	return exemplar.Exemplar{Labels: seriesFoo, Value: v, Ts: ts}
}

// selectFlat returns everything es holds from Select, flattened.
func selectFlat(t *testing.T, es storage.ExemplarQuerier) []exemplar.Exemplar {
	t.Helper()
	res, err := es.Select(math.MinInt64, math.MaxInt64, matchAll)
	if err != nil {
		t.Fatal(err)
	}
	var all []exemplar.Exemplar
	for _, r := range res {
		all = append(all, r.Exemplars...)
	}
	return all
}

// TestAddExemplar covers the cases of upstream's
// TestCircularExemplarStorage_AddExemplar and a few more, on the ring and
// on upstream, and checks both against the expected exemplars, with an
// out-of-order window of 100 (the ring's only, before v0.310.0, whose
// storage has no window). Before v0.310.0 the cases that take an exemplar
// within the window check the ring alone, and that the storage rejects
// an add as out of order.
func TestAddExemplar(t *testing.T) {
	tests := []struct {
		name    string
		size    int64
		adds    []exemplar.Exemplar
		wantErr error // of the last add
		want    []exemplar.Exemplar
		late    bool // an add is out of order within the window
	}{
		{"empty ring", 0, []exemplar.Exemplar{ex(1, 1)}, storage.ErrExemplarsDisabled, nil, false},
		{"one", 1, []exemplar.Exemplar{ex(1, 1)}, nil, []exemplar.Exemplar{ex(1, 1)}, false},
		{"after newest", 3, []exemplar.Exemplar{ex(1, 1), ex(2, 2)}, nil, []exemplar.Exemplar{ex(1, 1), ex(2, 2)}, false},
		{"before oldest", 3, []exemplar.Exemplar{ex(1, 2), ex(2, 1)}, nil, []exemplar.Exemplar{ex(2, 1), ex(1, 2)}, true},
		{"in between", 3, []exemplar.Exemplar{ex(1, 1), ex(2, 3), ex(3, 2)}, nil, []exemplar.Exemplar{ex(1, 1), ex(3, 2), ex(2, 3)}, true},
		{"after newest, full", 3, []exemplar.Exemplar{ex(1, 1), ex(2, 2), ex(3, 3), ex(4, 4)}, nil, []exemplar.Exemplar{ex(2, 2), ex(3, 3), ex(4, 4)}, false},
		{"before oldest, full", 3, []exemplar.Exemplar{ex(1, 1), ex(2, 2), ex(3, 3), ex(4, 0)}, nil, []exemplar.Exemplar{ex(4, 0), ex(2, 2), ex(3, 3)}, true},
		{"in between, full", 3, []exemplar.Exemplar{ex(1, 1), ex(2, 3), ex(3, 4), ex(4, 2)}, nil, []exemplar.Exemplar{ex(4, 2), ex(2, 3), ex(3, 4)}, true},
		{"dropped one was the place", 3, []exemplar.Exemplar{ex(2, 2), ex(1, 1), ex(5, 5), ex(3, 3)}, nil, []exemplar.Exemplar{ex(1, 1), ex(3, 3), ex(5, 5)}, true},
		{"beyond the window", 3, []exemplar.Exemplar{ex(1, 200), ex(2, 1)}, storage.ErrOutOfOrderExemplar, []exemplar.Exemplar{ex(1, 200)}, false},
		{"at the window's edge", 3, []exemplar.Exemplar{ex(1, 200), ex(2, 100)}, storage.ErrOutOfOrderExemplar, []exemplar.Exemplar{ex(1, 200)}, false},
		{"just inside the window", 3, []exemplar.Exemplar{ex(1, 200), ex(2, 101)}, nil, []exemplar.Exemplar{ex(2, 101), ex(1, 200)}, true},
		{"duplicate of newest", 3, []exemplar.Exemplar{ex(1, 3), ex(1, 3)}, nil, []exemplar.Exemplar{ex(1, 3)}, false},
		{"duplicate when full", 3, []exemplar.Exemplar{ex(1, 3), ex(2, 4), ex(3, 5), ex(3, 5)}, nil, []exemplar.Exemplar{ex(1, 3), ex(2, 4), ex(3, 5)}, false},
		{"equal timestamps, larger value", 3, []exemplar.Exemplar{ex(1, 0), ex(2, 0)}, nil, []exemplar.Exemplar{ex(1, 0), ex(2, 0)}, false},
		{"equal timestamps, smaller value", 3, []exemplar.Exemplar{ex(2, 0), ex(1, 0)}, storage.ErrOutOfOrderExemplar, []exemplar.Exemplar{ex(2, 0)}, false},
		{"out of order at a stored timestamp", 6, []exemplar.Exemplar{ex(1, 1), ex(2, 2), ex(3, 3), ex(9, 2)}, nil, []exemplar.Exemplar{ex(1, 1), ex(2, 2), ex(3, 3)}, true},
		{"too long", 3, []exemplar.Exemplar{{Labels: labels.FromStrings("a", string(make([]byte, 128)))}}, storage.ErrExemplarLabelLength, nil, false},
		{"repeated name", 3, []exemplar.Exemplar{{Labels: labels.FromStrings("a", "1", "a", "2")}}, tsdb.ErrInvalidExemplar, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ring := New(tt.size, Options{OutOfOrderTimeWindow: 100})
			up := newUpstream(t, tt.size, comparableWindow(100))
			if tt.late && !promcompat.ExemplarsOutOfOrder() {
				var err error
				upRejected := false
				for _, e := range tt.adds {
					err = ring.AddExemplar(seriesFoo, e)
					upRejected = upRejected || up.AddExemplar(seriesFoo, e) == storage.ErrOutOfOrderExemplar
				}
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("AddExemplar = %v, want %v", err, tt.wantErr)
				}
				if got := selectFlat(t, ring); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Select = %v, want %v", got, tt.want)
				}
				if !upRejected {
					t.Errorf("Prometheus's storage without a window rejected no add as out of order: the case needs no window, mark it so")
				}
				t.Log("the ring alone: Prometheus's storage has no out-of-order window before v0.310.0, and rejects the late exemplar")
				return
			}
			var err, upErr error
			for _, e := range tt.adds {
				err, upErr = ring.AddExemplar(seriesFoo, e), up.AddExemplar(seriesFoo, e)
			}
			if !errors.Is(err, tt.wantErr) || !sameError(err, upErr) {
				t.Errorf("AddExemplar = %v, want %v (upstream %v)", err, tt.wantErr, upErr)
			}
			if got, upGot := selectFlat(t, ring), selectFlat(t, up); !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(upGot, tt.want) {
				t.Errorf("Select = %v, want %v (upstream %v)", got, tt.want, upGot)
			}
		})
	}
}

// TestUpstreamSameTimestampQuirk documents a case where Prometheus's
// storage, and so the ring, rejects an exemplar that is not out of order
// in any useful sense: the same exemplar re-sent at the same timestamp
// after one with a larger value. Equal timestamps are ordered by value
// (then by the hash of the exemplar labels) so that duplicates can be
// found without walking the series; the re-sent exemplar sorts before
// the newest, and is rejected with storage.ErrOutOfOrderExemplar, and
// counted as such, rather than ignored as the duplicate it is. Upstream's
// own BenchmarkAddExemplar_OutOfOrder fails on it when it re-adds its
// sequence. The ring stays compatible. (Before v0.310.0, whose storage has
// no out-of-order window, the ring's window is its own, and the older
// exemplars at the end are checked on the ring alone.)
func TestUpstreamSameTimestampQuirk(t *testing.T) {
	ring := New(10, Options{OutOfOrderTimeWindow: 1000})
	up := newUpstream(t, 10, comparableWindow(1000))
	for _, e := range []exemplar.Exemplar{ex(1, 100), ex(2, 100)} {
		if err, upErr := ring.AddExemplar(seriesFoo, e), up.AddExemplar(seriesFoo, e); err != nil || upErr != nil {
			t.Fatalf("AddExemplar(%v) = %v (upstream %v), want nil", e, err, upErr)
		}
	}
	// The first one again: already stored, yet out of order.
	again := ex(1, 100)
	err, upErr := ring.AddExemplar(seriesFoo, again), up.AddExemplar(seriesFoo, again)
	if err != storage.ErrOutOfOrderExemplar || upErr != storage.ErrOutOfOrderExemplar {
		t.Errorf("AddExemplar(%v) again = %v (upstream %v), want %v", again, err, upErr, storage.ErrOutOfOrderExemplar)
	}
	if got := ring.Stats().OutOfOrder; got != 1 {
		t.Errorf("Stats().OutOfOrder = %d, want 1", got)
	}
	// One timestamp older, the same exemplar is ignored as a duplicate of a
	// stored one: out of order, but at a stored timestamp.
	older := ex(7, 100)
	older.Ts = 99
	if !promcompat.ExemplarsOutOfOrder() {
		t.Log("the older exemplars on the ring alone: Prometheus's storage has no out-of-order window before v0.310.0")
	}
	for _, e := range []exemplar.Exemplar{older, older} {
		if err := ring.AddExemplar(seriesFoo, e); err != nil {
			t.Errorf("AddExemplar(%v) = %v, want nil", e, err)
		}
		if promcompat.ExemplarsOutOfOrder() {
			if upErr := up.AddExemplar(seriesFoo, e); upErr != nil {
				t.Errorf("upstream AddExemplar(%v) = %v, want nil", e, upErr)
			}
		}
	}
	want := []exemplar.Exemplar{older, ex(1, 100), ex(2, 100)}
	if got := selectFlat(t, ring); !reflect.DeepEqual(got, want) {
		t.Errorf("Select = %v, want %v", got, want)
	}
	if promcompat.ExemplarsOutOfOrder() {
		if got := selectFlat(t, up); !reflect.DeepEqual(got, want) {
			t.Errorf("upstream Select = %v, want %v", got, want)
		}
	}
}

// TestValidateExemplar checks the errors of ValidateExemplar, which are
// AddExemplar's, plus storage.ErrDuplicateExemplar, and that it changes
// nothing.
func TestValidateExemplar(t *testing.T) {
	ring := New(2, Options{})
	up := newUpstream(t, 2, 0)
	e1 := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "qwerty"), Value: 0.1, Ts: 1}
	e2 := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "zxcvb"), Value: 0.1, Ts: 2}
	for _, e := range []exemplar.Exemplar{e1, e2} {
		if err := ring.AddExemplar(seriesBar, e); err != nil {
			t.Fatal(err)
		}
		if err := up.AddExemplar(seriesBar, e); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		e    exemplar.Exemplar
		want error
	}{
		{"newer", exemplar.Exemplar{Labels: e2.Labels, Value: 0.2, Ts: 3}, nil},
		{"duplicate", e2, storage.ErrDuplicateExemplar},
		{"duplicate at another time, without timestamps", exemplar.Exemplar{Labels: e2.Labels, Value: 0.1, Ts: 3}, storage.ErrDuplicateExemplar},
		{"older", exemplar.Exemplar{Labels: e2.Labels, Value: 0.3, Ts: 1}, storage.ErrOutOfOrderExemplar},
		{"128 characters", exemplar.Exemplar{Labels: labels.FromStrings("a", string(make([]byte, 127))), Ts: 5}, nil},
		{"129 characters", exemplar.Exemplar{Labels: labels.FromStrings("a", string(make([]byte, 128))), Ts: 5}, storage.ErrExemplarLabelLength},
		{"repeated name", exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "a", "trace_id", "b"), Ts: 5}, tsdb.ErrInvalidExemplar},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, upGot := ring.ValidateExemplar(seriesBar, tt.e), up.ValidateExemplar(seriesBar, tt.e)
			if !errors.Is(got, tt.want) || !sameError(got, upGot) || (tt.want == nil) != (got == nil) {
				t.Errorf("ValidateExemplar(%v) = %v, want %v (upstream %v)", tt.e, got, tt.want, upGot)
			}
		})
	}
	if got := ring.Stats(); got.Exemplars != 2 || got.OutOfOrder != 0 {
		t.Errorf("after ValidateExemplar, Stats() = %+v, want 2 exemplars and no out-of-order count", got)
	}
}

// TestResize resizes rings of every fill and layout to every size around
// theirs, and compares with upstream; then checks which resizes allocate.
func TestResize(t *testing.T) {
	for _, size := range []int64{0, 1, 2, 3, 5, 8} {
		for fill := range 2*size + 2 {
			for _, to := range []int64{-1, 0, 1, 2, size - 1, size, size + 1, 2 * size, 3*size + 1} {
				name := fmt.Sprintf("size=%d/fill=%d/to=%d", size, fill, to)
				ring, up := New(size, Options{}), newUpstream(t, size, 0)
				for i := range fill {
					s := labels.FromStrings("service", strconv.Itoa(int(i%3)))
					e := exemplar.Exemplar{Value: float64(i), Ts: i}
					if err, upErr := ring.AddExemplar(s, e), up.AddExemplar(s, e); !sameError(err, upErr) {
						t.Fatalf("%s: AddExemplar = %v, want %v", name, err, upErr)
					}
				}
				if got, want := ring.Resize(to), up.Resize(to); got != want {
					t.Errorf("%s: Resize = %d, want %d", name, got, want)
				}
				// Then more, to see that evictions go on in the same order.
				for i := range 2*size + 1 {
					s := labels.FromStrings("service", strconv.Itoa(int(i%2)))
					e := exemplar.Exemplar{Value: float64(i), Ts: 100 + i}
					if err, upErr := ring.AddExemplar(s, e), up.AddExemplar(s, e); !sameError(err, upErr) {
						t.Fatalf("%s: AddExemplar = %v, want %v", name, err, upErr)
					}
					if got, want := iterateAll(t, ring), iterateAll(t, up); !sameResults(got, want) {
						t.Fatalf("%s: IterateExemplars = %v, want %v", name, got, want)
					}
				}
			}
		}
	}
}

// mallocs returns the number of allocations and bytes f makes.
func mallocs(f func()) (n, bytes uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// TestResizeAllocations checks what Resize allocates: nothing to shrink,
// or to grow within the memory a shrink kept; to grow beyond it, two
// allocations, of the slots it adds and of their labels, never a new
// ring, except for the grow that would make more than maxSegs segments,
// which allocates the two of the new size.
func TestResizeAllocations(t *testing.T) {
	slotSize := uint64(reflect.TypeFor[slot]().Size() + reflect.TypeFor[labels.Labels]().Size())
	const page = 8192 // large allocations are rounded up to pages
	type step struct {
		to            int64
		allocs        uint64
		slots         uint64 // what the allocations hold, if any
		wantExemplars int
	}
	tests := []struct {
		from, fill int // a ring of from slots, filled with fill exemplars
		steps      []step
	}{
		{1000, 1500, []step{
			{500, 0, 0, 500},     // shrink in place
			{900, 0, 0, 500},     // grow within the memory kept
			{1000, 0, 0, 500},    // back to the first size
			{4000, 2, 3000, 500}, // beyond: the slots added
			{0, 0, 0, 0},         // to zero, releasing everything
			{10, 2, 10, 0},       // and back
		}},
		// Wrapped at 5,000: the grow moves the oldest 5,000 exemplars to
		// the end, into the slots it adds; the shrink cuts the first
		// segment and drops the second.
		{10000, 15000, []step{{20000, 2, 10000, 10000}, {6000, 0, 0, 6000}}},
		// Seven grows make eight segments; the eighth copies the ring into
		// one.
		{100, 150, []step{
			{110, 2, 10, 100}, {120, 2, 10, 100}, {130, 2, 10, 100}, {140, 2, 10, 100},
			{150, 2, 10, 100}, {160, 2, 10, 100}, {170, 2, 10, 100}, {180, 2, 180, 100},
		}},
	}
	mallocs(func() {}) // the first measurement counts the runtime's own
	for _, tt := range tests {
		// ringBefore returns a ring filled and resized by the steps before
		// step k.
		ringBefore := func(k int) *Ring {
			ring := New(int64(tt.from), Options{})
			for i := range tt.fill {
				if err := ring.AddExemplar(labels.FromStrings("service", strconv.Itoa(i/100)), exemplar.Exemplar{Value: float64(i), Ts: int64(i)}); err != nil {
					t.Fatal(err)
				}
			}
			for _, st := range tt.steps[:k] {
				ring.Resize(st.to)
			}
			return ring
		}
		for k, st := range tt.steps {
			minB := st.slots * slotSize
			maxB := minB + minB/8 + page // size classes
			// The counts are the process's: another goroutine may allocate
			// meanwhile, and under -race one often does (5 of 24 runs of
			// this test failed so). That only adds, and Resize
			// allocates the same every time, so a step that shows more is
			// measured again, on a ring made anew.
			var ring *Ring
			var kept int
			var n, b uint64
			for range 5 {
				ring = ringBefore(k)
				n, b = mallocs(func() { kept = ring.Resize(st.to) })
				if n == st.allocs && b >= minB && b <= maxB {
					break
				}
			}
			if n != st.allocs || b < minB || b > maxB {
				t.Errorf("%d to %d: Resize(%d) made %d allocations of %d bytes, want %d of %d to %d", tt.from, st.to, st.to, n, b, st.allocs, minB, maxB)
			}
			if got := ring.Stats().Exemplars; got != st.wantExemplars {
				t.Errorf("after Resize(%d) = %d, Stats().Exemplars = %d, want %d", st.to, kept, got, st.wantExemplars)
			}
			if st.to == 0 && (ring.segs != nil || ring.first != nil || ring.firstLabels != nil || ring.series != nil || ring.index.slots != nil) {
				t.Errorf("after Resize(0), the ring keeps %d segments, %d series entries and an index", len(ring.segs), cap(ring.series))
			}
			total := 0
			for _, sg := range ring.segs {
				if len(sg.labels) != len(sg.slots) {
					t.Errorf("after Resize(%d), a segment of %d slots has %d labels", st.to, len(sg.slots), len(sg.labels))
				}
				total += len(sg.slots)
			}
			if total != int(max(st.to, 0)) || len(ring.segs) > maxSegs {
				t.Errorf("after Resize(%d), %d segments of %d slots in all", st.to, len(ring.segs), total)
			}
		}
	}
}

// TestSizes pins the memory per exemplar and per series: 48 and 48 bytes
// in the default stringlabels build, where labels.Labels is 16 bytes, and
// 56 and 56 where it is 24 (slicelabels and dedupelabels). An exemplar is
// a 32-byte slot and its labels beside it.
func TestSizes(t *testing.T) {
	labelsSize := reflect.TypeFor[labels.Labels]().Size()
	want := map[uintptr]uintptr{16: 48, 24: 56}[labelsSize]
	if want == 0 {
		t.Fatalf("labels.Labels is %d bytes, not a known build", labelsSize)
	}
	if got := reflect.TypeFor[slot]().Size(); got != 32 {
		t.Errorf("slot is %d bytes, want 32", got)
	}
	if got := reflect.TypeFor[slot]().Size() + labelsSize; got != want {
		t.Errorf("an exemplar takes %d bytes, want %d", got, want)
	}
	if got := reflect.TypeFor[seriesEntry]().Size(); got != want {
		t.Errorf("seriesEntry is %d bytes, want %d", got, want)
	}
}

// TestSlotsHoldNoPointers checks that a slot holds no pointer, so that
// the garbage collector never reads the slots of a ring: the labels, the
// one field that refers to memory, are kept in a parallel array.
func TestSlotsHoldNoPointers(t *testing.T) {
	typ := reflect.TypeFor[slot]()
	for i := range typ.NumField() {
		switch f := typ.Field(i); f.Type.Kind() {
		case reflect.Bool, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Float64:
		default:
			t.Errorf("slot.%s is a %s, which may hold a pointer", f.Name, f.Type)
		}
	}
}

// TestAllocations checks the allocation contracts: adding to a known
// series, validating and reading stats make none; Select makes two.
func TestAllocations(t *testing.T) {
	ring := New(1000, Options{OutOfOrderTimeWindow: 1000})
	series := make([]labels.Labels, 10)
	for i := range series {
		series[i] = labels.FromStrings("service", strconv.Itoa(i))
	}
	el := labels.FromStrings("trace_id", "abc")
	ts := int64(0)
	for range 2000 {
		ts++
		if err := ring.AddExemplar(series[ts%10], exemplar.Exemplar{Labels: el, Ts: ts}); err != nil {
			t.Fatal(err)
		}
	}
	hash := series[3].Hash()
	var st Stats
	m := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "service", "3")}
	tests := []struct {
		name string
		want float64
		f    func()
	}{
		{"AddExemplar", 0, func() {
			ts++
			_ = ring.AddExemplar(series[ts%10], exemplar.Exemplar{Labels: el, Ts: ts})
		}},
		{"AddExemplarHash", 0, func() { ts++; _ = ring.AddExemplarHash(hash, series[3], exemplar.Exemplar{Labels: el, Ts: ts}) }},
		{"AddExemplar out of order", 0, func() {
			ts++
			_ = ring.AddExemplar(series[3], exemplar.Exemplar{Labels: el, Ts: ts - 50, Value: float64(ts)})
		}},
		{"ValidateExemplar", 0, func() { _ = ring.ValidateExemplar(series[3], exemplar.Exemplar{Labels: el, Ts: ts + 1}) }},
		{"UpdateStats", 0, func() { ring.UpdateStats(&st) }},
		{"Select", 2, func() { _, _ = ring.Select(0, ts, m) }},
	}
	for _, tt := range tests {
		if tt.name == "Select" && raceEnabled {
			continue // its scratch comes from a sync.Pool
		}
		if got := testing.AllocsPerRun(100, tt.f); got != tt.want {
			t.Errorf("%s: %v allocations, want %v", tt.name, got, tt.want)
		}
	}
}

// TestOrder checks order's inserts and removes against slices.Insert and
// slices.Delete, across respacing and growth.
func TestOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	o := &order{}
	o.respace(1)
	var ref []int32
	for step := range 20000 {
		if len(ref) > 0 && (r.IntN(2) == 0 || len(ref) > 500) {
			i := r.IntN(len(ref))
			o.remove(i)
			ref = slices.Delete(ref, i, i+1)
		} else {
			i := []int{0, len(ref), r.IntN(len(ref) + 1)}[r.IntN(3)]
			o.insert(i, int32(step))
			ref = slices.Insert(ref, i, int32(step))
		}
		if got := o.buf[o.lo:o.hi]; !slices.Equal(got, ref) {
			t.Fatalf("step %d: order = %v, want %v", step, got, ref)
		}
	}
}

// TestOrderEqualTimestamps checks that a series keeps its order right
// when an exemplar is dropped from inside a run of equal timestamps.
func TestOrderEqualTimestamps(t *testing.T) {
	ring := New(200, Options{OutOfOrderTimeWindow: 1 << 20})
	for i := range 150 {
		if err := ring.AddExemplar(seriesFoo, ex(float64(i), 1000+int64(i)/10)); err != nil {
			t.Fatal(err)
		}
	}
	id := ring.lookup(seriesFoo.Hash(), seriesFoo)
	s := &ring.series[id]
	ring.buildOrder(s)
	list := func() []int32 {
		var l []int32
		for i := s.oldest; i != none; i = ring.at(i).next {
			l = append(l, i)
		}
		return l
	}
	for _, drop := range []int32{57, 50, 59, 0, 149, 100, 101} {
		if ring.unlink(ring.at(drop), drop) {
			t.Fatal("series emptied")
		}
		if got, want := s.order.buf[s.order.lo:s.order.hi], list(); !slices.Equal(got, want) {
			t.Fatalf("after dropping slot %d, order = %v, want %v", drop, got, want)
		}
	}
	// Dropping down to a few exemplars drops the order.
	for i := range int32(150) {
		if ring.at(i).series != 0 && s.n > 1 {
			ring.unlink(ring.at(i), i)
		}
	}
	if s.order != nil || ring.orders != 0 {
		t.Errorf("order kept at %d exemplars (%d orders)", s.n, ring.orders)
	}
}

// TestConcurrent runs every method at once, for the race detector, and
// checks that the ring is consistent afterwards.
func TestConcurrent(t *testing.T) {
	ring := New(500, Options{OutOfOrderTimeWindow: 50})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for i := range 5000 {
				s := labels.FromStrings("service", strconv.Itoa(r.IntN(20)))
				e := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", strconv.Itoa(i)), Ts: int64(i) - int64(r.IntN(100))}
				switch r.IntN(10) {
				case 0:
					_ = ring.ValidateExemplar(s, e)
				default:
					_ = ring.AddExemplar(s, e)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			ring.Resize([]int64{500, 300, 0, 100}[i%4])
			ring.SetOutOfOrderTimeWindow(int64(i % 100))
		}
	})
	wg.Go(func() {
		for range 200 {
			if _, err := ring.Select(0, math.MaxInt64, matchAll, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "service", "1.*")}); err != nil {
				t.Error(err)
			}
			_ = ring.IterateExemplars(func(labels.Labels, exemplar.Exemplar) error { return nil })
			_ = ring.Stats()
		}
	})
	wg.Wait()

	st := ring.Stats()
	n := 0
	_ = ring.IterateExemplars(func(labels.Labels, exemplar.Exemplar) error { n++; return nil })
	res, _ := ring.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{})
	m := 0
	for _, r := range res {
		m += len(r.Exemplars)
	}
	if n != st.Exemplars || m != st.Exemplars || len(res) != st.Series || st.Exemplars > st.Size {
		t.Errorf("Stats() = %+v, IterateExemplars saw %d, Select %d in %d series", st, n, m, len(res))
	}
}

// TestIterateExemplarsError checks that IterateExemplars stops at, and
// returns, its function's first error.
func TestIterateExemplarsError(t *testing.T) {
	ring := New(5, Options{})
	for i := range int64(4) {
		if err := ring.AddExemplar(seriesFoo, ex(float64(i), i)); err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := ring.IterateExemplars(func(_ labels.Labels, e exemplar.Exemplar) error {
		calls++
		if e.Ts == 1 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 2 {
		t.Errorf("IterateExemplars = %v after %d calls, want %v after 2", err, calls, stop)
	}
}

// TestQueriers checks the methods by which Prometheus reaches the storage.
func TestQueriers(t *testing.T) {
	ring := New(3, Options{})
	if err := ring.AddExemplar(seriesFoo, ex(1, 1)); err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func(context.Context) (storage.ExemplarQuerier, error){
		"ExemplarQuerier": ring.ExemplarQuerier,
		"Querier":         ring.Querier,
	} {
		q, err := get(context.Background())
		if err != nil || q != storage.ExemplarQuerier(ring) {
			t.Errorf("%s = %v, %v; want the ring", name, q, err)
		}
	}
}

// TestClampSize checks the sizes New and Resize take.
func TestClampSize(t *testing.T) {
	for _, tt := range []struct {
		in   int64
		want int
	}{{math.MinInt64, 0}, {-1, 0}, {0, 0}, {1, 1}, {MaxSize, MaxSize}, {MaxSize + 1, MaxSize}, {math.MaxInt64, MaxSize}} {
		if got := clampSize(tt.in); got != tt.want {
			t.Errorf("clampSize(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestUpstreamOutOfOrderPatterns replays the 18 sequences of upstream's
// BenchmarkAddExemplar_OutOfOrder (three fills of a ring of 5,000 times
// six orders of 5,000 adds), twice each as the benchmark's loop does, on
// the ring and on upstream, and requires the same error for every add and
// the same contents after each pass. In 4 of the 18 the second pass meets
// the same-timestamp quirk (TestUpstreamSameTimestampQuirk) and upstream's
// benchmark fails; here both fail alike, and the test counts them.
func TestUpstreamOutOfOrderPatterns(t *testing.T) {
	if raceEnabled {
		t.Skip("sequential: the race detector would add only time")
	}
	if !promcompat.ExemplarsOutOfOrder() {
		t.Skip("Prometheus's storage has no out-of-order window before v0.310.0, nor this benchmark: these sequences are of v0.310.0 on (TestOlderPrometheus shows the difference)")
	}
	const capacity = 5000
	exLabels := labels.FromStrings("trace_id", "89620921")
	fills := map[string]func(add func(labels.Labels, exemplar.Exemplar) error){
		"empty": func(func(labels.Labels, exemplar.Exemplar) error) {},
		"full-one": func(add func(labels.Labels, exemplar.Exemplar) error) {
			for i := range capacity {
				_ = add(exLabels, exemplar.Exemplar{Value: float64(i), Ts: int64(i), Labels: exLabels})
			}
		},
		"full-multiple": func(add func(labels.Labels, exemplar.Exemplar) error) {
			for i := range capacity {
				l := labels.FromStrings("service", strconv.Itoa(i))
				_ = add(l, exemplar.Exemplar{Value: float64(i), Ts: int64(i), Labels: l})
			}
		},
	}
	outOfOrder := func(ts *int64, _ *labels.Labels) {
		switch *ts % 3 {
		case 1:
			*ts = capacity - *ts
		case 2:
			*ts = capacity - *ts + 100
		}
	}
	reverse := func(ts *int64, _ *labels.Labels) { *ts = capacity - *ts }
	multi := func(f func(*int64, *labels.Labels)) func(*int64, *labels.Labels) {
		return func(ts *int64, l *labels.Labels) {
			f(ts, l)
			*l = labels.FromStrings("service", strconv.Itoa(int(*ts)))
		}
	}
	orders := map[string]func(*int64, *labels.Labels){
		"in-order":           func(*int64, *labels.Labels) {},
		"reverse":            reverse,
		"out-of-order":       outOfOrder,
		"multi-in-order":     multi(func(*int64, *labels.Labels) {}),
		"multi-reverse":      multi(reverse),
		"multi-out-of-order": multi(outOfOrder),
	}
	failing := 0
	for fillName, fill := range fills {
		for orderName, order := range orders {
			name := fillName + "/" + orderName
			ring, up := New(capacity, Options{OutOfOrderTimeWindow: 100000}), newUpstream(t, capacity, 100000)
			fill(ring.AddExemplar)
			fill(up.AddExemplar)
			failed := false
			l := labels.FromStrings("service", "0")
			for pass := range 2 {
				for i := range capacity {
					ts := int64(i)
					order(&ts, &l)
					e := exemplar.Exemplar{Value: float64(i), Ts: ts, Labels: l}
					err, upErr := ring.AddExemplar(l, e), up.AddExemplar(l, e)
					if !sameError(err, upErr) {
						t.Fatalf("%s: pass %d, add %d: AddExemplar(%s, %v) = %v, want %v", name, pass, i, l, e, err, upErr)
					}
					failed = failed || err != nil
				}
				if got, want := iterateAll(t, ring), iterateAll(t, up); !sameResults(got, want) {
					t.Fatalf("%s: after pass %d, IterateExemplars differs", name, pass)
				}
			}
			if failed {
				failing++
			}
		}
	}
	if failing != 4 {
		t.Errorf("%d of 18 sequences failed on both, want the 4 that fail upstream's benchmark", failing)
	}
}

// TestSelectShares checks that Select returns the same whichever way it
// copies, always by walks (share 0), always by a pass (MaxSize) or as
// scanShare chooses, as upstream's Select, on series whose lists are in
// arrival order and on series that took exemplars out of order (before
// v0.310.0, whose storage has no out-of-order window, the window is zero,
// and those series are in arrival order too).
func TestSelectShares(t *testing.T) {
	const size = 200
	window := comparableWindow(50)
	if window != 50 {
		t.Logf("Prometheus's storage has no out-of-order window before v0.310.0: a window of %d, and lists in arrival order only", window)
	}
	ring, up := New(size, Options{OutOfOrderTimeWindow: window}), newUpstream(t, size, window)
	src := rand.New(rand.NewPCG(1, 2))
	for i := range 3 * size {
		lset := labels.FromStrings("service", strconv.Itoa(i%20))
		ts := int64(i)
		if i%20 < 5 { // these series take exemplars out of order
			ts -= int64(src.IntN(40))
		}
		e := exemplar.Exemplar{Labels: seriesFoo, Value: float64(i), Ts: ts}
		if err, upErr := ring.AddExemplar(lset, e), up.AddExemplar(lset, e); !sameError(err, upErr) {
			t.Fatalf("AddExemplar(%v, %v) = %v, want %v", lset, e, err, upErr)
		}
	}
	for _, tt := range []struct {
		name       string
		start, end int64
		m          *labels.Matcher
	}{
		{"one series", 0, 3 * size, labels.MustNewMatcher(labels.MatchEqual, "service", "3")},
		{"a tenth", 0, 3 * size, labels.MustNewMatcher(labels.MatchRegexp, "service", "1[0-9]")},
		{"all", 0, 3 * size, labels.MustNewMatcher(labels.MatchRegexp, "service", ".+")},
		{"all, recent", 3*size - 30, 3 * size, labels.MustNewMatcher(labels.MatchRegexp, "service", ".+")},
	} {
		ms := [][]*labels.Matcher{{tt.m}}
		want, err := up.Select(tt.start, tt.end, ms...)
		if err != nil {
			t.Fatal(err)
		}
		for _, share := range []int{0, 1, scanShare, MaxSize} {
			t.Run(fmt.Sprintf("%s/share=%d", tt.name, share), func(t *testing.T) {
				got, err := ring.selectShare(share, tt.start, tt.end, ms)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("selectShare(%d, %d, %d, %v) = %v, %v, want %v", share, tt.start, tt.end, tt.m, got, err, want)
				}
			})
		}
	}
}
