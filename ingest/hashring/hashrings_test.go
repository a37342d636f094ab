package hashring

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// TestParseHashrings reads hashrings files in Thanos's format: endpoints as
// strings or objects, zones, Cap'n Proto addresses and their default,
// shuffle sharding, unknown fields; and the files Thanos refuses.
func TestParseHashrings(t *testing.T) {
	const file = `[
	  {"hashring": "team-a", "tenants": ["a", "b"], "algorithm": "ketama", "endpoints": ["recv-0:10901", {"address": "recv-1:10901", "az": "z1", "capnproto_address": "recv-1:7000"}], "unknown": 1},
	  {"hashring": "globs", "tenants": ["t-*"], "tenant_matcher_type": "glob", "algorithm": "ketama",
	   "endpoints": [{"address": "recv-2:10901", "az": "z1"}, {"address": "recv-3:10901", "az": "z2"}],
	   "external_labels": {"region": "eu"},
	   "shuffle_sharding_config": {"shard_size": 2, "cache_size": 10, "zone_awareness_disabled": true,
	     "overrides": [{"shard_size": 1, "tenants": ["t-big"], "tenant_matcher_type": "exact"}]}},
	  {"endpoints": ["recv-4"]}
	]`
	cfg, err := ParseConfig([]byte(file))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	want := []Config{
		{Name: "team-a", Tenants: []string{"a", "b"}, Algorithm: AlgorithmKetama, Endpoints: []Endpoint{
			{Address: "recv-0:10901", CapNProtoAddress: "recv-0:19391"},
			{Address: "recv-1:10901", Zone: "z1", CapNProtoAddress: "recv-1:7000"},
		}},
		{Name: "globs", Tenants: []string{"t-*"}, TenantMatcher: TenantMatchGlob, Algorithm: AlgorithmKetama,
			Endpoints: []Endpoint{
				{Address: "recv-2:10901", Zone: "z1", CapNProtoAddress: "recv-2:19391"},
				{Address: "recv-3:10901", Zone: "z2", CapNProtoAddress: "recv-3:19391"},
			},
			ExternalLabels: map[string]string{"region": "eu"},
			ShuffleSharding: ShuffleShardingConfig{ShardSize: 2, CacheSize: 10, ZoneAwarenessDisabled: true,
				Overrides: []ShuffleShardingOverride{{ShardSize: 1, Tenants: []string{"t-big"}, TenantMatcher: TenantMatchExact}}}},
		{Endpoints: []Endpoint{{Address: "recv-4", CapNProtoAddress: "recv-4:19391"}}},
	}
	if len(cfg) != len(want) {
		t.Fatalf("ParseConfig = %d hashrings, want %d", len(cfg), len(want))
	}
	for i := range want {
		g, w := cfg[i], want[i]
		if g.Name != w.Name || !slices.Equal(g.Tenants, w.Tenants) || g.TenantMatcher != w.TenantMatcher ||
			!slices.Equal(g.Endpoints, w.Endpoints) || g.Algorithm != w.Algorithm || len(g.ExternalLabels) != len(w.ExternalLabels) ||
			g.ShuffleSharding.ShardSize != w.ShuffleSharding.ShardSize || g.ShuffleSharding.CacheSize != w.ShuffleSharding.CacheSize ||
			g.ShuffleSharding.ZoneAwarenessDisabled != w.ShuffleSharding.ZoneAwarenessDisabled ||
			len(g.ShuffleSharding.Overrides) != len(w.ShuffleSharding.Overrides) {
			t.Errorf("hashring %d = %+v, want %+v", i, g, w)
		}
	}
	// One replica: the override's shards of one endpoint hold it.
	h, err := NewHashrings(cfg, Options{ReplicationFactor: 1})
	if err != nil {
		t.Fatalf("NewHashrings: %v", err)
	}
	for _, tc := range []struct {
		tenant string
		want   []string
	}{
		{"a", []string{"recv-0:10901", "recv-1:10901"}},
		{"t-x", []string{"recv-2:10901", "recv-3:10901"}},
		{"t-big", nil}, // one endpoint of the two
		{"other", []string{"recv-4"}},
	} {
		r, err := h.Ring(tc.tenant)
		if err != nil {
			t.Fatalf("Ring(%q): %v", tc.tenant, err)
		}
		var got []string
		for i := range r.Len() {
			got = append(got, r.Endpoint(i).Address)
		}
		if tc.want == nil {
			if len(got) != 1 {
				t.Errorf("Ring(%q) endpoints = %q, want one", tc.tenant, got)
			}
		} else if !slices.Equal(got, tc.want) {
			t.Errorf("Ring(%q) endpoints = %q, want %q", tc.tenant, got, tc.want)
		}
	}
	// A file written back reads the same.
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	again, err := ParseConfig(out)
	if err != nil || !reflect.DeepEqual(again, cfg) {
		t.Errorf("ParseConfig(Marshal(cfg)) = %+v, %v, want %+v", again, err, cfg)
	}
	var addrs []string
	for _, e := range h.Endpoints() {
		addrs = append(addrs, e.Address)
	}
	if want := []string{"recv-0:10901", "recv-1:10901", "recv-2:10901", "recv-3:10901", "recv-4"}; !slices.Equal(addrs, want) {
		t.Errorf("Endpoints() = %q, want %q", addrs, want)
	}

	for _, tc := range []struct{ name, file string }{
		{"empty", `[]`},
		{"null", `null`},
		{"not an array", `{"endpoints": ["a"]}`},
		{"not JSON", `[{"endpoints": ["a"]`},
		{"empty address", `[{"endpoints": [""]}]`},
		{"no address", `[{"endpoints": [{"az": "z"}]}]`},
		{"endpoint of another type", `[{"endpoints": [1]}]`},
	} {
		if _, err := ParseConfig([]byte(tc.file)); err == nil {
			t.Errorf("%s: ParseConfig(%s) = nil error, want one", tc.name, tc.file)
		} else if tc.name != "not JSON" && tc.name != "endpoint of another type" && !errors.Is(err, ErrConfig) {
			t.Errorf("%s: ParseConfig(%s) = %v, want ErrConfig", tc.name, tc.file, err)
		}
	}
}

// TestNewHashringsErrors covers the hashrings NewHashrings refuses, and the
// unknown algorithm that Thanos, and NewHashrings, take for hashmod.
func TestNewHashringsErrors(t *testing.T) {
	eps := ringEndpoints("a", "b", "c")
	for _, tc := range []struct {
		name string
		cfg  Config
		opts Options
		want error // nil: built
	}{
		{"unknown algorithm is hashmod", Config{Endpoints: eps, Algorithm: "ketama2"}, Options{ReplicationFactor: 5}, nil},
		{"unknown default algorithm", Config{Endpoints: eps}, Options{Algorithm: "ketama2"}, ErrUnknownAlgorithm},
		{"shuffle on hashmod", Config{Endpoints: eps, ShuffleSharding: ShuffleShardingConfig{ShardSize: 1}}, Options{}, ErrConfig},
		{"shuffle on unknown algorithm", Config{Endpoints: eps, Algorithm: "x", ShuffleSharding: ShuffleShardingConfig{ShardSize: 1}}, Options{Algorithm: AlgorithmKetama}, ErrConfig},
		{"shard above endpoints", Config{Endpoints: eps, ShuffleSharding: ShuffleShardingConfig{ShardSize: 4}}, Options{Algorithm: AlgorithmKetama}, ErrConfig},
		{"shard of all endpoints", Config{Endpoints: eps, ShuffleSharding: ShuffleShardingConfig{ShardSize: 3}}, Options{Algorithm: AlgorithmKetama}, nil},
		{"negative shard size is none", Config{Endpoints: eps, ShuffleSharding: ShuffleShardingConfig{ShardSize: -1}}, Options{}, nil},
		{"bad glob", Config{Endpoints: eps, Tenants: []string{"a[", "b"}, TenantMatcher: TenantMatchGlob}, Options{}, ErrConfig},
		{"unknown matcher", Config{Endpoints: eps, Tenants: []string{"a"}, TenantMatcher: "regex"}, Options{}, ErrConfig},
		{"ketama zones too uneven", Config{Endpoints: zoneEndpoints("a", "1", "b", "2", "c", "2", "d", "2"), Algorithm: AlgorithmKetama}, Options{ReplicationFactor: 4}, ErrZoneCapacity},
		{"hashmod without endpoints", Config{}, Options{ReplicationFactor: 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHashrings([]Config{tc.cfg}, tc.opts)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("NewHashrings = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestHashringsRouting checks the order of the hashrings, the default
// hashring wherever it stands, exact and glob matching (path.Match: "*"
// stops at "/"), and the errors of Ring.
func TestHashringsRouting(t *testing.T) {
	cfg := []Config{
		{Name: "exact", Endpoints: ringEndpoints("e"), Tenants: []string{"a", "t-1"}, TenantMatcher: TenantMatchExact},
		{Name: "glob", Endpoints: ringEndpoints("g"), Tenants: []string{"t-*", "x?", "[0-9]*"}, TenantMatcher: TenantMatchGlob},
		{Name: "literal", Endpoints: ringEndpoints("l"), Tenants: []string{"t-*", "y/z"}},
		{Name: "default", Endpoints: ringEndpoints("d")},
		{Name: "after default", Endpoints: ringEndpoints("never"), Tenants: []string{"b"}},
	}
	h, err := NewHashrings(cfg, Options{ReplicationFactor: 2})
	if err != nil {
		t.Fatalf("NewHashrings: %v", err)
	}
	for _, tc := range []struct{ tenant, want string }{
		{"a", "e"}, {"t-1", "e"}, {"t-2", "g"}, {"t-", "g"}, {"x1", "g"}, {"x12", "d"},
		{"9lives", "g"}, {"t-*", "g"}, {"t-a/b", "d"}, {"y/z", "l"}, {"b", "d"}, {"", "d"},
	} {
		r, err := h.Ring(tc.tenant)
		if err != nil || r.Endpoint(0).Address != tc.want {
			t.Errorf("Ring(%q) = %v, %v, want the ring of %s", tc.tenant, r, err, tc.want)
		}
		// A hashmod ring of one for two replicas: replica 1 fails, as in
		// Thanos.
		if _, err := r.Replica(7, 1); !errors.Is(err, ErrNotEnoughNodes) {
			t.Errorf("Ring(%q).Replica(7, 1) = %v, want ErrNotEnoughNodes", tc.tenant, err)
		}
	}
	h, err = NewHashrings(cfg[:2], Options{})
	if err != nil {
		t.Fatalf("NewHashrings: %v", err)
	}
	if r, err := h.Ring("nobody"); !errors.Is(err, ErrNoHashring) || r != nil {
		t.Errorf("Ring(nobody) = %v, %v, want ErrNoHashring", r, err)
	}
	var empty Hashrings
	if _, err := empty.Ring("a"); !errors.Is(err, ErrNoHashring) {
		t.Errorf("zero Hashrings: Ring = %v, want ErrNoHashring", err)
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = h.Ring("t-7") })
	if allocs != 0 {
		t.Errorf("Ring allocates %v times, want 0", allocs)
	}
}

// TestHashringsShuffleCache checks the cache of tenant rings: a ring is
// kept until CacheSize other tenants were used since, and a ring built
// again places series as before; concurrent callers get equal rings.
func TestHashringsShuffleCache(t *testing.T) {
	var eps []Endpoint
	for i := range 12 {
		eps = append(eps, Endpoint{Address: "node-" + strconv.Itoa(i), Zone: "az-" + strconv.Itoa(i%3)})
	}
	h := shuffleRing(t, eps, 3, ShuffleShardingConfig{ShardSize: 6, CacheSize: 2})
	ring := func(tenant string) *Ring {
		r, err := h.Ring(tenant)
		if err != nil {
			t.Fatalf("Ring(%s): %v", tenant, err)
		}
		return r
	}
	a := ring("a")
	if ring("a") != a {
		t.Fatalf("Ring(a) built again with nothing evicted")
	}
	ring("b")
	if ring("a") != a {
		t.Fatalf("Ring(a) built again within the cache size")
	}
	ring("b")
	ring("c") // evicts a, the least recently used
	a2 := ring("a")
	if a2 == a {
		t.Fatalf("Ring(a) kept past the cache size")
	}
	if a.Len() != 6 || a2.Len() != 6 {
		t.Fatalf("Ring(a).Len() = %d, %d, want 6 (2 per zone)", a.Len(), a2.Len())
	}
	for i := range a.Len() {
		if a.Endpoint(i) != a2.Endpoint(i) {
			t.Fatalf("Ring(a) built again has endpoint %d = %v, was %v", i, a2.Endpoint(i), a.Endpoint(i))
		}
	}
	var wg sync.WaitGroup
	rings := make([][]*Ring, 4)
	for g := range rings {
		wg.Go(func() {
			for i := range 50 {
				r, err := h.Ring("tenant-" + strconv.Itoa(i%5))
				if err != nil {
					t.Error(err)
					return
				}
				rings[g] = append(rings[g], r)
			}
		})
	}
	wg.Wait()
	for g := range rings {
		for i, r := range rings[g] {
			want := rings[0][i]
			for j := range r.Len() {
				if r.Endpoint(j) != want.Endpoint(j) {
					t.Fatalf("goroutine %d, call %d: endpoint %d = %v, want %v", g, i, j, r.Endpoint(j), want.Endpoint(j))
				}
			}
		}
	}
}

// TestHashringsSectionsPerNode checks that NewHashrings builds every ketama
// ring, shuffle-sharded tenant rings included, with Options.SectionsPerNode
// points per endpoint, placing series as NewRing with the same options and
// as the Thanos reference with that many sections; and with
// DefaultSectionsPerNode when it is zero.
func TestHashringsSectionsPerNode(t *testing.T) {
	var eps []Endpoint
	for i := range 6 {
		eps = append(eps, Endpoint{Address: "node-" + strconv.Itoa(i), Zone: "az-" + strconv.Itoa(i%3)})
	}
	cfg := []Config{
		{Tenants: []string{"plain"}, Endpoints: eps, Algorithm: AlgorithmKetama},
		{Endpoints: eps, Algorithm: AlgorithmKetama, ShuffleSharding: ShuffleShardingConfig{ShardSize: 3}},
	}
	for _, c := range []struct {
		name     string
		sections int
		want     int
	}{
		{"default", 0, DefaultSectionsPerNode},
		{"ten", 10, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{ReplicationFactor: 2, SectionsPerNode: c.sections}
			h, err := NewHashrings(cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, tenant := range []string{"plain", "sharded"} {
				r, err := h.Ring(tenant)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for range r.Sections() {
					n++
				}
				if n != r.Len()*c.want {
					t.Fatalf("Ring(%s) has %d points for %d endpoints, want %d each", tenant, n, r.Len(), c.want)
				}
			}
			r, _ := h.Ring("plain")
			ko := Options{Algorithm: AlgorithmKetama, ReplicationFactor: 2, SectionsPerNode: c.sections}
			direct := mustRing(t, eps, ko)
			ref := mustThanos(t, eps, ko)
			for _, hash := range ringMovementSeries(500) {
				got := ringAddrs(r, hash)
				if want := ringAddrs(direct, hash); !slices.Equal(got, want) {
					t.Fatalf("Ring(plain).Replicas(%#x) = %v, want NewRing's %v", hash, got, want)
				}
				for n, addr := range got {
					want, err := ref.getNHash(hash, uint64(n))
					if err != nil || addr != want {
						t.Fatalf("Ring(plain) replica %d of %#x = %s, want Thanos's %s (%v)", n, hash, addr, want, err)
					}
				}
			}
		})
	}
}
