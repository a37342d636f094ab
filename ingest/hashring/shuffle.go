package hashring

import (
	"container/list"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"path"
	"slices"
	"sort"
	"sync"
)

// DefaultShuffleShardingCacheSize is the number of tenant rings a
// shuffle-sharded hashring keeps when [ShuffleShardingConfig.CacheSize] is
// zero or less: 100, as in Thanos.
const DefaultShuffleShardingCacheSize = 100

// shuffleShard gives each tenant of a ketama hashring a ring of its own, as
// Thanos's shuffleShardHashring does: per zone, the tenant's name seeds a
// math/rand generator (md5 of the tenant, then a zero byte and the zone if
// the zone is not empty, its first 8 bytes big-endian, as Cortex's
// ShuffleShardSeed), each draw is a position on the circle of the zone's
// points of the base ring, and the first endpoint at or after it that is
// not yet taken joins the tenant's ring. Adding an endpoint to the base
// ring changes a tenant's endpoints by at most one in most cases (Thanos's
// TestShuffleShardHashringStability). The tenant's ring is a ketama ring
// over those endpoints with the base ring's replication factor and
// [Options.SectionsPerNode] points each.
//
// A shuffleShard is safe for concurrent use by multiple goroutines.
type shuffleShard struct {
	// Written by newShuffleShard and read-only afterwards.
	rf        int
	shardSize int
	overrides []ShuffleShardingOverride
	disabled  bool // zone awareness disabled: one zone of every endpoint
	endpoints []Endpoint
	zones     []shuffleZone // sorted by name
	cacheSize int
	sections  int // Options.SectionsPerNode of the tenant rings

	mu    sync.Mutex
	cache map[string]*list.Element // guarded by mu; values are *shuffleEntry
	lru   list.List                // guarded by mu; most recently used first
}

// shuffleZone is one zone of a shuffle-sharded hashring: the points of its
// endpoints on the base ring, in ascending order, and each point's endpoint.
type shuffleZone struct {
	name      string // "" when zone awareness is disabled
	endpoints int
	points    []uint64
	owners    []uint32 // indexes into shuffleShard.endpoints
}

type shuffleEntry struct {
	tenant string
	ring   *Ring
}

func newShuffleShard(base *Ring, cfg ShuffleShardingConfig, sections int) *shuffleShard {
	s := &shuffleShard{
		rf:        base.rf,
		shardSize: cfg.ShardSize,
		disabled:  cfg.ZoneAwarenessDisabled,
		endpoints: base.endpoints,
		cacheSize: cfg.CacheSize,
		sections:  sections,
		cache:     make(map[string]*list.Element),
	}
	if s.cacheSize <= 0 {
		s.cacheSize = DefaultShuffleShardingCacheSize
	}
	for _, o := range cfg.Overrides {
		o.Tenants = slices.Clone(o.Tenants)
		s.overrides = append(s.overrides, o)
	}
	zoneOf := func(e Endpoint) string {
		if s.disabled {
			return ""
		}
		return e.Zone
	}
	idx := map[string]int{}
	for _, e := range base.endpoints {
		z := zoneOf(e)
		if _, ok := idx[z]; !ok {
			idx[z] = len(s.zones)
			s.zones = append(s.zones, shuffleZone{name: z})
		}
		s.zones[idx[z]].endpoints++
	}
	for p, e := range base.Sections() {
		z := &s.zones[idx[zoneOf(base.endpoints[e])]]
		z.points = append(z.points, p)
		z.owners = append(z.owners, uint32(e))
	}
	slices.SortFunc(s.zones, func(a, b shuffleZone) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	return s
}

// ring returns tenant's ring, from the cache or built and cached.
func (s *shuffleShard) ring(tenant string) (*Ring, error) {
	s.mu.Lock()
	if el, ok := s.cache[tenant]; ok {
		s.lru.MoveToFront(el)
		r := el.Value.(*shuffleEntry).ring
		s.mu.Unlock()
		return r, nil
	}
	s.mu.Unlock()

	// Built outside the lock: two goroutines may build the same ring, and
	// the second keeps the first's.
	r, err := s.build(tenant)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.cache[tenant]; ok {
		s.lru.MoveToFront(el)
		return el.Value.(*shuffleEntry).ring, nil
	}
	s.cache[tenant] = s.lru.PushFront(&shuffleEntry{tenant: tenant, ring: r})
	if s.lru.Len() > s.cacheSize {
		old := s.lru.Remove(s.lru.Back()).(*shuffleEntry)
		delete(s.cache, old.tenant)
	}
	return r, nil
}

// size returns tenant's shard size: that of the first override that
// matches it, else the hashring's.
func (s *shuffleShard) size(tenant string) int {
	for _, o := range s.overrides {
		switch o.TenantMatcher {
		case TenantMatchExact:
			if slices.Contains(o.Tenants, tenant) {
				return o.ShardSize
			}
		case TenantMatchGlob:
			for _, p := range o.Tenants {
				if ok, err := path.Match(p, tenant); err == nil && ok {
					return o.ShardSize
				}
			}
		}
	}
	return s.shardSize
}

// seed is Cortex's ShuffleShardSeed, which Thanos uses.
func shuffleSeed(tenant, zone string) int64 {
	h := md5.New()
	_, _ = h.Write([]byte(tenant))
	if zone != "" {
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(zone))
	}
	var sum [md5.Size]byte
	return int64(binary.BigEndian.Uint64(h.Sum(sum[:0])))
}

// build picks tenant's endpoints and builds its ring.
func (s *shuffleShard) build(tenant string) (*Ring, error) {
	size := s.size(tenant)
	take := size
	if !s.disabled {
		// Cortex's ShuffleShardExpectedInstancesPerZone, in floating
		// point as there.
		take = int(math.Ceil(float64(size) / float64(len(s.zones))))
	}
	for _, z := range s.zones {
		if take > z.endpoints {
			return nil, fmt.Errorf("shard size %d is larger than the %d endpoints of zone %q: %w", size, z.endpoints, z.name, ErrShardSize)
		}
	}
	var picked []Endpoint
	taken := make([]bool, len(s.endpoints))
	for _, z := range s.zones {
		if len(z.points) == 0 {
			continue
		}
		rng := rand.New(rand.NewSource(shuffleSeed(tenant, z.name)))
		for range take {
			pos := rng.Uint64()
			start := sort.Search(len(z.points), func(i int) bool { return z.points[i] >= pos })
			for j := range len(z.points) {
				e := z.owners[(start+j)%len(z.points)]
				if !taken[e] {
					taken[e] = true
					picked = append(picked, s.endpoints[e])
					break
				}
			}
		}
	}
	r, err := NewRing(picked, Options{Algorithm: AlgorithmKetama, ReplicationFactor: s.rf, SectionsPerNode: s.sections})
	if err != nil {
		return nil, fmt.Errorf("building the shuffle-sharded ring of tenant %q: %w", tenant, err)
	}
	return r, nil
}
