package hashring

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// TenantMatcher is how the tenants of a [Config] are matched, the
// "tenant_matcher_type" of a Thanos hashrings file. A TenantMatcher is
// an immutable string, safe for concurrent use.
type TenantMatcher string

const (
	// TenantMatchExact matches a tenant equal to one of the listed tenants.
	// It is the default: the empty TenantMatcher means it too.
	TenantMatchExact TenantMatcher = "exact"

	// TenantMatchGlob matches a tenant that one of the listed patterns
	// matches, with the syntax of [path.Match]: Thanos uses
	// filepath.Match, which is path.Match on Linux (on Windows its
	// separator is a backslash and it has no escapes), so "*" does not
	// match a "/".
	TenantMatchGlob TenantMatcher = "glob"
)

// Config is one hashring of a Thanos receive hashrings file
// (--receive.hashrings-file), with its field names in the JSON tags.
//
// A Config is a plain value; it is not safe for concurrent use by
// multiple goroutines while one of them modifies it.
type Config struct {
	// Name is the hashring's name, used only in errors.
	Name string `json:"hashring,omitempty"`

	// Tenants are the tenants the hashring takes, matched by
	// TenantMatcher. A hashring with no tenants takes every tenant that no
	// hashring before it took: it is a default hashring.
	Tenants []string `json:"tenants,omitempty"`

	// TenantMatcher is how Tenants are matched; empty means
	// [TenantMatchExact].
	TenantMatcher TenantMatcher `json:"tenant_matcher_type,omitempty"`

	// Endpoints are the receivers of the hashring. In the file each is a
	// string, the address, or an object with "address", "az" and
	// "capnproto_address" (see [Endpoint.UnmarshalJSON]).
	Endpoints []Endpoint `json:"endpoints"`

	// Algorithm is the hashring's placement algorithm; empty means the
	// [Options.Algorithm] given to [NewHashrings]. As in Thanos, an
	// unknown algorithm falls back to [AlgorithmHashmod].
	Algorithm Algorithm `json:"algorithm,omitempty"`

	// ExternalLabels are the labels Thanos adds to the TSDBs of the
	// hashring's tenants. Routing does not use them.
	ExternalLabels map[string]string `json:"external_labels,omitempty"`

	// ShuffleSharding, when its ShardSize is positive, gives each tenant
	// its own ketama ring over a subset of the endpoints.
	ShuffleSharding ShuffleShardingConfig `json:"shuffle_sharding_config,omitempty"`
}

// ShuffleShardingConfig is the "shuffle_sharding_config" of a Thanos
// hashring: each tenant is written to a ketama ring of its own over
// ShardSize of the hashring's endpoints, picked from the tenant's name so
// that every receiver picks the same ones.
//
// A ShuffleShardingConfig is a plain value; it is not safe for concurrent
// use by multiple goroutines while one of them modifies it.
type ShuffleShardingConfig struct {
	// ShardSize is the number of endpoints of each tenant's ring; zero or
	// less disables shuffle sharding. Unless ZoneAwarenessDisabled, the
	// endpoints are spread over the zones: ceil(ShardSize/zones) from each
	// zone, so a tenant's ring may hold more than ShardSize endpoints.
	ShardSize int `json:"shard_size"`

	// CacheSize is the number of tenants whose rings are kept, the least
	// recently used being dropped first; zero or less means 100, Thanos's
	// default. A tenant whose ring is not kept has it built again, which
	// takes time in proportion to its endpoints times
	// [DefaultSectionsPerNode] (BenchmarkNewRing).
	CacheSize int `json:"cache_size"`

	// ZoneAwarenessDisabled picks the ShardSize endpoints from all zones
	// as one. The tenant's ring still spreads replicas over the zones of
	// the endpoints it picked, as in Thanos.
	ZoneAwarenessDisabled bool `json:"zone_awareness_disabled"`

	// Overrides give some tenants another shard size. The first override
	// that matches the tenant applies.
	Overrides []ShuffleShardingOverride `json:"overrides,omitempty"`
}

// ShuffleShardingOverride is one of the "overrides" of a Thanos
// shuffle_sharding_config.
//
// A ShuffleShardingOverride is a plain value; it is not safe for concurrent
// use by multiple goroutines while one of them modifies it.
type ShuffleShardingOverride struct {
	// ShardSize replaces ShuffleShardingConfig.ShardSize for the tenants
	// matched.
	ShardSize int `json:"shard_size"`

	// Tenants are the tenants matched, by TenantMatcher.
	Tenants []string `json:"tenants,omitempty"`

	// TenantMatcher is how Tenants are matched. Unlike in
	// [Config], the empty TenantMatcher matches no tenant, as in
	// Thanos (whose overrides match only "exact" and "glob"): an override
	// without "tenant_matcher_type" never applies. A malformed glob
	// pattern matches no tenant either.
	TenantMatcher TenantMatcher `json:"tenant_matcher_type,omitempty"`
}

// UnmarshalJSON sets e from an endpoint of a Thanos hashrings file: either a
// string, the address, or an object with "address", "az" (the zone) and
// "capnproto_address". As in Thanos, the address must not be empty, and an
// unset capnproto_address defaults to the address's host with port 19391,
// Thanos's default Cap'n Proto port. It returns an error wrapping
// [ErrConfig] if the address is empty.
func (e *Endpoint) UnmarshalJSON(data []byte) error {
	var addr string
	if err := json.Unmarshal(data, &addr); err == nil {
		*e = Endpoint{Address: addr}
	} else {
		var obj struct {
			Address          string `json:"address"`
			AZ               string `json:"az"`
			CapNProtoAddress string `json:"capnproto_address"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return err
		}
		*e = Endpoint{Address: obj.Address, Zone: obj.AZ, CapNProtoAddress: obj.CapNProtoAddress}
	}
	if e.Address == "" {
		return fmt.Errorf("endpoint address must be set: %w", ErrConfig)
	}
	if e.CapNProtoAddress == "" {
		host, _, _ := strings.Cut(e.Address, ":")
		e.CapNProtoAddress = host + ":19391"
	}
	return nil
}

// MarshalJSON encodes e as an endpoint object of a Thanos hashrings file,
// with "address", "az" and "capnproto_address", as Thanos encodes it.
func (e Endpoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Address          string `json:"address"`
		CapNProtoAddress string `json:"capnproto_address"`
		AZ               string `json:"az"`
	}{e.Address, e.CapNProtoAddress, e.Zone})
}

// ParseConfig parses a Thanos receive hashrings file: a JSON array of
// [Config], one per hashring. Unknown fields are ignored, as Thanos
// ignores them. It returns an error wrapping [ErrConfig] if data is not
// such an array or the array is empty, which Thanos refuses to load too.
func ParseConfig(data []byte) ([]Config, error) {
	var cfg []Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parsing hashrings: %w: %w", ErrConfig, err)
	}
	if len(cfg) == 0 {
		return nil, fmt.Errorf("parsing hashrings: no hashring: %w", ErrConfig)
	}
	return cfg, nil
}

// Hashrings routes tenants to rings as Thanos receive does with a hashrings
// file: a tenant goes to the first hashring, in file order, whose tenants
// match it or which lists no tenants; a hashring with shuffle sharding gives
// it a ring of its own over a subset of its endpoints. Placement within the
// ring is then [Ring]'s, which is Thanos's.
//
// Thanos caches every tenant's hashring in a map that never shrinks;
// Hashrings finds it again on each call instead (a map lookup for exact
// tenants, [path.Match] per pattern for globs), with the same result, and
// keeps only shuffle-sharded rings, in a cache bounded by
// [ShuffleShardingConfig.CacheSize]. Memory: the rings, and up to
// CacheSize tenant rings per shuffle-sharded hashring (see [Ring]).
//
// A Hashrings is immutable, but for that cache: to change the hashrings,
// build a new one, as Thanos does on each reload of the file. The zero
// Hashrings routes no tenant.
//
// A Hashrings is safe for concurrent use by multiple goroutines.
type Hashrings struct {
	// Written by NewHashrings and read-only afterwards, but for the
	// shuffle caches, which guard themselves.
	rings     []tenantRing
	endpoints []Endpoint
}

// tenantRing is one hashring of a Hashrings.
type tenantRing struct {
	name     string
	matchAll bool                // no tenants: a default hashring
	exact    map[string]struct{} // exact tenants
	globs    []string            // glob patterns, in file order
	ring     *Ring
	shuffle  *shuffleShard // nil without shuffle sharding
}

// NewHashrings returns the routing of the hashrings of cfg, typically from
// [ParseConfig], with the settings of opts. It builds every ring with
// [NewRing] and returns an error wrapping NewRing's errors, or wrapping
// [ErrConfig] if a hashring has an unknown tenant matcher or a malformed
// glob pattern (Thanos loads such a file and then fails the writes of the
// tenants that reach it, or matches no tenant), or asks for shuffle
// sharding on a hashmod ring or for a shard larger than its endpoints,
// which Thanos refuses too. An empty cfg is
// valid: it routes no tenant. It returns an error wrapping
// [ErrUnknownAlgorithm] if opts.Algorithm is unknown. It panics if
// opts.ReplicationFactor or opts.SectionsPerNode is negative.
//
// NewHashrings retains neither cfg nor anything it points to.
func NewHashrings(cfg []Config, opts Options) (*Hashrings, error) {
	if opts.ReplicationFactor < 0 {
		panic("hashring: Options.ReplicationFactor is negative")
	}
	if opts.SectionsPerNode < 0 {
		panic("hashring: Options.SectionsPerNode is negative")
	}
	if opts.Algorithm != "" && opts.Algorithm != AlgorithmHashmod && opts.Algorithm != AlgorithmKetama {
		return nil, fmt.Errorf("building hashrings: algorithm %q: %w", opts.Algorithm, ErrUnknownAlgorithm)
	}
	rf := max(opts.ReplicationFactor, 1)
	h := &Hashrings{}
	for i, c := range cfg {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		t := tenantRing{name: name, matchAll: len(c.Tenants) == 0}
		switch c.TenantMatcher {
		case "", TenantMatchExact:
			t.exact = make(map[string]struct{}, len(c.Tenants))
			for _, tenant := range c.Tenants {
				t.exact[tenant] = struct{}{}
			}
		case TenantMatchGlob:
			for _, p := range c.Tenants {
				if _, err := path.Match(p, ""); err != nil {
					return nil, fmt.Errorf("building hashring %s: tenant pattern %q: %w: %w", name, p, ErrConfig, err)
				}
			}
			t.globs = slices.Clone(c.Tenants)
		default:
			return nil, fmt.Errorf("building hashring %s: tenant matcher %q: %w", name, c.TenantMatcher, ErrConfig)
		}
		algo := c.Algorithm
		if algo == "" {
			algo = opts.Algorithm
		}
		if algo != AlgorithmKetama {
			// Thanos falls back to hashmod for an unknown algorithm.
			algo = AlgorithmHashmod
		}
		ring, err := NewRing(c.Endpoints, Options{Algorithm: algo, ReplicationFactor: rf, SectionsPerNode: opts.SectionsPerNode})
		if err != nil {
			return nil, fmt.Errorf("building hashring %s: %w", name, err)
		}
		t.ring = ring
		if ss := c.ShuffleSharding; ss.ShardSize > 0 {
			if algo != AlgorithmKetama {
				return nil, fmt.Errorf("building hashring %s: shuffle sharding needs the ketama algorithm: %w", name, ErrConfig)
			}
			if ss.ShardSize > ring.Len() {
				return nil, fmt.Errorf("building hashring %s: shard size %d is larger than its %d endpoints: %w", name, ss.ShardSize, ring.Len(), ErrConfig)
			}
			t.shuffle = newShuffleShard(ring, ss, opts.SectionsPerNode)
		}
		h.rings = append(h.rings, t)
		h.endpoints = append(h.endpoints, ring.endpoints...)
	}
	slices.SortStableFunc(h.endpoints, func(a, b Endpoint) int { return strings.Compare(a.Address, b.Address) })
	return h, nil
}

// Ring returns the ring that places the series of tenant: the ring of the
// first hashring that takes tenant, or, for a hashring with shuffle
// sharding, tenant's own ring over some of its endpoints, built on first
// use. The caller places each series with [Ring.Replicas] or [Ring.Replica]
// from its routing hash for the same tenant ([Hash], or package ingest's
// Series.ThanosHash).
//
// It returns an error wrapping [ErrNoHashring] if no hashring takes tenant,
// as Thanos's "no matching hashring to handle tenant", and for shuffle
// sharding an error wrapping [ErrShardSize] if a zone has fewer endpoints
// than the tenant's shard takes from it, or NewRing's errors if its ring
// cannot be built, all of which Thanos returns for each write of the
// tenant. A receiver fails the write with 500 Internal Server Error, as
// Thanos does.
//
// Ring makes no allocation but when it builds a shuffle-sharded ring.
func (h *Hashrings) Ring(tenant string) (*Ring, error) {
	for i := range h.rings {
		t := &h.rings[i]
		if !t.matches(tenant) {
			continue
		}
		if t.shuffle != nil {
			return t.shuffle.ring(tenant)
		}
		return t.ring, nil
	}
	return nil, ErrNoHashring
}

func (t *tenantRing) matches(tenant string) bool {
	if t.matchAll {
		return true
	}
	if _, ok := t.exact[tenant]; ok {
		return true
	}
	for _, p := range t.globs {
		// The patterns were checked by NewHashrings: no error.
		if ok, _ := path.Match(p, tenant); ok {
			return true
		}
	}
	return false
}

// Endpoints returns the endpoints of every hashring, sorted by address, in
// a new slice: an endpoint of several hashrings appears once for each, as
// in Thanos's Nodes.
func (h *Hashrings) Endpoints() []Endpoint { return slices.Clone(h.endpoints) }
