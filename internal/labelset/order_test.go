package labelset

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/labelhash"
)

// TestOrderCheck checks the order check of Add and AddString, whose fast
// paths decide from the first eight bytes or the first byte, against the
// plain comparison of name, then value: over names that share prefixes of
// every length around those edges, and equal names.
func TestOrderCheck(t *testing.T) {
	names := []string{"", "a", "b", "ab", "abc", "abcd", "abce", "abcd0", "abc\xff", "abd", "cluster", "code", "container", "abcdefg", "abcdefgh", "abcdefgi", "abcdefgh0", "abcdefgh1",
		"abcdefgi0", "abcdefg\xff", "abcdefgh\xff", "\xff", "\xffa", "__name__", "_", "job", "jobs", "le", "label_01", "label_02", "label_010"}
	values := []string{"", "1", "2"}
	for _, a := range names {
		for _, b := range names {
			for _, va := range values {
				for _, vb := range values {
					want := b < a || b == a && vb < va
					for _, bytes := range []bool{true, false} {
						var s Set
						if bytes {
							s.Add([]byte(a), []byte(va))
							s.Add([]byte(b), []byte(vb))
						} else {
							s.AddString(a, va)
							s.AddString(b, vb)
						}
						if s.unsorted != want {
							t.Fatalf("%s: (%q, %q) then (%q, %q): unsorted = %v, want %v", kind(bytes), a, va, b, vb, s.unsorted, want)
						}
					}
				}
			}
		}
	}
}

// TestPairsIncrease checks PairsIncrease against the names compared as
// strings, over every sequence of up to three names around the edges of
// KeyOrder's eight-byte keys, with the empty name and repeated names.
func TestPairsIncrease(t *testing.T) {
	names := []string{"", "a", "b", "ab", "abcdefgh", "abcdefgi", "abcdefgh0", "abcdefgh1", "abcdefg\xff", "__name__",
		"kubernetes_namespace", "kubernetes_pod_name", "label_app_kubernetes_io_instance", "label_app_kubernetes_io_name"}
	var seq func(ps []labelhash.Pair)
	seq = func(ps []labelhash.Pair) {
		want := len(ps) > 0 && len(ps[0].Name) > 0
		for i := 1; i < len(ps); i++ {
			if string(ps[i].Name) <= string(ps[i-1].Name) {
				want = false
			}
		}
		if got := PairsIncrease(ps); got != want {
			t.Fatalf("PairsIncrease(%q) = %v, want %v", ps, got, want)
		}
		if len(ps) == 3 {
			return
		}
		for _, n := range names {
			seq(append(slices.Clip(ps), labelhash.Pair{Name: []byte(n), Value: []byte("v")}))
		}
	}
	seq(nil)
}

func kind(bytes bool) string {
	if bytes {
		return "Add"
	}
	return "AddString"
}

// TestAddPairs checks that AddPairs, in chunks of any size, leaves a Set in
// the state that an Add of each pair does: same hashes, tenant hashes in
// both orders, and labels, for sorted and unsorted pairs, with and without
// a tenant, with repeated names. Both are also checked against Prometheus's
// Labels.Hash of the pairs sorted by name, then value, and against the
// tenant hash computed here from its definition. The Sets are reused, as
// the decoders reuse theirs.
func TestAddPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	names := []string{"__name__", "a", "abcd", "abcdefgh", "abcdefgi", "job", "le", "zone"}
	var want, got Set
	for i := range 2000 {
		n := r.IntN(12)
		ps := make([]labelhash.Pair, n)
		for j := range ps {
			ps[j] = labelhash.Pair{Name: []byte(names[r.IntN(len(names))]), Value: []byte(fmt.Sprint(r.IntN(3)))}
		}
		if r.IntN(2) == 0 {
			slices.SortFunc(ps, func(x, y labelhash.Pair) int { return bytes.Compare(x.Name, y.Name) })
		}
		tenant := i%3 != 0
		if tenant {
			want.ResetTenant("t")
			got.ResetTenant("t")
		} else {
			want.Reset()
			got.Reset()
		}
		for _, p := range ps {
			want.Add(p.Name, p.Value)
		}
		sorted := slices.Clone(ps)
		slices.SortFunc(sorted, func(x, y labelhash.Pair) int {
			if c := bytes.Compare(x.Name, y.Name); c != 0 {
				return c
			}
			return bytes.Compare(x.Value, y.Value)
		})
		sb := labels.NewScratchBuilder(len(sorted))
		for _, p := range sorted {
			sb.Add(string(p.Name), string(p.Value))
		}
		prom := sb.Labels()
		if g, w := want.Hash(), prom.Hash(); g != w {
			t.Fatalf("%d: Add: Hash() = %#x, want Labels.Hash() %#x", i, g, w)
		}
		if tenant {
			if g, w := want.TenantHash(), tenantHash("t", sorted); g != w {
				t.Fatalf("%d: Add: TenantHash() = %#x, want %#x", i, g, w)
			}
			if g, w := want.ArrivalTenantHash(), tenantHash("t", ps); g != w {
				t.Fatalf("%d: Add: ArrivalTenantHash() = %#x, want %#x", i, g, w)
			}
		}
		for rest := ps; len(rest) > 0; {
			k := 1 + r.IntN(len(rest))
			got.AddPairs(rest[:k])
			rest = rest[k:]
		}
		if tenant {
			if g, w := got.ArrivalTenantHash(), want.ArrivalTenantHash(); g != w {
				t.Fatalf("%d: ArrivalTenantHash() = %#x, want %#x", i, g, w)
			}
			if g, w := got.TenantHash(), want.TenantHash(); g != w {
				t.Fatalf("%d: TenantHash() = %#x, want %#x", i, g, w)
			}
		}
		if g, w := got.Hash(), want.Hash(); g != w {
			t.Fatalf("%d: Hash() = %#x, want %#x", i, g, w)
		}
		if g, w := got.Labels(), want.Labels(); !labels.Equal(g, w) {
			t.Fatalf("%d: Labels() = %s, want %s", i, g, w)
		}
	}
}

// TestAddSortedPairs checks that AddSortedPairs of pairs with strictly
// increasing names, on a fresh Set and after AddPairs of others, gives the
// hashes and labels of Add of each.
func TestAddSortedPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	names := []string{"", "__name__", "a", "abcd", "abcdefgh", "abcdefgi", "job", "le", "zone"}
	var want, got Set
	for i := range 2000 {
		var ps []labelhash.Pair
		for _, name := range names {
			if r.IntN(2) == 0 {
				ps = append(ps, labelhash.Pair{Name: []byte(name), Value: []byte(fmt.Sprint(r.IntN(3)))})
			}
		}
		tenant := i%3 != 0
		if tenant {
			want.ResetTenant("t")
			got.ResetTenant("t")
		} else {
			want.Reset()
			got.Reset()
		}
		// Some Sets hold pairs already, which may put ps out of order.
		k := 0
		if i%4 == 0 && len(ps) > 0 {
			k = 1 + r.IntN(len(ps))
			got.AddPairs(ps[len(ps)-k:])
			for _, p := range ps[len(ps)-k:] {
				want.Add(p.Name, p.Value)
			}
		}
		for _, p := range ps {
			want.Add(p.Name, p.Value)
		}
		got.AddSortedPairs(ps)
		if g, w := got.Hash(), want.Hash(); g != w {
			t.Fatalf("%d: Hash() = %#x, want %#x", i, g, w)
		}
		if tenant {
			if g, w := got.ArrivalTenantHash(), want.ArrivalTenantHash(); g != w {
				t.Fatalf("%d: ArrivalTenantHash() = %#x, want %#x", i, g, w)
			}
			if g, w := got.TenantHash(), want.TenantHash(); g != w {
				t.Fatalf("%d: TenantHash() = %#x, want %#x", i, g, w)
			}
		}
		if g, w := got.Labels(), want.Labels(); !labels.Equal(g, w) {
			t.Fatalf("%d: Labels() = %s, want %s", i, g, w)
		}
	}
}

// tenantHash is the Thanos hashring's hash of the pairs in the order given:
// xxhash over "tenant 0xff name 0xff value 0xff ...".
func tenantHash(tenant string, ps []labelhash.Pair) uint64 {
	b := append([]byte(tenant), 0xff)
	for _, p := range ps {
		b = append(append(append(append(b, p.Name...), 0xff), p.Value...), 0xff)
	}
	return xxhash.Sum64(b)
}
