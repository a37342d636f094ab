package refcache

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// orderSample is one sample of a test request: the series (an index in
// the test's label sets, or -1 for a series that cannot be decoded), its
// timestamp and value.
type orderSample struct {
	series int
	t      int64
	v      float64
}

// TestAppenderAppendOrder is a differential test of appending in
// AppendOrder's order against appending in request order: two tsdb.DBs and
// two caches get the same requests, one through Lookup and Append sample by
// sample in request order, the other through LookupBatch over the whole
// request and Append in AppendOrder's order, its errors kept by index.
// The requests are shuffled and carry series new to the TSDB (some twice),
// series that cannot be decoded, and several samples of one series in
// order, out of order, at one timestamp with another value or the same, and
// too old for the head, both within the request (which the head's Commit
// drops) and against what it holds (which Append rejects). The errors, in request order, must be the same, and
// so must what the DBs hold, queried before and after a restart that
// replays their WALs.
func TestAppenderAppendOrder(t *testing.T) {
	type twin struct {
		dir   string
		db    *tsdb.DB
		cache *Cache
	}
	open := func(dir string) *tsdb.DB {
		db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
		if err != nil {
			t.Fatalf("tsdb.Open: %v", err)
		}
		return db
	}
	newTwin := func() *twin {
		dir := t.TempDir()
		return &twin{dir: dir, db: open(dir), cache: New(Options{Stripes: 4})}
	}
	seq, ord := newTwin(), newTwin()
	defer func() { _ = seq.db.Close(); _ = ord.db.Close() }()

	const base = int64(100_000_000)
	sets := seriesSet(400)
	rng := rand.New(rand.NewPCG(5, 6))
	known := 0 // sets[:known] have been sent
	for round := range 8 {
		ts := base + int64(round)*15_000
		var req []orderSample
		n := known + 30 + rng.IntN(40) // series new to the TSDB in every round
		if round == 7 {
			n = known // the last one has none: every handle has a ref
		}
		for i := range min(n, len(sets)) {
			if rng.IntN(5) == 0 && i < known {
				continue // not in this request
			}
			req = append(req, orderSample{i, ts, float64(round*1000 + i)})
			switch rng.IntN(14) {
			case 0: // a later sample: accepted
				req = append(req, orderSample{i, ts + 1, 1})
			case 1: // an earlier one: out of order
				req = append(req, orderSample{i, ts - 1, 2})
			case 2: // the same timestamp, another value: a duplicate
				req = append(req, orderSample{i, ts, 3})
			case 3: // the same sample again: dropped silently
				req = append(req, orderSample{i, ts, float64(round*1000 + i)})
			case 4: // too old for the head
				req = append(req, orderSample{i, 0, 4})
			case 5: // three in order
				req = append(req, orderSample{i, ts + 2, 5}, orderSample{i, ts + 3, 6})
			case 6: // before what the head holds: out of order
				req = append(req, orderSample{i, base - 1, 7})
			case 7: // at the last round's timestamp, another value: a
				// duplicate if the series was in it, else out of order
				req = append(req, orderSample{i, ts - 15_000, 8})
			}
		}
		for range 3 {
			req = append(req, orderSample{-1, ts, 0})
		}
		known = max(known, min(n, len(sets)))
		rng.Shuffle(len(req), func(x, y int) { req[x], req[y] = req[y], req[x] })

		series := func() []SeriesLabels {
			out := make([]SeriesLabels, len(req))
			for i, s := range req {
				if s.series < 0 {
					out[i] = brokenSeries{fmt.Errorf("bad series at %d", i)}
				} else {
					out[i] = newPairSeries(sets[s.series])
				}
			}
			return out
		}

		want := make([]string, len(req))
		a := NewAppenderV2(context.Background(), seq.db, seq.cache, ts)
		for i, s := range series() {
			h, err := a.Lookup(s)
			if err == nil {
				err = a.Append(&h, 0, req[i].t, req[i].v, nil, nil, storage.AOptions{})
			}
			want[i] = fmt.Sprint(err)
		}
		if err := a.Commit(); err != nil {
			t.Fatalf("round %d: request order: Commit: %v", round, err)
		}

		got := make([]string, len(req))
		b := NewAppenderV2(context.Background(), ord.db, ord.cache, ts)
		hs, errs := make([]Handle, len(req)), make([]error, len(req))
		b.LookupBatch(series(), hs, errs)
		order := b.AppendOrder(hs)
		if len(order) != len(req) {
			t.Fatalf("round %d: AppendOrder returned %d indices, want %d", round, len(order), len(req))
		}
		for k, i := range order {
			if k > 0 && hs[i].Ref() != 0 {
				if p := order[k-1]; hs[p].Ref() > hs[i].Ref() || hs[p].Ref() == hs[i].Ref() && p > i {
					t.Fatalf("round %d: AppendOrder puts %d (ref %d) after %d (ref %d)", round, i, hs[i].Ref(), p, hs[p].Ref())
				}
			}
			if errs[i] == nil {
				errs[i] = b.Append(&hs[i], 0, req[i].t, req[i].v, nil, nil, storage.AOptions{})
			}
		}
		for i, err := range errs {
			got[i] = fmt.Sprint(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatalf("round %d: AppendOrder: Commit: %v", round, err)
		}
		if !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("round %d: error of sample %d (%+v) = %s, want %s (request order)", round, i, req[i], got[i], want[i])
				}
			}
		}
		if round == 0 && !slices.ContainsFunc(want, func(e string) bool { return e != "<nil>" }) {
			t.Fatalf("round 0: no sample rejected: the test checks no error")
		}
	}

	query := func(db *tsdb.DB) map[string][]fsample {
		q, err := db.Querier(math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatalf("Querier: %v", err)
		}
		return queryAll(t, q)
	}
	compare := func(what string) map[string][]fsample {
		w, g := query(seq.db), query(ord.db)
		if len(w) != known {
			t.Fatalf("%s: %d series in request order, want %d", what, len(w), known)
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("%s: AppendOrder's DB holds\n%v\nrequest order's\n%v", what, g, w)
		}
		return w
	}
	before := compare("before restart")
	for _, tw := range []*twin{seq, ord} {
		if err := tw.db.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		tw.db = open(tw.dir)
	}
	if after := compare("after WAL replay"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after WAL replay the DBs hold\n%v\nbefore\n%v", after, before)
	}
}

// TestAppendOrder checks AppendOrder's order on handles with refs far
// apart (the sort by comparison) and near (the radix sort), with repeated
// refs and handles without one.
func TestAppendOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		refs []storage.SeriesRef
		want []int
	}{
		{"empty", nil, []int{}},
		{"one new", []storage.SeriesRef{0}, []int{0}},
		{"one", []storage.SeriesRef{7}, []int{0}},
		{"same ref", []storage.SeriesRef{5, 5, 5}, []int{0, 1, 2}},
		{"in order", []storage.SeriesRef{1, 0, 2, 2, 5, 0, 9}, []int{0, 2, 3, 4, 6, 1, 5}},
		{"in order but the last", []storage.SeriesRef{1, 0, 2, 2, 5, 0, 4}, []int{0, 2, 3, 6, 4, 1, 5}},
		{"near", []storage.SeriesRef{3, 0, 1, 3, 2, 0, 1}, []int{2, 6, 4, 0, 3, 1, 5}},
		{"bytes apart", []storage.SeriesRef{70000, 1, 0, 256, 255, 65536, 1}, []int{1, 6, 4, 3, 5, 0, 2}},
		{"far apart", []storage.SeriesRef{1 << 40, 0, 1, 1<<40 + 1, 1 << 33, 1}, []int{2, 5, 4, 0, 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := make([]Handle, len(tc.refs))
			for i, ref := range tc.refs {
				hs[i].ref = ref
			}
			a := &AppenderV2{}
			if got := a.AppendOrder(hs); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("AppendOrder(%v) = %v, want %v", tc.refs, got, tc.want)
			}
		})
	}
	// Many refs in a random order, against a stable sort.
	rng := rand.New(rand.NewPCG(7, 8))
	hs := make([]Handle, 5000)
	for i := range hs {
		if rng.IntN(10) > 0 {
			hs[i].ref = storage.SeriesRef(1 + rng.IntN(100_000))
		}
	}
	want := make([]int, len(hs))
	for i := range want {
		want[i] = i
	}
	slices.SortStableFunc(want, func(x, y int) int {
		rx, ry := hs[x].ref-1, hs[y].ref-1 // ref 0 last
		switch {
		case rx < ry:
			return -1
		case rx > ry:
			return 1
		}
		return 0
	})
	a := &Appender{}
	if got := a.AppendOrder(hs); !slices.Equal(got, want) {
		t.Fatalf("AppendOrder of %d random refs differs from a stable sort", len(hs))
	}
}

// TestAppendOrderAllocs checks AppendOrder's allocation contract: none once
// the appender has ordered as many handles, in order already or by either
// sort.
func TestAppendOrderAllocs(t *testing.T) {
	for _, tc := range []struct {
		step storage.SeriesRef
		mult int // 1: the refs in order; else in an order of their own
	}{{1, 1}, {1, 7919}, {1 << 33, 7919}} {
		step := tc.step
		hs := make([]Handle, 1000)
		for i := range hs {
			if i%7 > 0 {
				hs[i].ref = storage.SeriesRef(1+(i*tc.mult)%len(hs)) * step
			}
		}
		a := &AppenderV2{}
		a.AppendOrder(hs)
		if n := testing.AllocsPerRun(20, func() { a.AppendOrder(hs) }); n != 0 {
			t.Fatalf("AppendOrder of %d handles, refs %d apart (x%d): %v allocations, want 0", len(hs), step, tc.mult, n)
		}
	}
}
