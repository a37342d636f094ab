package labels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

// thanosTenantHash is an independent oracle for the tenant hash: the bytes
// Thanos's HashWithPrefix hashes, built in full.
func thanosTenantHash(tenant string, ls labels.Labels) uint64 {
	b := append([]byte(tenant), 0xff)
	ls.Range(func(l labels.Label) {
		b = append(b, l.Name...)
		b = append(b, 0xff)
		b = append(b, l.Value...)
		b = append(b, 0xff)
	})
	return xxhash.Sum64(b)
}

func randString(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		if r.IntN(5) == 0 {
			b[i] = 0xff
		} else {
			b[i] = byte(r.IntN(256))
		}
	}
	return string(b)
}

var boundaryLens = []int{0, 1, 127, 128, 129, 254, 255, 256, 1023, 1024, 1025, 4096}

func randomLabels(r *rand.Rand) labels.Labels {
	n := r.IntN(20)
	b := labels.NewScratchBuilder(n)
	for j := range n {
		vl := r.IntN(40)
		if r.IntN(8) == 0 {
			vl = boundaryLens[r.IntN(len(boundaryLens))]
		}
		b.Add(fmt.Sprintf("l%02d%s", j, randString(r, r.IntN(4))), randString(r, vl))
	}
	b.Sort()
	return b.Labels()
}

type strPair struct{ name, value string }

func pairsOf(ls labels.Labels) []strPair {
	var ps []strPair
	ls.Range(func(l labels.Label) { ps = append(ps, strPair{l.Name, l.Value}) })
	return ps
}

// checkBuilder adds the pairs of ls to b in the given order, from byte slices
// that it scribbles over afterwards, and checks every result against
// Prometheus.
func checkBuilder(t *testing.T, b *HashedBuilder, ls labels.Labels, order []int, fromBytes bool) {
	t.Helper()
	ps := pairsOf(ls)
	var bufs [][]byte
	b.ResetTenant("tenant-a")
	for _, i := range order {
		if fromBytes {
			n, v := []byte(ps[i].name), []byte(ps[i].value)
			bufs = append(bufs, n, v)
			b.Add(n, v)
		} else {
			b.AddString(ps[i].name, ps[i].value)
		}
	}
	if got, want := b.Len(), len(ps); got != want {
		t.Fatalf("HashedBuilder.Len() = %d, want %d", got, want)
	}
	if got, want := b.Hash(), ls.Hash(); got != want {
		t.Fatalf("HashedBuilder.Hash() = %#x, want Labels.Hash() = %#x for %s", got, want, ls)
	}
	if got, want := b.TenantHash(), thanosTenantHash("tenant-a", ls); got != want {
		t.Fatalf("HashedBuilder.TenantHash() = %#x, want %#x", got, want)
	}
	if !b.Equal(ls) {
		t.Fatalf("HashedBuilder.Equal(%s) = false, want true", ls)
	}
	if err := b.Err(); err != nil {
		t.Fatalf("HashedBuilder.Err() = %v, want nil", err)
	}
	built := b.Labels()
	h := b.Hashed()
	for _, buf := range bufs {
		for i := range buf {
			buf[i] = 0xaa // the request buffer is reused
		}
	}
	if !labels.Equal(built, ls) {
		t.Fatalf("HashedBuilder.Labels() = %s, want %s", built, ls)
	}
	if !labels.Equal(h.Labels(), ls) {
		t.Fatalf("HashedBuilder.Hashed().Labels() = %s, want %s", h.Labels(), ls)
	}
	if got, want := h.Hash(), ls.Hash(); got != want {
		t.Fatalf("HashedBuilder.Hashed().Hash() = %#x, want %#x", got, want)
	}
	if got, want := h.Labels().Hash(), h.Hash(); got != want {
		t.Fatalf("Hashed.Labels().Hash() = %#x, want Hashed.Hash() = %#x", got, want)
	}
}

func TestBuilderDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var b HashedBuilder
	var tab Table
	for i := range 3000 {
		ls := randomLabels(r)
		order := make([]int, ls.Len())
		for j := range order {
			order[j] = j
		}
		shuffled := r.IntN(3) == 0
		if shuffled {
			r.Shuffle(len(order), func(x, y int) { order[x], order[y] = order[y], order[x] })
		}
		if i%2 == 0 {
			b.SetInterner(&tab)
		} else {
			b.SetInterner(nil)
		}
		t.Run(fmt.Sprintf("%d/shuffled=%v", i, shuffled), func(t *testing.T) {
			checkBuilder(t, &b, ls, order, i%3 != 0)
		})
	}
}

func TestBuilderBoundaries(t *testing.T) {
	var b HashedBuilder
	for _, n := range append(boundaryLens, 10<<20) {
		v := strings.Repeat("\xffv", n/2+1)[:n]
		ls := labels.FromStrings("__name__", "m", "big", v, "zzz", "")
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			checkBuilder(t, &b, ls, []int{0, 1, 2}, true)
			checkBuilder(t, &b, ls, []int{2, 0, 1}, true)
		})
	}
	t.Run("empty", func(t *testing.T) {
		checkBuilder(t, &b, labels.EmptyLabels(), nil, true)
	})
}

func TestBuilderEqualMismatch(t *testing.T) {
	base := labels.FromStrings("__name__", "up", "job", "api")
	for _, tc := range []struct {
		name  string
		pairs []string
	}{
		{"other value", []string{"__name__", "up", "job", "apj"}},
		{"fewer", []string{"__name__", "up"}},
		{"more", []string{"__name__", "up", "job", "api", "zone", "a"}},
		{"other name", []string{"__name__", "up", "jab", "api"}},
		{"empty", nil},
		{"value moved", []string{"__name__", "upjob", "", "api"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b HashedBuilder
			for i := 0; i < len(tc.pairs); i += 2 {
				b.Add([]byte(tc.pairs[i]), []byte(tc.pairs[i+1]))
			}
			if b.Equal(base) {
				t.Fatalf("HashedBuilder%q.Equal(%s) = true, want false", tc.pairs, base)
			}
		})
	}
}

func TestBuilderDuplicateNames(t *testing.T) {
	// Invalid but possible input: both orders must give one result, that of
	// the labels the HashedBuilder builds.
	var b1, b2 HashedBuilder
	b1.AddString("a", "2")
	b1.AddString("a", "1")
	b2.AddString("a", "1")
	b2.AddString("a", "2")
	if b1.Hash() != b2.Hash() {
		t.Fatalf("HashedBuilder.Hash() depends on the order of repeated names: %#x != %#x", b1.Hash(), b2.Hash())
	}
	h := b1.Hashed()
	if got, want := h.Hash(), h.Labels().Hash(); got != want {
		t.Fatalf("Hashed.Hash() = %#x, want Labels().Hash() = %#x", got, want)
	}
}

func TestBuilderTenantHashWithoutTenantPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "labels:") {
			t.Fatalf("TenantHash without ResetTenant: recover() = %v, want a labels: panic", r)
		}
	}()
	var b HashedBuilder
	b.TenantHash()
}

func TestBuilderResetDropsTenant(t *testing.T) {
	ls := labels.FromStrings("__name__", "up")
	var b HashedBuilder
	b.ResetTenant("x")
	b.AddString("__name__", "down")
	b.Reset()
	b.AddString("__name__", "up")
	if got, want := b.Hash(), ls.Hash(); got != want {
		t.Fatalf("HashedBuilder.Hash() after Reset = %#x, want %#x", got, want)
	}
}

func typicalPairs(n int) (names, values [][]byte) {
	names = append(names, []byte("__name__"))
	values = append(values, []byte("http_server_requests_seconds_bucket"))
	for i := 1; i < n; i++ {
		names = append(names, fmt.Appendf(nil, "label_%02d", i))
		values = append(values, fmt.Appendf(nil, "value-%d-%s", i, bytes.Repeat([]byte("v"), 8)))
	}
	return names, values
}

func TestBuilderAllocs(t *testing.T) {
	if bytestr.Copies {
		t.Skip("the purego build copies every borrowed string")
	}
	names, values := typicalPairs(10)
	var b HashedBuilder
	fill := func() {
		b.Reset()
		for i := range names {
			b.Add(names[i], values[i])
		}
	}
	fill()
	ls := b.Labels()
	for _, tc := range []struct {
		name string
		want float64
		f    func()
	}{
		{"Add+Hash", 0, func() { fill(); _ = b.Hash() }},
		{"Add+TenantHash", 0, func() {
			b.ResetTenant("t")
			for i := range names {
				b.Add(names[i], values[i])
			}
			_ = b.TenantHash()
		}},
		{"Add unsorted+ThanosHash+TenantHash", 0, func() {
			b.ResetTenant("t")
			for i := range names {
				j := len(names) - 1 - i
				b.Add(names[j], values[j])
			}
			_ = b.ThanosHash() + b.TenantHash()
		}},
		{"Equal", 0, func() { _ = b.Equal(ls) }},
		{"Labels", labelsAllocs, func() { fill(); _ = b.Labels() }},
		{"Hashed", labelsAllocs, func() { fill(); _ = b.Hashed() }},
		{"ScratchLabels", 0, func() { fill(); _ = b.ScratchLabels() }},
		{"FromLabels", 0, func() { _ = FromLabels(ls) }},
	} {
		if got := testing.AllocsPerRun(200, tc.f); got != tc.want {
			t.Errorf("%s: AllocsPerRun = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBuilderThanosHash checks HashedBuilder.ThanosHash, the hash of the pairs
// in the order they were added (Thanos's labelpb.HashWithPrefix), against the
// bytes Thanos hashes, and HashedBuilder.TenantHash, of the sorted pairs, on
// the same HashedBuilder, whatever order the calls come in and when pairs are
// added after a hash was taken.
func TestBuilderThanosHash(t *testing.T) {
	build := func(sorted bool, kv ...string) labels.Labels {
		sb := labels.NewScratchBuilder(len(kv) / 2)
		for i := 0; i < len(kv); i += 2 {
			sb.Add(kv[i], kv[i+1])
		}
		if sorted {
			sb.Sort()
		}
		return sb.Labels()
	}
	long := strings.Repeat("x", 1500)
	for _, tc := range []struct {
		name  string
		first []string // added before the first hashes are taken
		then  []string // added after
	}{
		{"sorted", []string{"__name__", "up", "job", "api"}, nil},
		{"unsorted", []string{"job", "api", "__name__", "up"}, nil},
		{"repeated name", []string{"a", "2", "a", "1"}, nil},
		{"empty", nil, nil},
		{"long values", []string{"b", long, "a", long}, nil},
		{"unsorted then more", []string{"job", "api", "__name__", "up"}, []string{"zone", "1", "pod", "p"}},
		{"sorted then unsorted", []string{"a", "1", "b", "2"}, []string{"a", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b HashedBuilder
			b.ResetTenant("team-a")
			check := func(kv []string) {
				t.Helper()
				sorted := build(true, kv...)
				for _, order := range []string{"ThanosHash first", "TenantHash first"} {
					var tenantHash uint64
					if order == "TenantHash first" {
						tenantHash = b.TenantHash()
					}
					if got, want := b.ThanosHash(), thanosTenantHash("team-a", build(false, kv...)); got != want {
						t.Fatalf("%s: ThanosHash() of %q = %#x, want %#x", order, kv, got, want)
					}
					if order == "ThanosHash first" {
						tenantHash = b.TenantHash()
					}
					if want := thanosTenantHash("team-a", sorted); tenantHash != want && !hasRepeatedName(kv) {
						t.Fatalf("%s: TenantHash() of %q = %#x, want %#x", order, kv, tenantHash, want)
					}
				}
			}
			for i := 0; i < len(tc.first); i += 2 {
				b.AddString(tc.first[i], tc.first[i+1])
			}
			check(tc.first)
			if tc.then != nil {
				all := append(slices.Clone(tc.first), tc.then...)
				for i := 0; i < len(tc.then); i += 2 {
					b.Add([]byte(tc.then[i]), []byte(tc.then[i+1]))
				}
				check(all)
			}
		})
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatalf("ThanosHash without ResetTenant did not panic")
			}
		}()
		var b HashedBuilder
		b.ThanosHash()
	}()
}

// hasRepeatedName reports whether the pairs kv repeat a name, for which
// labels.New's order of the repeated pairs is unspecified.
func hasRepeatedName(kv []string) bool {
	seen := map[string]bool{}
	for i := 0; i < len(kv); i += 2 {
		if seen[kv[i]] {
			return true
		}
		seen[kv[i]] = true
	}
	return false
}
