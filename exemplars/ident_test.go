package exemplars

import (
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
)

// TestIdentity checks that identity and sameData tell label sets apart by
// their data's address in the builds where identities is true, and never
// take an empty or merely equal label set for the same.
func TestIdentity(t *testing.T) {
	ls := labels.FromStrings("job", "api", "instance", "a")
	tests := []struct {
		name string
		a, b labels.Labels
		want bool
	}{
		{"same value", ls, ls, identities},
		{"a copy", ls, ls.Copy(), false},
		{"equal, built apart", ls, labels.FromStrings("job", "api", "instance", "a"), false},
		{"another", ls, labels.FromStrings("job", "api"), false},
		{"both empty", labels.EmptyLabels(), labels.EmptyLabels(), false},
		{"one empty", ls, labels.EmptyLabels(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameData(tt.a, tt.b); got != tt.want {
				t.Errorf("sameData(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if tt.want && !labels.Equal(tt.a, tt.b) {
				t.Errorf("sameData(%s, %s) is true for unequal labels", tt.a, tt.b)
			}
		})
	}
	if _, ok := identity(labels.EmptyLabels()); ok {
		t.Errorf("identity(empty) = _, true, want false")
	}
	if _, ok := identity(ls); ok != identities {
		t.Errorf("identity(%s) = _, %v, want %v", ls, ok, identities)
	}
}

// TestHintsStale adds a series by one labels value until it is evicted and
// its id taken by another series, then adds it again by that value and by
// a copy, and another series by a copy: each add must go to the series its
// labels name, whatever the hints still say.
func TestHintsStale(t *testing.T) {
	ring := New(2, Options{})
	a := labels.FromStrings("service", "a")
	b := labels.FromStrings("service", "b")
	el := labels.FromStrings("trace_id", "t")
	add := func(ls labels.Labels, ts int64) {
		t.Helper()
		if err := ring.AddExemplar(ls, exemplar.Exemplar{Labels: el, Ts: ts, HasTs: true}); err != nil {
			t.Fatalf("AddExemplar(%s, ts %d) = %v, want nil", ls, ts, err)
		}
	}
	c := labels.FromStrings("service", "c")
	add(a, 1)
	add(a, 2)
	add(b, 3) // a keeps ts 2
	add(b, 4) // a is evicted, and its id freed
	add(c, 5) // c takes a's id
	add(a, 6) // the hint of a's address names c now
	add(a.Copy(), 7)
	add(b.Copy(), 8) // a keeps ts 7
	res, err := ring.Select(0, 10, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "service", ".+")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int64{}
	for _, r := range res {
		for _, e := range r.Exemplars {
			got[r.SeriesLabels.Get("service")] = append(got[r.SeriesLabels.Get("service")], e.Ts)
		}
	}
	if len(got) != 2 || len(got["a"]) != 1 || got["a"][0] != 7 || len(got["b"]) != 1 || got["b"][0] != 8 {
		t.Errorf("Select after the adds = %v, want map[a:[7] b:[8]]", got)
	}
	if ring.nseries != 2 {
		t.Errorf("ring holds %d series, want 2", ring.nseries)
	}
}
