package labelset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/labelhash"
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
	want := rangeEqual(pairs, ls)
	if got := s.Equal(ls); got != want {
		t.Fatalf("Equal(%q, %s) = %v, want %v", pairs, ls, got, want)
	}
	if strictlyIncreasing(pairs) {
		ps := make([]labelhash.Pair, len(pairs))
		for i, p := range pairs {
			ps[i] = labelhash.Pair{Name: []byte(p[0]), Value: []byte(p[1])}
		}
		var fresh Set
		if got := fresh.EqualSortedPairs(ps, ls); got != want {
			t.Fatalf("EqualSortedPairs(%q, %s) = %v, want %v", pairs, ls, got, want)
		}
	}
	if built := s.Labels(); !s.Equal(built) {
		t.Fatalf("Equal(%q, its own Labels() %s) = false", pairs, built)
	}
}

// strictlyIncreasing reports whether the names of pairs increase strictly,
// as EqualSortedPairs requires.
func strictlyIncreasing(pairs [][2]string) bool {
	for i := 1; i < len(pairs); i++ {
		if pairs[i][0] <= pairs[i-1][0] {
			return false
		}
	}
	return true
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

// TestEqualSortedPairs checks EqualSortedPairs against AddSortedPairs and
// Equal: the same answer for label sets equal to the pairs or differing
// from them in a byte, a value's length or a label (past the hasher's
// buffer too), called once or twice before the pairs are added; and once
// AddSortedPairs adds them, the same hashes and labels as a Set that
// AddSortedPairs alone was given.
func TestEqualSortedPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	str := func(max int) string {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = "ab\xff\x00"[rng.IntN(4)]
		}
		return string(b)
	}
	var s, ref Set
	for i := range 20000 {
		n := rng.IntN(7)
		var buf []byte
		pairs := make([][2]string, n)
		for j := range pairs {
			pairs[j] = [2]string{fmt.Sprintf("l%02d%s", j, str(12)), str(30)}
			if i%40 == 0 {
				pairs[j][1] = str(600) // past the hasher's 1 KiB buffer
			}
			buf = append(append(buf, pairs[j][0]...), pairs[j][1]...)
		}
		buf = append(buf, "room past the last value"...)
		ps := make([]labelhash.Pair, n)
		off := 0
		for j, p := range pairs {
			k := off + len(p[0])
			ps[j] = labelhash.Pair{Name: buf[off:k], Value: buf[k : k+len(p[1])]}
			off = k + len(p[1])
		}
		other := slices.Clone(pairs)
		switch k := rng.IntN(max(n, 1)); {
		case n == 0 || i%5 == 0:
			other = append(other, [2]string{"zz", "x"})
		case i%5 == 1:
			other[k][1] += "a"
		case i%5 == 2 && len(other[k][1]) > 0:
			b := []byte(other[k][1])
			b[rng.IntN(len(b))] ^= 0x10
			other[k][1] = string(b)
		case i%5 == 3:
			other = other[:n-1]
		}
		build := func(pairs [][2]string) labels.Labels {
			b := labels.NewScratchBuilder(len(pairs))
			for _, p := range pairs {
				b.Add(p[0], p[1])
			}
			return b.Labels()
		}
		same, diff := build(pairs), build(other)
		tenant := ""
		if i%2 == 1 {
			tenant = "tenant-" + str(4)
			s.ResetTenant(tenant)
			ref.ResetTenant(tenant)
		} else {
			s.Reset()
			ref.Reset()
		}
		ref.AddSortedPairs(ps)
		for _, ls := range []labels.Labels{same, diff}[:1+i%2] {
			if got, want := s.EqualSortedPairs(ps, ls), ref.Equal(ls); got != want {
				t.Fatalf("EqualSortedPairs(%q, %s) = %v, want %v", pairs, ls, got, want)
			}
		}
		if got, want := s.EqualSortedPairs(ps, diff), ref.Equal(diff); got != want {
			t.Fatalf("EqualSortedPairs(%q, %s) again = %v, want %v", pairs, diff, got, want)
		}
		s.AddSortedPairs(ps)
		if got, want := s.Hash(), ref.Hash(); got != want {
			t.Fatalf("%q: Hash() = %#x, want %#x", pairs, got, want)
		}
		if tenant != "" {
			if got, want := s.TenantHash(), ref.TenantHash(); got != want {
				t.Fatalf("%q: TenantHash() = %#x, want %#x", pairs, got, want)
			}
			if got, want := s.ArrivalTenantHash(), ref.ArrivalTenantHash(); got != want {
				t.Fatalf("%q: ArrivalTenantHash() = %#x, want %#x", pairs, got, want)
			}
		}
		if got := s.Labels(); !labels.Equal(got, same) {
			t.Fatalf("Labels() = %s, want %s", got, same)
		}
		if !s.Equal(same) {
			t.Fatalf("Equal(%s) after AddSortedPairs = false", same)
		}
	}
}

// TestEqualSortedPairsHeld checks that EqualSortedPairs refuses a Set that
// holds pairs, whose hashers hold them already, and that the Set is then
// as it was.
func TestEqualSortedPairsHeld(t *testing.T) {
	var s Set
	s.AddString("a", "1")
	ps := []labelhash.Pair{{Name: []byte("b"), Value: []byte("2")}}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("EqualSortedPairs on a Set holding a=1 did not panic")
			}
		}()
		s.EqualSortedPairs(ps, labels.FromStrings("a", "1", "b", "2"))
	}()
	if got, want := s.Hash(), labels.FromStrings("a", "1").Hash(); got != want {
		t.Fatalf("Hash() after the refusal = %#x, want a=1's %#x", got, want)
	}
}

func TestEqualSortedPairsAllocs(t *testing.T) {
	ls := labels.FromStrings("__name__", "up", "instance", "10.0.0.1:9100", "job", "api")
	ps := []labelhash.Pair{
		{Name: []byte("__name__"), Value: []byte("up")},
		{Name: []byte("instance"), Value: []byte("10.0.0.1:9100")},
		{Name: []byte("job"), Value: []byte("api")},
	}
	var s Set
	s.EqualSortedPairs(ps, ls) // the purego build grows its buffer once
	if got := testing.AllocsPerRun(100, func() {
		s.Reset()
		if !s.EqualSortedPairs(ps, ls) {
			t.Fatal("not equal")
		}
	}); got != 0 {
		t.Fatalf("EqualSortedPairs: AllocsPerRun = %v, want 0", got)
	}
}
