package hashring

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The tests in this file port those of Thanos receive's hashrings, from
// thanos-io/thanos pkg/receive/hashring_test.go at commit
// e103a81bd5943697394afcb4fb592b6ffa806c30, with their inputs and expected
// values: the hashrings (through NewHashrings, as Thanos's through
// NewMultiHashring), the series (hashed with thanosHash, Thanos's
// labelpb.HashWithPrefix over the labels in request order) and the nodes
// Thanos's tests expect.

// thanosReplica is GetN(tenant, series, n) of Thanos's multi-hashring.
func thanosReplica(h *Hashrings, tenant string, series []thanosLabel, n int) (Endpoint, error) {
	r, err := h.Ring(tenant)
	if err != nil {
		return Endpoint{}, err
	}
	i, err := r.Replica(thanosHash(tenant, series), n)
	if err != nil {
		return Endpoint{}, err
	}
	return r.Endpoint(i), nil
}

// TestHashringsThanosGet ports TestHashringGet: hashmod rings built with a
// replication factor of 3, most of one endpoint, and the node of replica 0.
// Before NewRing built hashmod rings smaller than the replication factor,
// every case failed to build.
func TestHashringsThanosGet(t *testing.T) {
	series := []thanosLabel{{"foo", "bar"}, {"baz", "qux"}}
	eps := ringEndpoints
	for _, tc := range []struct {
		name   string
		cfg    []Config
		nodes  []string // nil: an error
		tenant string
	}{
		{"empty", nil, nil, "tenant1"},
		{"simple", []Config{{Endpoints: eps("node1")}}, []string{"node1"}, ""},
		{"specific", []Config{
			{Endpoints: eps("node2"), Tenants: []string{"tenant2"}},
			{Endpoints: eps("node1")},
		}, []string{"node2"}, "tenant2"},
		{"many tenants", []Config{
			{Endpoints: eps("node1"), Tenants: []string{"tenant1"}},
			{Endpoints: eps("node2"), Tenants: []string{"tenant2"}},
			{Endpoints: eps("node3"), Tenants: []string{"tenant3"}},
		}, []string{"node1"}, "tenant1"},
		{"many tenants error", []Config{
			{Endpoints: eps("node1"), Tenants: []string{"tenant1"}},
			{Endpoints: eps("node2"), Tenants: []string{"tenant2"}},
			{Endpoints: eps("node3"), Tenants: []string{"tenant3"}},
		}, nil, "tenant4"},
		{"many nodes", []Config{
			{Endpoints: eps("node1", "node2", "node3"), Tenants: []string{"tenant1"}},
			{Endpoints: eps("node4", "node5", "node6")},
		}, []string{"node1", "node2", "node3"}, "tenant1"},
		{"many nodes default", []Config{
			{Endpoints: eps("node1", "node2", "node3"), Tenants: []string{"tenant1"}},
			{Endpoints: eps("node4", "node5", "node6")},
		}, []string{"node4", "node5", "node6"}, ""},
		{"glob hashring match", []Config{
			{Endpoints: eps("node1", "node2", "node3"), Tenants: []string{"prefix*"}, TenantMatcher: TenantMatchGlob},
			{Endpoints: eps("node4", "node5", "node6")},
		}, []string{"node1", "node2", "node3"}, "prefix-1"},
		{"glob hashring not match", []Config{
			{Endpoints: eps("node1", "node2", "node3"), Tenants: []string{"prefix*"}, TenantMatcher: TenantMatchGlob},
			{Endpoints: eps("node4", "node5", "node6")},
		}, []string{"node4", "node5", "node6"}, "suffix-1"},
		{"glob hashring multiple matches", []Config{
			{Endpoints: eps("node1", "node2", "node3"), Tenants: []string{"t1-*", "t2", "t3-*"}, TenantMatcher: TenantMatchGlob},
			{Endpoints: eps("node4", "node5", "node6")},
		}, []string{"node1", "node2", "node3"}, "t2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHashrings(tc.cfg, Options{Algorithm: AlgorithmHashmod, ReplicationFactor: 3})
			if err != nil {
				t.Fatalf("NewHashrings: %v", err)
			}
			e, err := thanosReplica(h, tc.tenant, series, 0)
			if tc.nodes == nil {
				if err == nil {
					t.Fatalf("GetN(%q, 0) = %v, want an error", tc.tenant, e)
				}
				return
			}
			if err != nil || !slices.Contains(tc.nodes, e.Address) {
				t.Fatalf("GetN(%q, 0) = %v, %v, want one of %q", tc.tenant, e, err, tc.nodes)
			}
		})
	}
}

// TestHashringsThanosBadKetama ports TestKetamaHashringBadConfigIsRejected:
// a ketama ring of one endpoint for two replicas.
func TestHashringsThanosBadKetama(t *testing.T) {
	cfg := []Config{{Endpoints: ringEndpoints("node-1"), Algorithm: AlgorithmKetama}}
	if _, err := NewHashrings(cfg, Options{ReplicationFactor: 2}); !errors.Is(err, ErrNotEnoughNodes) {
		t.Fatalf("NewHashrings = %v, want ErrNotEnoughNodes", err)
	}
}

// TestHashringsThanosInvalidAZ ports TestInvalidAZHashringCfg: zones on a
// hashmod ring.
func TestHashringsThanosInvalidAZ(t *testing.T) {
	cfg := []Config{{Endpoints: []Endpoint{{Address: "a", Zone: "1"}, {Address: "b", Zone: "2"}}}}
	if _, err := NewHashrings(cfg, Options{Algorithm: AlgorithmHashmod, ReplicationFactor: 2}); !errors.Is(err, ErrZonesHashmod) {
		t.Fatalf("NewHashrings = %v, want ErrZonesHashmod", err)
	}
}

func zoneEndpoints(kv ...string) []Endpoint {
	var eps []Endpoint
	for i := 0; i < len(kv); i += 2 {
		eps = append(eps, Endpoint{Address: kv[i], Zone: kv[i+1]})
	}
	return eps
}

// TestRingThanosEvenAZSpread ports TestKetamaHashringEvenAZSpread: the
// replicas of one series are in min(replicas, zones) zones, evenly.
func TestRingThanosEvenAZSpread(t *testing.T) {
	series := []thanosLabel{{"foo", "bar"}}
	for _, tc := range []struct {
		nodes    []Endpoint
		replicas int
	}{
		{zoneEndpoints("a", "1", "b", "2", "c", "1", "d", "2"), 1},
		{ringEndpoints("a", "b", "c", "d"), 1},
		{zoneEndpoints("a", "1", "b", "2", "c", "1", "d", "2"), 2},
		{zoneEndpoints("a", "1", "b", "2", "c", "3", "d", "1", "e", "2", "f", "3"), 3},
		{ringEndpoints("a", "b", "c", "d", "e", "f", "g"), 3},
		{zoneEndpoints("a", "1", "b", "2", "c", "3", "d", "1", "e", "2", "f", "3", "g", "4", "h", "4", "i", "4", "j", "5", "k", "5", "l", "5"), 10},
	} {
		t.Run(fmt.Sprintf("nodes=%d/replicas=%d", len(tc.nodes), tc.replicas), func(t *testing.T) {
			r := mustRing(t, tc.nodes, Options{Algorithm: AlgorithmKetama, ReplicationFactor: tc.replicas})
			zones := map[string]bool{}
			for _, e := range tc.nodes {
				zones[e.Zone] = true
			}
			spread := map[string]int{}
			for n := range tc.replicas {
				i, err := r.Replica(thanosHash("default-tenant", series), n)
				if err != nil {
					t.Fatalf("Replica(%d): %v", n, err)
				}
				spread[r.Endpoint(i).Zone]++
			}
			if got, want := len(spread), min(tc.replicas, len(zones)); got != want {
				t.Fatalf("replicas in %d zones %v, want %d", got, spread, want)
			}
			least := math.MaxInt
			for _, c := range spread {
				least = min(least, c)
			}
			for z, c := range spread {
				if c-least > 1 {
					t.Errorf("zone %s holds %d replicas, the least used %d", z, c, least)
				}
			}
		})
	}
}

// TestRingThanosEvenNodeSpread ports TestKetamaHashringEvenNodeSpread:
// every endpoint holds within 10% of its share of the replicas.
func TestRingThanosEvenNodeSpread(t *testing.T) {
	for _, tc := range []struct {
		nodes     []Endpoint
		replicas  int
		numSeries int
	}{
		{zoneEndpoints("a", "1", "b", "2", "c", "1", "d", "2"), 2, 1000},
		{ringEndpoints("a", "b", "c", "d"), 2, 1000},
		{zoneEndpoints("a", "1", "b", "2", "c", "3", "d", "2", "e", "1", "f", "3"), 3, 10000},
		{zoneEndpoints("a", "1", "b", "2", "c", "3", "d", "2", "e", "1", "f", "3", "g", "1", "h", "2", "i", "3"), 2, 10000},
		{zoneEndpoints("a", "1", "b", "2", "c", "3", "d", "2", "e", "1", "f", "3", "g", "1", "h", "2", "i", "3"), 9, 10000},
	} {
		t.Run(fmt.Sprintf("nodes=%d/replicas=%d", len(tc.nodes), tc.replicas), func(t *testing.T) {
			r := mustRing(t, tc.nodes, Options{Algorithm: AlgorithmKetama, ReplicationFactor: tc.replicas})
			optimal := tc.numSeries * tc.replicas / len(tc.nodes)
			spread := map[string]int{}
			var dst []int
			for i := range tc.numSeries {
				dst = r.Replicas(thanosHash("default-tenant", []thanosLabel{{"foo", strconv.Itoa(i)}}), dst[:0])
				for _, e := range dst {
					spread[r.Endpoint(e).Address]++
				}
			}
			for a, n := range spread {
				if diff := math.Abs(float64(n - optimal)); diff/float64(optimal) >= 0.1 {
					t.Errorf("endpoint %s holds %d replicas, optimal %d", a, n, optimal)
				}
			}
		})
	}
}

// shuffleRing builds the shuffle-sharded hashring of Thanos's shuffle tests:
// one ketama hashring over eps.
func shuffleRing(t testing.TB, eps []Endpoint, rf int, cfg ShuffleShardingConfig) *Hashrings {
	t.Helper()
	h, err := NewHashrings([]Config{{Endpoints: eps, Algorithm: AlgorithmKetama, ShuffleSharding: cfg}}, Options{ReplicationFactor: rf})
	if err != nil {
		t.Fatalf("NewHashrings: %v", err)
	}
	return h
}

// TestHashringsThanosShuffleShard ports TestShuffleShardHashring: how many
// endpoints the primary replicas of a tenant's series use, and that the
// tenant always gets the same ones.
func TestHashringsThanosShuffleShard(t *testing.T) {
	six := zoneEndpoints("node-1", "az-1", "node-2", "az-1", "node-3", "az-2", "node-4", "az-2", "node-5", "az-3", "node-6", "az-3")
	for _, tc := range []struct {
		name      string
		endpoints []Endpoint
		tenant    string
		cfg       ShuffleShardingConfig
		err       error
		usedNodes int
	}{
		{"ketama with shuffle sharding", six, "tenant-1", ShuffleShardingConfig{
			ShardSize: 2,
			Overrides: []ShuffleShardingOverride{{Tenants: []string{"special-tenant"}, ShardSize: 2}},
		}, nil, 3},
		{"ketama with glob tenant override", six, "prefix-tenant", ShuffleShardingConfig{
			ShardSize: 2,
			Overrides: []ShuffleShardingOverride{{Tenants: []string{"prefix*"}, ShardSize: 3, TenantMatcher: TenantMatchGlob}},
		}, nil, 3},
		{"big shard size", six, "prefix-tenant", ShuffleShardingConfig{
			ShardSize: 2,
			Overrides: []ShuffleShardingOverride{{Tenants: []string{"prefix*"}, ShardSize: 20, TenantMatcher: TenantMatchGlob}},
		}, ErrShardSize, 0},
		{"zone awareness disabled", zoneEndpoints("node-1", "az-1", "node-2", "az-1", "node-3", "az-2", "node-4", "az-2", "node-5", "az-2", "node-6", "az-2", "node-7", "az-3", "node-8", "az-3"),
			"prefix-tenant", ShuffleShardingConfig{
				ShardSize:             1,
				ZoneAwarenessDisabled: true,
				Overrides:             []ShuffleShardingOverride{{Tenants: []string{"prefix*"}, ShardSize: 3, TenantMatcher: TenantMatchGlob}},
			}, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := shuffleRing(t, tc.endpoints, 2, tc.cfg)
			used := map[string]bool{}
			for i := range 100 {
				e, err := thanosReplica(h, tc.tenant, []thanosLabel{{"iteration", strconv.Itoa(i)}}, 0)
				if tc.err != nil {
					if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), "shard size 20") {
						t.Fatalf("GetN = %v, %v, want %v", e, err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatalf("GetN: %v", err)
				}
				used[e.Address] = true
			}
			if len(used) != tc.usedNodes {
				t.Fatalf("series used %d nodes %v, want %d", len(used), used, tc.usedNodes)
			}
			for trial := range 50 {
				got := map[string]bool{}
				for i := range 10 + trial {
					e, err := thanosReplica(h, tc.tenant, []thanosLabel{{"iteration", strconv.Itoa(i)}, {"trial", strconv.Itoa(trial)}}, 0)
					if err != nil {
						t.Fatalf("GetN: %v", err)
					}
					got[e.Address] = true
				}
				for a := range got {
					if !used[a] {
						t.Fatalf("trial %d used node %s, outside the tenant's %v", trial, a, used)
					}
				}
				if len(got) != len(used) {
					t.Fatalf("trial %d used nodes %v, want %v", trial, got, used)
				}
			}
		})
	}
}

// TestHashringsThanosShuffleShardStability ports
// TestShuffleShardHashringStability: adding or removing one of 10 or 20
// endpoints changes at most one endpoint of any of 100 tenants' shards of 5.
func TestHashringsThanosShuffleShardStability(t *testing.T) {
	for _, tc := range []struct {
		name              string
		initial, scaled   int
		shardSize, tenant int
	}{
		{"scale up 10 to 11, shard size 5", 10, 11, 5, 100},
		{"scale up 20 to 21, shard size 5", 20, 21, 5, 100},
		{"scale down 11 to 10, shard size 5", 11, 10, 5, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := func(n int) []Endpoint {
				var eps []Endpoint
				for i := range n {
					eps = append(eps, Endpoint{Address: "node-" + strconv.Itoa(i)})
				}
				return eps
			}
			cfg := ShuffleShardingConfig{ShardSize: tc.shardSize, ZoneAwarenessDisabled: true}
			before := shuffleRing(t, nodes(tc.initial), 1, cfg)
			after := shuffleRing(t, nodes(tc.scaled), 1, cfg)
			for i := range tc.tenant {
				tenant := "tenant-" + strconv.Itoa(i)
				a := shuffleTenantNodes(t, before, tenant, tc.shardSize)
				b := shuffleTenantNodes(t, after, tenant, tc.shardSize)
				added, removed := 0, 0
				for n := range b {
					if !a[n] {
						added++
					}
				}
				for n := range a {
					if !b[n] {
						removed++
					}
				}
				if max(added, removed) > 1 {
					t.Errorf("tenant %s: shard %v became %v", tenant, a, b)
				}
			}
		})
	}
}

// shuffleTenantNodes is Thanos's getTenantNodes: the nodes that 200 series
// of tenant use as primary replica, which must be shardSize.
func shuffleTenantNodes(t *testing.T, h *Hashrings, tenant string, shardSize int) map[string]bool {
	t.Helper()
	nodes := map[string]bool{}
	for i := range 200 {
		e, err := thanosReplica(h, tenant, []thanosLabel{{"series", strconv.Itoa(i)}}, 0)
		if err != nil {
			t.Fatalf("GetN(%s): %v", tenant, err)
		}
		nodes[e.Address] = true
	}
	if len(nodes) != shardSize {
		t.Fatalf("tenant %s uses %d nodes %v, want %d", tenant, len(nodes), nodes, shardSize)
	}
	return nodes
}
