package postings

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/index"
)

// TestExpandedPostingsDifferential compares Reader.ExpandedPostings with
// tsdb.PostingsForMatchers over Prometheus's own index reader on the same
// block, for the seed cases of the issue, edge cases and random matcher
// sets, reading the index from a local file and over HTTP.
func TestExpandedPostingsDifferential(t *testing.T) {
	ctx := context.Background()
	path := testIndex(t)
	t.Logf("test block: %d series, written in %v", 10+50*testBlockSize(), blockTime)
	ir, err := index.NewFileReader(path, index.DecodePostingsRaw)
	if err != nil {
		t.Fatal(err)
	}
	defer ir.Close()

	cases := matcherSets(rand.New(rand.NewPCG(1, 2)), 150)
	start := time.Now()
	wants := make([][]storage.SeriesRef, len(cases))
	wantErrs := make([]error, len(cases))
	for i, c := range cases {
		wants[i], wantErrs[i] = oracle(ctx, ir, c.ms)
	}
	t.Logf("tsdb.PostingsForMatchers: %d matcher sets in %v", len(cases), time.Since(start))
	f, size := openFile(t, path)
	hs, _ := serveFile(t, path)
	sources := []struct {
		name string
		rr   *RangeReader
	}{
		{"file", NewRangeReader(ReaderAtSource(f), RangeOptions{})},
		{"http", NewRangeReader(hs, RangeOptions{})},
		// No merging: many concurrent requests per query (on the file, as
		// thousands of HTTP requests a query would take long).
		{"file-nomerge", NewRangeReader(ReaderAtSource(f), RangeOptions{MaxGap: -1, Concurrency: 3})},
	}
	for _, src := range sources {
		t.Run("source="+src.name, func(t *testing.T) {
			start := time.Now()
			r, err := NewReader(ctx, src.rr, "index", size)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cases {
				want, wantErr := wants[i], wantErrs[i]
				orig := slices.Clone(c.ms)
				got, err := r.ExpandedPostings(ctx, nil, c.ms...)
				if !slices.Equal(orig, c.ms) {
					t.Fatalf("ExpandedPostings(%s) modified its matchers", c.name)
				}
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("ExpandedPostings(%s) error = %v, want %v", c.name, err, wantErr)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("ExpandedPostings(%s) = %d refs %v, want %d refs %v", c.name, len(got), head(got), len(want), head(want))
				}
			}
			st := src.rr.Stats()
			t.Logf("%d matcher sets in %v: %d requests, %d bytes read for %d bytes of %d ranges", len(cases), time.Since(start), st.Requests, st.Bytes, st.RangeBytes, st.Ranges)
		})
	}
}

func head(s []storage.SeriesRef) []storage.SeriesRef { return s[:min(len(s), 8)] }

// oracle is Prometheus's answer, on a copy of ms (PostingsForMatchers
// reorders its argument).
func oracle(ctx context.Context, ir tsdb.IndexReader, ms []*labels.Matcher) ([]storage.SeriesRef, error) {
	p, err := tsdb.PostingsForMatchers(ctx, ir, slices.Clone(ms)...)
	if err != nil {
		return nil, err
	}
	refs, err := index.ExpandPostings(p)
	if err != nil {
		return nil, err
	}
	if refs == nil {
		refs = []storage.SeriesRef{}
	}
	return refs, nil
}

type matcherSet struct {
	name string
	ms   []*labels.Matcher
}

// matcherSets returns the seed cases, edge cases around empty matchers and
// missing labels, and n random sets over the labels of the test block.
func matcherSets(rng *rand.Rand, n int) []matcherSet {
	var out []matcherSet
	for _, c := range seedCases() {
		out = append(out, matcherSet(c))
	}
	m := labels.MustNewMatcher
	edge := [][]*labels.Matcher{
		nil,
		{m(labels.MatchEqual, "", "")},
		{m(labels.MatchEqual, "", ""), m(labels.MatchEqual, "n", "1"+suffix)},
		{m(labels.MatchNotEqual, "", ""), m(labels.MatchEqual, "n", "1"+suffix)},
		// The all-postings key has the empty name: only the single-matcher
		// case is special in Prometheus, other matchers on "" see it as a
		// label.
		{m(labels.MatchNotEqual, "", "")},
		{m(labels.MatchEqual, "", "x")},
		{m(labels.MatchRegexp, "", ".+")},
		{m(labels.MatchNotRegexp, "", ".+"), m(labels.MatchEqual, "j", "foo")},
		{m(labels.MatchRegexp, "", ".*"), m(labels.MatchEqual, "n", "1"+suffix)},
		{m(labels.MatchRegexp, "i", "")},
		{m(labels.MatchEqual, "i", "")},
		{m(labels.MatchNotEqual, "i", "")},
		{m(labels.MatchNotRegexp, "i", "")},
		{m(labels.MatchNotRegexp, "i", ".*")},
		{m(labels.MatchNotRegexp, "i", ".+")},
		{m(labels.MatchRegexp, "i", ".*"), m(labels.MatchNotRegexp, "i", ".+")},
		{m(labels.MatchEqual, "missing", "")},
		{m(labels.MatchEqual, "missing", "x")},
		{m(labels.MatchNotEqual, "missing", "x")},
		{m(labels.MatchNotEqual, "missing", "")},
		{m(labels.MatchRegexp, "missing", ".+")},
		{m(labels.MatchRegexp, "missing", ".*")},
		{m(labels.MatchNotRegexp, "missing", ".+")},
		{m(labels.MatchEqual, "n", "1"+suffix), m(labels.MatchEqual, "missing", "")},
		{m(labels.MatchEqual, "n", "1"+suffix), m(labels.MatchNotEqual, "missing", "")},
		{m(labels.MatchEqual, "a", "1"+suffix), m(labels.MatchEqual, "i", "")},
		{m(labels.MatchRegexp, "a", ".+"), m(labels.MatchRegexp, "i", ".*")},
		{m(labels.MatchRegexp, "n", "1.*"), m(labels.MatchNotRegexp, "n", "1_.*")},
		{m(labels.MatchRegexp, "n", "(?i)1.*")},
		{m(labels.MatchRegexp, "j", "foo|bar|baz"), m(labels.MatchNotRegexp, "j", "foo|baz")},
		{m(labels.MatchNotRegexp, "j", "foo|baz"), m(labels.MatchEqual, "n", "2_3"+suffix)},
		{m(labels.MatchRegexp, "i", "1"+suffix+"|"), m(labels.MatchEqual, "n", "3"+suffix)},
	}
	for _, ms := range edge {
		out = append(out, matcherSet{fmt.Sprint(ms), ms})
	}
	names := []string{"n", "i", "j", "a", "missing"}
	types := []labels.MatchType{labels.MatchEqual, labels.MatchNotEqual, labels.MatchRegexp, labels.MatchNotRegexp}
	values := func(name string) string {
		switch rng.IntN(8) {
		case 0:
			return ""
		case 1:
			return []string{".*", ".+", "1.*", ".*1.*", "1.+", "(1|2).*", "foo|bar", "x"}[rng.IntN(8)]
		}
		switch name {
		case "j":
			return []string{"foo", "bar", "baz"}[rng.IntN(3)]
		case "n":
			return []string{"", "0_", "1_", "2_"}[rng.IntN(4)] + strconv.Itoa(rng.IntN(11)) + suffix
		default:
			return strconv.Itoa(rng.IntN(testBlockSize()+2)) + suffix
		}
	}
	for range n {
		ms := make([]*labels.Matcher, 1+rng.IntN(4))
		for i := range ms {
			name := names[rng.IntN(len(names))]
			ms[i] = m(types[rng.IntN(len(types))], name, values(name))
		}
		out = append(out, matcherSet{fmt.Sprint(ms), ms})
	}
	return out
}
