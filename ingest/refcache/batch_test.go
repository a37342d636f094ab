package refcache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// brokenSeries is a series whose labels could not be decoded.
type brokenSeries struct{ err error }

func (s brokenSeries) Err() error               { return s.err }
func (s brokenSeries) Hash() uint64             { panic("Hash of an invalid series") }
func (s brokenSeries) Equal(labels.Labels) bool { panic("Equal of an invalid series") }
func (s brokenSeries) Labels() labels.Labels    { panic("Labels of an invalid series") }

// lookupResult is what a lookup returned for one series, as a test
// compares it.
type lookupResult struct {
	ref    storage.SeriesRef
	lset   string
	cached bool
	err    string
}

func resultOf(h Handle, err error) lookupResult {
	r := lookupResult{ref: h.Ref(), lset: h.Labels().String(), cached: h.Cached()}
	if err != nil {
		r.err = err.Error()
	}
	return r
}

// TestAppenderLookupBatch is a differential test of LookupBatch against
// Lookup: two heads and two caches get the same rounds of requests, one
// through Lookup series by series, the other through LookupBatch, in orders
// that repeat, shuffle, cut into fragments and reverse, with series that
// collide, are invalid, are purged from the cache, or are new mid-way; the
// handles, errors, stats and the heads' samples must be the same.
func TestAppenderLookupBatch(t *testing.T) {
	type twin struct {
		head  storage.AppendableV2
		q     func() map[string][]fsample
		cache *Cache
	}
	newTwin := func() twin {
		h := newHead(t)
		return twin{head: h, q: func() map[string][]fsample { return queryHead(t, h) }, cache: New(Options{Stripes: 4})}
	}
	seq, bat := newTwin(), newTwin()

	const n = 300 // several chunks, the last one partial
	sets := seriesSet(n + 40)
	var series []SeriesLabels
	for i, ls := range sets[:n] {
		s := newPairSeries(ls)
		if i%50 < 3 { // runs of three that collide
			s.forcedHash = uint64(1000 + i/50)
		}
		series = append(series, s)
	}
	for i := range 5 {
		series = slices.Insert(series, 37*i+11, SeriesLabels(brokenSeries{fmt.Errorf("bad series %d", i)}))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	fragments := func(in []SeriesLabels) []SeriesLabels {
		var frags [][]SeriesLabels
		for i := 0; i < len(in); {
			l := min(1+rng.IntN(20), len(in)-i)
			frags = append(frags, in[i:i+l])
			i += l
		}
		rng.Shuffle(len(frags), func(x, y int) { frags[x], frags[y] = frags[y], frags[x] })
		return slices.Concat(frags...)
	}
	shuffled := func(in []SeriesLabels) []SeriesLabels {
		out := slices.Clone(in)
		rng.Shuffle(len(out), func(x, y int) { out[x], out[y] = out[y], out[x] })
		return out
	}
	reversed := func(in []SeriesLabels) []SeriesLabels {
		out := slices.Clone(in)
		slices.Reverse(out)
		return out
	}
	same := func(in []SeriesLabels) []SeriesLabels { return in }

	prevStores := -1
	for round, step := range []struct {
		name   string
		order  func([]SeriesLabels) []SeriesLabels
		before func() // on both caches, before the round
	}{
		{name: "first", order: same},
		{name: "same", order: same},
		{name: "same-again", order: same},
		{name: "shuffled", order: shuffled},
		{name: "shuffled-again", order: shuffled},
		{name: "fragments", order: fragments},
		{name: "fragments-again", order: fragments},
		{name: "purged", order: same, before: func() {
			seq.cache.Purge(1 << 62)
			bat.cache.Purge(1 << 62)
		}},
		{name: "reversed", order: reversed},
		{name: "reversed-again", order: reversed},
		{name: "new-series", order: shuffled, before: func() {
			for _, ls := range sets[n:] {
				series = slices.Insert(series, rng.IntN(len(series)), SeriesLabels(newPairSeries(ls)))
			}
		}},
		{name: "fragments-after-new", order: fragments},
		{name: "same-after-new", order: same},
		{name: "same-after-new-again", order: same},
	} {
		if step.before != nil {
			step.before()
		}
		req := step.order(series)
		ts := int64(1000 * (round + 1))
		ctx := context.Background()

		a := NewAppenderV2(ctx, seq.head, seq.cache, ts)
		var want []lookupResult
		for i, s := range req {
			h, err := a.Lookup(s)
			want = append(want, resultOf(h, err))
			if err == nil {
				if err := a.Append(&h, 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
					t.Fatalf("round %s: Append: %v", step.name, err)
				}
			}
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}

		b := NewAppenderV2(ctx, bat.head, bat.cache, ts)
		hs := make([]Handle, len(req))
		errs := make([]error, len(req))
		b.LookupBatch(req, hs, errs)
		var got []lookupResult
		for i := range req {
			got = append(got, resultOf(hs[i], errs[i]))
			if errs[i] == nil {
				if err := b.Append(&hs[i], 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
					t.Fatalf("round %s: Append: %v", step.name, err)
				}
			} else if !errors.Is(errs[i], ErrInvalidSeries) {
				t.Fatalf("round %s: LookupBatch error %v, want ErrInvalidSeries", step.name, errs[i])
			}
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %s: LookupBatch of series %d = %+v, want Lookup's %+v", step.name, i, got[i], want[i])
			}
		}
		sw, sb := a.Stats(), b.Stats()
		// The guesses of series after new ones are learnt a request later
		// by a batch (see LookupBatch); compare them after a round without
		// stores, when both caches' guesses are those of its order.
		if prevStores != 0 {
			sb.Guessed = sw.Guessed
		}
		if sb != sw {
			t.Fatalf("round %s: Stats() after LookupBatch = %+v, want Lookup's %+v", step.name, sb, sw)
		}
		prevStores = sw.CacheStores
		t.Logf("round %s: %+v", step.name, sw)
	}
	if got, want := bat.q(), seq.q(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("samples after LookupBatch differ from those after Lookup")
	}
}

// TestAppenderLookupBatchAllocs: a batch of cached series, in an order
// whose guesses hold or in one where none does, makes no allocation.
func TestAppenderLookupBatchAllocs(t *testing.T) {
	head := newHead(t)
	cache := New(Options{})
	sets := seriesSet(200)
	series := make([]SeriesLabels, len(sets))
	for i, ls := range sets {
		series[i] = newPairSeries(ls)
	}
	appendRound(t, head, cache, series, 1000)
	shuffled := slices.Clone(series)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(shuffled), func(x, y int) { shuffled[x], shuffled[y] = shuffled[y], shuffled[x] })
	a := NewAppenderV2(context.Background(), head, cache, 2000)
	defer a.Rollback()
	hs := make([]Handle, len(series))
	errs := make([]error, len(series))
	for _, tc := range []struct {
		name  string
		order []SeriesLabels
	}{{"same", series}, {"shuffled", shuffled}} {
		if got := testing.AllocsPerRun(50, func() { a.LookupBatch(tc.order, hs, errs) }); got != 0 {
			t.Errorf("LookupBatch of %d cached series, %s order: AllocsPerRun = %v, want 0", len(tc.order), tc.name, got)
		}
	}
}

func TestAppenderLookupBatchPanics(t *testing.T) {
	head := newHead(t)
	a := NewAppenderV2(context.Background(), head, New(Options{}), 0)
	defer a.Rollback()
	defer func() {
		if recover() == nil {
			t.Fatalf("LookupBatch with fewer handles than series did not panic")
		}
	}()
	a.LookupBatch(make([]SeriesLabels, 2), make([]Handle, 1), make([]error, 2))
}
