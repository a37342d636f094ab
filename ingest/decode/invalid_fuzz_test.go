package decode

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// FuzzInvalidSeries decodes arbitrary 2.0 requests and resolves their series
// with the appenders of package ingest/refcache. For every series with
// an error (Series.Err) it first makes the pairs decoded before the bad
// reference a real series, in the head and in the cache, with the valid
// series of the request beside them; then it resolves the request again
// through an AppenderV2 and an Appender and checks that each errored
// series is refused with ErrInvalidSeries (wrapping ErrSymbolRef) and a
// zero Handle, and matches none of those series. Before Lookup checked
// Err and Series answered as a series of no labels, Lookup accepted the
// errored series of every seed in testdata/fuzz/FuzzInvalidSeries; in
// partial-then-out-of-range it equals, by its hash and pairs, the series
// {__name__="up"} the first pass cached.
func FuzzInvalidSeries(f *testing.F) {
	decFuzzSeeds(f, v2Msg)
	head := newInvalidHead(f)
	cache := refcache.New(refcache.Options{Stripes: 4})
	ctx := context.Background()
	ts := int64(0)
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		if d.Reset(b, v2Msg) != nil {
			return
		}
		defer d.Reset(nil, v2Msg)
		ts++
		a := refcache.NewAppenderV2(ctx, head, cache, ts)
		var real []labels.Labels // the series the errored ones must not match
		for d.Next() {
			s := d.Series()
			var ls labels.Labels
			if s.Err() == nil {
				ls = s.Labels()
			} else {
				ls = s.lb.Set.Labels() // what decoded before the bad reference
			}
			h, err := a.Lookup(invalidPlainSeries{ls})
			if err != nil {
				t.Fatalf("Lookup(%s) = %v", ls, err)
			}
			// The head refuses empty or repeated names: such labels are
			// no series to match.
			if err := a.Append(&h, 0, ts, 1, nil, nil, storage.AOptions{}); err == nil {
				real = append(real, ls)
			}
		}
		if d.Err() != nil {
			_ = a.Rollback()
			return
		}
		if err := a.Commit(); err != nil {
			t.Fatalf("Commit: %v", err)
		}

		for _, v1 := range []bool{false, true} {
			_ = d.Reset(b, v2Msg)
			var lookup func(refcache.SeriesLabels) (refcache.Handle, error)
			var rollback func() error
			if v1 {
				a := refcache.NewAppender(ctx, head, cache, ts)
				lookup, rollback = a.Lookup, a.Rollback
			} else {
				a := refcache.NewAppenderV2(ctx, head, cache, ts)
				lookup, rollback = a.Lookup, a.Rollback
			}
			for d.Next() {
				s := d.Series()
				serr := s.Err()
				h, err := lookup(s)
				if serr == nil {
					if err != nil {
						t.Fatalf("v1=%v: Lookup of a valid series = %v", v1, err)
					}
					continue
				}
				if !errors.Is(err, refcache.ErrInvalidSeries) || !errors.Is(err, ErrSymbolRef) {
					t.Fatalf("v1=%v: Lookup of a series with error %v = %v, want ErrInvalidSeries and ErrSymbolRef", v1, serr, err)
				}
				if h.Ref() != 0 || h.Cached() || h.Hash() != 0 || !h.Labels().IsEmpty() {
					t.Fatalf("v1=%v: Lookup of a series with an error gave Handle{ref %d, cached %v, hash %#x, labels %s}, want a zero Handle", v1, h.Ref(), h.Cached(), h.Hash(), h.Labels())
				}
				for _, ls := range real {
					if s.Equal(ls) {
						t.Fatalf("v1=%v: Series.Equal(%s) of a series with an error = true", v1, ls)
					}
				}
				decCheckMatchesNothing(t, s)
			}
			_ = rollback()
		}
	})
}

// newInvalidHead returns an initialised in-memory head (no WAL), closed at
// the end of the test.
func newInvalidHead(t testing.TB) *tsdb.Head {
	t.Helper()
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = t.TempDir()
	h, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		t.Fatalf("tsdb.NewHead: %v", err)
	}
	if err := h.Init(math.MinInt64); err != nil {
		t.Fatalf("Head.Init: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// invalidPlainSeries is a series of given labels, for the appenders.
type invalidPlainSeries struct{ ls labels.Labels }

func (s invalidPlainSeries) Err() error                  { return nil }
func (s invalidPlainSeries) Hash() uint64                { return s.ls.Hash() }
func (s invalidPlainSeries) Equal(ls labels.Labels) bool { return labels.Equal(s.ls, ls) }
func (s invalidPlainSeries) Labels() labels.Labels       { return s.ls.Copy() }
