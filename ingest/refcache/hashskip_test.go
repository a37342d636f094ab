package refcache_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/ingest/refcache"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// countingBuilder is a HashedBuilder that counts the calls of its Hash.
type countingBuilder struct {
	*iklabels.HashedBuilder
	hashes int
}

func (b *countingBuilder) Hash() uint64 {
	b.hashes++
	return b.HashedBuilder.Hash()
}

// hashSkipSets returns n label sets, and a HashedBuilder holding each.
func hashSkipSets(n int) ([]labels.Labels, []*countingBuilder) {
	sets := make([]labels.Labels, n)
	bs := make([]*countingBuilder, n)
	for i := range sets {
		sets[i] = labels.FromStrings("__name__", "up", "instance", fmt.Sprintf("host-%d:9100", i), "job", "node")
		b := &countingBuilder{HashedBuilder: new(iklabels.HashedBuilder)}
		sets[i].Range(func(l labels.Label) { b.AddString(l.Name, l.Value) })
		bs[i] = b
	}
	return sets, bs
}

// TestGuessHitSkipsHash: a series found as the guess of the one before is
// confirmed by its labels, without a call of its Hash, and its handle still
// has the hash of its labels; a series whose guess fails is hashed once.
// Lookup and LookupBatch alike.
func TestGuessHitSkipsHash(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			const n = 100
			head := newTestHead(t)
			cache := refcache.New(refcache.Options{})
			sets, bs := hashSkipSets(n)
			// round looks up the series in order, appends a sample to each
			// and commits, and returns the handles and stats.
			round := func(order []int, ts int64) ([]refcache.Handle, refcache.AppenderStats) {
				t.Helper()
				a := refcache.NewAppenderV2(context.Background(), head, cache, ts)
				series := make([]refcache.SeriesLabels, len(order))
				for k, i := range order {
					series[k] = bs[i]
				}
				hs := make([]refcache.Handle, len(order))
				errs := make([]error, len(order))
				lookupAll(a, batch, series, hs, errs)
				for k, i := range order {
					if errs[k] != nil {
						t.Fatalf("lookup of %s: %v", sets[i], errs[k])
					}
					if got, want := hs[k].Hash(), sets[i].Hash(); got != want {
						t.Fatalf("Handle.Hash() of %s = %#x, want %#x", sets[i], got, want)
					}
					if !labels.Equal(hs[k].Labels(), sets[i]) {
						t.Fatalf("Handle.Labels() = %s, want %s", hs[k].Labels(), sets[i])
					}
					if err := a.Append(&hs[k], 0, ts, float64(i), nil, nil, storage.AOptions{}); err != nil {
						t.Fatalf("Append(%s): %v", sets[i], err)
					}
				}
				st := a.Stats()
				if err := a.Commit(); err != nil {
					t.Fatal(err)
				}
				return hs, st
			}
			hashes := func() int {
				sum := 0
				for _, b := range bs {
					sum += b.hashes
					b.hashes = 0
				}
				return sum
			}
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			first, _ := round(order, 1000) // all new
			if batch {
				// LookupBatch learns the guesses after new series in the
				// next request.
				round(order, 1500)
			}
			hashes()
			hs, st := round(order, 2000)
			if want := (refcache.AppenderStats{CacheHits: n, Guessed: n - 1}); st != want {
				t.Fatalf("same order: Stats() = %+v, want %+v", st, want)
			}
			// Only the first series, which has no series before it.
			if got := hashes(); got != 1 {
				t.Fatalf("same order: %d calls of Hash, want 1", got)
			}
			for k := range hs {
				if hs[k].Ref() != first[k].Ref() || !hs[k].Cached() {
					t.Fatalf("same order: series %d has ref %d (cached %v), want %d", k, hs[k].Ref(), hs[k].Cached(), first[k].Ref())
				}
			}
			// Two series swapped: the series whose guesses fail are hashed,
			// and so may be the ones found by the index after them, which
			// take the lookups back to the guesses.
			swapped := slices.Clone(order)
			swapped[10], swapped[20] = swapped[20], swapped[10]
			_, st = round(swapped, 3000)
			if st.CacheHits != n || st.Guessed >= n-1 {
				t.Fatalf("swapped: Stats() = %+v, want %d hits, some guesses failed", st, n)
			}
			if got, least := hashes(), n-st.Guessed; got < least || got > n {
				t.Fatalf("swapped: %d calls of Hash with %d guesses held, want %d to %d", got, st.Guessed, least, n)
			}
			// The same order again: its guesses were learnt.
			_, st = round(swapped, 4000)
			if want := (refcache.AppenderStats{CacheHits: n, Guessed: n - 1}); st != want {
				t.Fatalf("swapped again: Stats() = %+v, want %+v", st, want)
			}
			if got := hashes(); got != 1 {
				t.Fatalf("swapped again: %d calls of Hash, want 1", got)
			}
		})
	}
}
