package postings

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestExpandedPostingsAllocs pins the steady-state allocations of
// ExpandedPostings with a dst that has room: none when the lists it needs
// are read in one request, else 4 + 2 per request (the errgroup, its
// context, a goroutine and closure per request), plus one for each regex
// matcher whose set matches it consults (labels.Matcher.SetMatches returns
// a copy).
func TestExpandedPostingsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items on purpose under -race")
	}
	ctx := context.Background()
	data, err := os.ReadFile(testIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	rr := NewRangeReader(ReaderAtSource(bytes.NewReader(data)), RangeOptions{})
	r, err := NewReader(ctx, rr, "index", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range seedCases() {
		before := rr.Stats().Requests
		dst, err := r.ExpandedPostings(ctx, nil, c.ms...)
		if err != nil {
			t.Fatal(err)
		}
		requests := int(rr.Stats().Requests - before)
		want := 0
		if requests > 1 {
			want = 4 + 2*requests
		}
		for _, m := range c.ms {
			if (m.Type == labels.MatchRegexp || m.Type == labels.MatchNotRegexp) && len(m.SetMatches()) > 0 {
				want++
			}
		}
		a := testing.AllocsPerRun(20, func() {
			if dst, err = r.ExpandedPostings(ctx, dst[:0], c.ms...); err != nil {
				t.Fatal(err)
			}
		})
		if a != float64(want) {
			t.Errorf("ExpandedPostings(%s) with %d requests: %v allocs, want %d", c.name, requests, a, want)
		}
	}
}
