package refcache

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/ingestkit/ingestkit/internal/labelset"
)

// newHead returns an initialised in-memory head (no WAL), closed at the end
// of the test.
func newHead(t testing.TB) *tsdb.Head {
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

// pairSeries is a series whose labels arrive as pairs in a buffer, as the
// decoder yields them. forcedHash, when set, replaces the real hash, to make
// collisions.
type pairSeries struct {
	lb         labelset.Pending // as a decoder's series: the pairs that read gathers, and their Set
	forcedHash uint64
}

func newPairSeries(ls labels.Labels) *pairSeries {
	s := &pairSeries{}
	ls.Range(func(l labels.Label) { s.lb.Set.Add([]byte(l.Name), []byte(l.Value)) })
	return s
}

func (s *pairSeries) Hash() uint64 {
	if s.forcedHash != 0 {
		return s.forcedHash
	}
	return s.lb.LabelSet().Hash()
}

func (s *pairSeries) Equal(ls labels.Labels) bool  { return s.lb.Equal(ls) }
func (s *pairSeries) Labels() labels.Labels        { return s.lb.LabelSet().Labels() }
func (s *pairSeries) ScratchLabels() labels.Labels { return s.lb.LabelSet().Scratch() }

// plainSeries implements only SeriesLabels, without scratch labels.
type plainSeries struct{ ls labels.Labels }

func (s plainSeries) Hash() uint64                { return s.ls.Hash() }
func (s plainSeries) Equal(ls labels.Labels) bool { return labels.Equal(s.ls, ls) }
func (s plainSeries) Labels() labels.Labels       { return s.ls.Copy() }

// seriesSet returns n typical label sets.
func seriesSet(n int) []labels.Labels {
	out := make([]labels.Labels, n)
	for i := range out {
		out[i] = labels.FromStrings(
			"__name__", fmt.Sprintf("metric_%d", i%20),
			"instance", fmt.Sprintf("10.0.%d.%d:9100", i/256%256, i%256),
			"job", "node",
			"namespace", fmt.Sprintf("ns-%d", i%7),
			"pod", fmt.Sprintf("pod-%d", i),
		)
	}
	return out
}

type fsample struct {
	t int64
	v float64
}

// queryAll returns every float sample in q, by series.
func queryAll(t testing.TB, q storage.Querier) map[string][]fsample {
	t.Helper()
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	out := map[string][]fsample{}
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			out[s.Labels().String()] = append(out[s.Labels().String()], fsample{ts, v})
		}
		if err := it.Err(); err != nil {
			t.Fatalf("iterating %s: %v", s.Labels(), err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatalf("Select: %v", err)
	}
	return out
}

func queryHead(t testing.TB, h *tsdb.Head) map[string][]fsample {
	t.Helper()
	q, err := tsdb.NewBlockQuerier(tsdb.NewRangeHead(h, math.MinInt64, math.MaxInt64), math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatalf("NewBlockQuerier: %v", err)
	}
	return queryAll(t, q)
}

// mustHandle returns h, and panics on a Lookup error, which the tests
// that use it never expect.
func mustHandle(h Handle, err error) Handle {
	if err != nil {
		panic(err)
	}
	return h
}

func (s *pairSeries) Err() error { return nil }
func (s plainSeries) Err() error { return nil }
