package hashring

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	randv2 "math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// thanosShuffle is a deliberately literal transcription of Thanos's
// shuffleShardHashring.getTenantShard and getShardSize, as read in
// thanos-io/thanos pkg/receive/hashring.go at commit
// e103a81bd5943697394afcb4fb592b6ffa806c30, over the reference ring of
// hashring_test.go: nodes deduplicated through a map and sorted, zones as
// map keys, sections grouped per zone from the base ring's sorted sections,
// filepath.Match for globs, Cortex's md5 seed and math/rand. It returns the
// tenant's ring, built by the reference ketama, or an error.
func thanosShuffle(base *thanosRing, cfg ShuffleShardingConfig, rf int, tenant string) (*thanosRing, error) {
	shardSize := cfg.ShardSize
	for _, o := range cfg.Overrides {
		done := false
		switch o.TenantMatcher {
		case TenantMatchExact:
			if slices.Contains(o.Tenants, tenant) {
				shardSize, done = o.ShardSize, true
			}
		case TenantMatchGlob:
			for _, p := range o.Tenants {
				if m, err := filepath.Match(p, tenant); err == nil && m {
					shardSize, done = o.ShardSize, true
					break
				}
			}
		}
		if done {
			break
		}
	}
	unique := map[Endpoint]struct{}{}
	for _, e := range base.endpoints {
		unique[e] = struct{}{}
	}
	var nodes []Endpoint
	for e := range unique {
		nodes = append(nodes, e)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Address < nodes[j].Address })
	az := func(e Endpoint) string {
		if cfg.ZoneAwarenessDisabled {
			return ""
		}
		return e.Zone
	}
	nodesByAZ := map[string][]Endpoint{}
	for _, n := range nodes {
		nodesByAZ[az(n)] = append(nodesByAZ[az(n)], n)
	}
	sectionsByAZ := map[string][]*thanosSection{}
	for _, s := range base.sections {
		z := az(base.endpoints[s.endpoint])
		sectionsByAZ[z] = append(sectionsByAZ[z], s)
	}
	for z := range sectionsByAZ {
		sort.Slice(sectionsByAZ[z], func(i, j int) bool { return sectionsByAZ[z][i].hash < sectionsByAZ[z][j].hash })
	}
	take := shardSize
	if !cfg.ZoneAwarenessDisabled {
		take = int(math.Ceil(float64(shardSize) / float64(len(nodesByAZ))))
	}
	var final []Endpoint
	for z, azNodes := range nodesByAZ {
		if take > len(azNodes) {
			return nil, ErrShardSize
		}
		secs := sectionsByAZ[z]
		if len(secs) == 0 {
			continue
		}
		h := md5.New()
		h.Write([]byte(tenant))
		if z != "" {
			h.Write([]byte{0})
			h.Write([]byte(z))
		}
		r := rand.New(rand.NewSource(int64(binary.BigEndian.Uint64(h.Sum(nil)))))
		selected := map[uint64]struct{}{}
		for i := 0; i < take; i++ {
			pos := r.Uint64()
			start := sort.Search(len(secs), func(i int) bool { return secs[i].hash >= pos })
			if start == len(secs) {
				start = 0
			}
			for j := range len(secs) {
				s := secs[(start+j)%len(secs)]
				if _, ok := selected[s.endpoint]; ok {
					continue
				}
				selected[s.endpoint] = struct{}{}
				final = append(final, base.endpoints[s.endpoint])
				break
			}
		}
	}
	return newThanosKetama(final, DefaultSectionsPerNode, uint64(rf))
}

// TestHashringsShuffleDifferential compares the tenant rings of
// shuffle-sharded hashrings with the reference above, on random rings,
// zones, shard sizes and overrides, for many tenants: the same endpoints,
// and the same replicas for random series.
func TestHashringsShuffleDifferential(t *testing.T) {
	rng := randv2.New(randv2.NewPCG(17, 19))
	rings, tenants := 8, 12
	if testing.Short() {
		rings, tenants = 3, 6
	}
	checked, failed := 0, 0
	for i := range rings {
		zones := rng.IntN(4)
		eps := ringRandEndpoints(rng, 4+rng.IntN(10), zones)
		rf := 1 + rng.IntN(min(3, len(eps)))
		cfg := ShuffleShardingConfig{
			ShardSize:             1 + rng.IntN(len(eps)),
			ZoneAwarenessDisabled: rng.IntN(3) == 0,
			Overrides: []ShuffleShardingOverride{
				{ShardSize: 1 + rng.IntN(len(eps)), Tenants: []string{"big-*"}, TenantMatcher: TenantMatchGlob},
				{ShardSize: 1, Tenants: []string{"tenant-3"}, TenantMatcher: TenantMatchExact},
				{ShardSize: 1, Tenants: []string{"tenant-4"}}, // no matcher type: never applies, as in Thanos
			},
		}
		h, err := NewHashrings([]Config{{Endpoints: eps, Algorithm: AlgorithmKetama, ShuffleSharding: cfg}}, Options{ReplicationFactor: rf})
		base, refErr := newThanosKetama(eps, DefaultSectionsPerNode, uint64(rf))
		if errors.Is(refErr, errThanosHang) {
			if !errors.Is(err, ErrZoneCapacity) {
				t.Fatalf("ring %d: NewHashrings = %v, want ErrZoneCapacity", i, err)
			}
			continue
		}
		if err != nil || refErr != nil {
			t.Fatalf("ring %d %v: NewHashrings = %v, reference %v", i, eps, err, refErr)
		}
		for j := range tenants {
			tenant := "tenant-" + strconv.Itoa(j)
			if j%5 == 0 {
				tenant = "big-" + strconv.Itoa(j)
			}
			r, err := h.Ring(tenant)
			ref, refErr := thanosShuffle(base, cfg, rf, tenant)
			if refErr != nil {
				failed++
				switch {
				case errors.Is(refErr, errThanosHang):
					if !errors.Is(err, ErrZoneCapacity) {
						t.Fatalf("ring %d, %s: Ring = %v, reference never finishes", i, tenant, err)
					}
				case !errors.Is(err, refErr) && !(errors.Is(refErr, errThanosNodes) && errors.Is(err, ErrNotEnoughNodes)):
					t.Fatalf("ring %d, %s: Ring = %v, reference %v", i, tenant, err, refErr)
				}
				continue
			}
			if err != nil {
				t.Fatalf("ring %d %v %+v, %s: Ring = %v, reference built", i, eps, cfg, tenant, err)
			}
			var want []string
			for _, e := range ref.endpoints {
				want = append(want, e.Address)
			}
			slices.Sort(want)
			var got []string
			for k := range r.Len() {
				got = append(got, r.Endpoint(k).Address)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("ring %d %v %+v, %s: endpoints %q, reference %q", i, eps, cfg, tenant, got, want)
			}
			for range 50 {
				hash := rng.Uint64()
				for n, e := range r.Replicas(hash, nil) {
					if a, err := ref.getNHash(hash, uint64(n)); err != nil || a != r.Endpoint(e).Address {
						t.Fatalf("ring %d, %s: replica %d of %#x = %s, reference %s, %v", i, tenant, n, hash, r.Endpoint(e).Address, a, err)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d replicas checked, %d tenant rings refused by both", checked, failed)
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

// TestHashringsShuffleGolden pins the endpoints of a few tenants' shards
// (3 of 9 endpoints over 3 zones), so that a change to the selection or to
// the reference is seen. They were computed by the reference above, a
// transcription of Thanos, not by Thanos itself, whose tests pin no
// shard; Hashrings agrees.
func TestHashringsShuffleGolden(t *testing.T) {
	var eps []Endpoint
	for i := range 9 {
		eps = append(eps, Endpoint{Address: "thanos-receive-" + strconv.Itoa(i) + ":10901", Zone: "az-" + strconv.Itoa(i%3)})
	}
	for _, tc := range []struct {
		tenant   string
		disabled bool
		want     string
	}{
		{"team-a", false, "0,4,8"},
		{"team-b", false, "0,2,7"},
		{"team-a", true, "1,2,6"},
	} {
		cfg := ShuffleShardingConfig{ShardSize: 3, ZoneAwarenessDisabled: tc.disabled}
		h := shuffleRing(t, eps, 2, cfg)
		r, err := h.Ring(tc.tenant)
		if err != nil {
			t.Fatalf("Ring(%s): %v", tc.tenant, err)
		}
		var got []string
		for i := range r.Len() {
			got = append(got, strings.TrimSuffix(strings.TrimPrefix(r.Endpoint(i).Address, "thanos-receive-"), ":10901"))
		}
		base, _ := newThanosKetama(eps, DefaultSectionsPerNode, 2)
		ref, err := thanosShuffle(base, cfg, 2, tc.tenant)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, e := range ref.endpoints {
			want = append(want, strings.TrimSuffix(strings.TrimPrefix(e.Address, "thanos-receive-"), ":10901"))
		}
		slices.Sort(want)
		if g := strings.Join(got, ","); g != tc.want || g != strings.Join(want, ",") {
			t.Errorf("Ring(%s), zone awareness disabled %v: endpoints %s, reference %s, want %s", tc.tenant, tc.disabled, g, strings.Join(want, ","), tc.want)
		}
	}
}
