package labelset

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// rangeEqual is Equal's walk over ls, the reference that the stringlabels
// fast path (one comparison of the hasher's stream with ls's data) must
// agree with.
func rangeEqual(pairs [][2]string, ls labels.Labels) bool {
	i, eq := 0, true
	ls.Range(func(l labels.Label) {
		if i >= len(pairs) || pairs[i][0] != l.Name || pairs[i][1] != l.Value {
			eq = false
		}
		i++
	})
	return eq && i == len(pairs)
}

// equalCase checks Set.Equal of pairs (sorted) against ls, and against the
// labels built from the pairs.
func equalCase(t testing.TB, s *Set, pairs [][2]string, ls labels.Labels) {
	t.Helper()
	s.Reset()
	for _, p := range pairs {
		s.Add([]byte(p[0]), []byte(p[1]))
	}
	if got, want := s.Equal(ls), rangeEqual(pairs, ls); got != want {
		t.Fatalf("Equal(%q, %s) = %v, want %v", pairs, ls, got, want)
	}
	if built := s.Labels(); !s.Equal(built) {
		t.Fatalf("Equal(%q, its own Labels() %s) = false", pairs, built)
	}
}

func TestEqual(t *testing.T) {
	long := func(n int) string { return strings.Repeat("v", n) }
	base := [][2]string{{"__name__", "up"}, {"job", "api"}}
	for _, tc := range []struct {
		name  string
		pairs [][2]string
		ls    labels.Labels
	}{
		{"equal", base, labels.FromStrings("__name__", "up", "job", "api")},
		{"empty-both", nil, labels.EmptyLabels()},
		{"empty-pairs", nil, labels.FromStrings("a", "b")},
		{"empty-labels", base, labels.EmptyLabels()},
		{"value-differs", base, labels.FromStrings("__name__", "up", "job", "apj")},
		{"name-differs", base, labels.FromStrings("__name__", "up", "jo", "api")},
		{"prefix", base, labels.FromStrings("__name__", "up")},
		{"longer", base, labels.FromStrings("__name__", "up", "job", "api", "x", "y")},
		// Moving a byte between name and value keeps the concatenation;
		// the length prefixes must tell them apart.
		{"boundary-moved", [][2]string{{"ab", "c"}}, labels.FromStrings("a", "bc")},
		{"empty-value", [][2]string{{"a", ""}, {"b", "x"}}, labels.FromStrings("b", "x")},
		{"len-254", [][2]string{{"a", long(254)}}, labels.FromStrings("a", long(254))},
		{"len-255", [][2]string{{"a", long(255)}}, labels.FromStrings("a", long(255))},
		{"len-255-vs-254", [][2]string{{"a", long(255)}}, labels.FromStrings("a", long(254))},
		// Past the hasher's 1 KiB buffer: the walk, not the fast path.
		{"len-1KiB", [][2]string{{"a", long(1024)}}, labels.FromStrings("a", long(1024))},
		{"len-1KiB-differs", [][2]string{{"a", long(1024)}}, labels.FromStrings("a", long(1023)+"w")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Set
			equalCase(t, &s, tc.pairs, tc.ls)
		})
	}
}

// TestEqualRandom compares Equal with the walk on random pairs and label
// sets that differ from them in one place, or not at all.
func TestEqualRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		n := rng.IntN(8)
		if rng.IntN(20) == 0 {
			n = 250 + rng.IntN(10)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab\xff\x00"[rng.IntN(4)]
		}
		return string(b)
	}
	var s Set
	for i := range 20000 {
		b := labels.NewScratchBuilder(0)
		n := rng.IntN(6)
		for j := range n {
			b.Add(fmt.Sprintf("l%d", j), str())
		}
		b.Sort()
		ls := b.Labels()
		var pairs [][2]string
		ls.Range(func(l labels.Label) { pairs = append(pairs, [2]string{l.Name, l.Value}) })
		if i%2 == 1 && len(pairs) > 0 {
			k := rng.IntN(len(pairs))
			pairs[k][rng.IntN(2)] += "x"
		}
		equalCase(t, &s, pairs, ls)
	}
}

func FuzzEqual(f *testing.F) {
	f.Add("a", "b", "a", "b")
	f.Add("ab", "c", "a", "bc")
	f.Add("a", strings.Repeat("v", 255), "a", strings.Repeat("v", 254))
	f.Add("a", "", "a", "")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string) {
		if n1 == "" || n2 == "" {
			return // labels.FromStrings keeps no empty name meaningfully
		}
		var s Set
		equalCase(t, &s, [][2]string{{n1, v1}}, labels.FromStrings(n2, v2))
	})
}

func TestEqualAllocs(t *testing.T) {
	ls := labels.FromStrings("__name__", "up", "job", "api", "instance", "10.0.0.1:9100")
	var s Set
	s.Add([]byte("__name__"), []byte("up"))
	s.Add([]byte("instance"), []byte("10.0.0.1:9100"))
	s.Add([]byte("job"), []byte("api"))
	s.Equal(ls) // the purego build grows its buffer once
	if got := testing.AllocsPerRun(100, func() {
		if !s.Equal(ls) {
			t.Fatal("not equal")
		}
	}); got != 0 {
		t.Fatalf("Equal: AllocsPerRun = %v, want 0", got)
	}
}
