package hashring

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Algorithm is how a [Ring] places series on endpoints. The values are
// the names of the --receive.hashrings-algorithm setting of Thanos receive
// and of the "algorithm" field of its hashrings file. A Algorithm is
// an immutable string, safe for concurrent use.
type Algorithm string

const (
	// AlgorithmHashmod places replica n of a series with hash h on endpoint
	// (h+n) mod N of the N endpoints sorted by address. Adding an endpoint
	// moves almost every series.
	AlgorithmHashmod Algorithm = "hashmod"

	// AlgorithmKetama places series by consistent hashing with
	// [Options.SectionsPerNode] points per endpoint, spreading the
	// replicas of each series over zones. Adding one endpoint to N moves
	// about 1/(N+1) of the series.
	AlgorithmKetama Algorithm = "ketama"
)

// DefaultSectionsPerNode is the number of points each endpoint has on a
// ketama ring when [Options.SectionsPerNode] is zero: 1000, the
// SectionsPerNode constant of Thanos receive, which production Thanos rings
// always use. Series placement depends on it.
const DefaultSectionsPerNode = 1000

// Endpoint is a receiver in a [Ring].
//
// An Endpoint is a plain value, safe for concurrent use by multiple
// goroutines once nothing modifies it.
type Endpoint struct {
	// Address identifies the endpoint and is what ketama hashes: the
	// "address" of an endpoint in a Thanos hashrings file. It must be
	// non-empty and unique within a ring.
	Address string

	// Zone is the endpoint's availability zone, the "az" of Thanos. Ketama
	// spreads replicas over zones; hashmod accepts no zones. When any
	// endpoint has a zone, the empty zone counts as one more zone.
	Zone string

	// CapNProtoAddress is the endpoint's "capnproto_address" in a Thanos
	// hashrings file, where Thanos receive takes Cap'n Proto replication.
	// Placement does not use it.
	CapNProtoAddress string
}

// Options are the settings of a [Ring], and those of [Hashrings] that
// Thanos receive takes from its flags rather than from the hashrings file.
// The zero value of each field means its documented default, which is
// Thanos receive's default.
//
// An Options is a plain value that [NewRing] and [NewHashrings] copy; it is
// not safe for concurrent use by multiple goroutines while one of them
// modifies it.
type Options struct {
	// Algorithm is the placement algorithm, Thanos's
	// --receive.hashrings-algorithm. Empty means [AlgorithmHashmod]. For
	// [NewHashrings] it is the algorithm of the hashrings that name none.
	Algorithm Algorithm

	// ReplicationFactor is how many endpoints each series is written to,
	// Thanos's --receive.replication-factor, the same for every hashring.
	// Zero means 1.
	ReplicationFactor int

	// SectionsPerNode is the number of points each endpoint has on a
	// ketama ring, including the rings of shuffle-sharded tenants; it is
	// ignored by hashmod. Zero means [DefaultSectionsPerNode]. Only that
	// value places series as Thanos receive does in production; other
	// values exist to reproduce Thanos's own tests, which use 10.
	SectionsPerNode int
}

// Ring maps the routing hash of a series to the endpoints that store its
// replicas, as the hashmod and ketama hashrings of Thanos receive do, with
// the same placement: for the same endpoints, replication factor and
// sections per node, every series is placed on the same endpoints in the
// same replica order.
//
// The routing hash is what Thanos receive hashes, labelpb.HashWithPrefix
// with the tenant as prefix: xxhash64 over "tenant 0xff name 0xff value
// 0xff ..." of the series' labels in the order the request holds them.
// [Hash] computes it from a labels.Labels; package ingest's decoder
// computes exactly that in its decoding pass (Series.ThanosHash), and
// package labels' HashedBuilder from pairs (HashedBuilder.ThanosHash). Their
// TenantHash methods hash the labels sorted by name instead; the two differ only for a
// series whose labels the request holds out of order, which remote write
// forbids and Thanos's TSDB writer rejects, but only after routing it by the
// request-order hash, so a receiver that forwards such series as Thanos
// does routes by ThanosHash.
// Thanos hashes the series again for each replica, always the same bytes; a
// Ring takes the hash once and returns all replicas from it.
//
// Placement, with the endpoints sorted by address (byte-wise) and numbered
// from 0 in that order, whatever order they were given in:
//
//   - hashmod: replica n (from 0) of hash h is endpoint (h+n) mod N, where
//     h+n wraps around at 2^64 as a uint64 does.
//   - ketama: each endpoint has S points (sections) on a circle of uint64
//     values, at xxhash64 of its address, a colon and k in decimal, for k
//     from 1 to S ("10.0.0.1:10901:1"). A series starts at the first point
//     whose value is >= h, or at the lowest point if there is none, and
//     walks up the circle, wrapping around. Each endpoint met is taken as
//     the next replica unless it has been taken already, or the endpoints
//     span more than one zone and the endpoint's zone holds more replicas
//     than the zone holding the fewest (zones with no replica count). So,
//     when there are at least as many zones as replicas, no two replicas
//     share a zone; with fewer zones, replicas are spread over all zones
//     and no zone holds two more than another.
//
// A Ring is immutable: to change the endpoints, build a new one. It
// retains neither the endpoints slice nor the options passed to [NewRing].
// Memory: the sorted endpoints; for ketama also at most
// 12+4*ReplicationFactor bytes per point, so 24 KB per endpoint at 3
// replicas and 1000 points.
//
// The zero Ring has no endpoints and a replication factor of 0: its
// Replicas appends nothing.
//
// A Ring is safe for concurrent use by multiple goroutines.
type Ring struct {
	// All fields are written only by NewRing and read-only afterwards.
	endpoints []Endpoint // sorted by Address
	rf        int
	ketama    bool

	// ketama only. points holds the section hashes in ascending order;
	// owners[i*rf:(i+1)*rf] holds the replicas, as indexes into endpoints,
	// of a series whose walk starts at points[i]. The walk depends only on
	// where it starts, so it is done once per point here rather than once
	// per series.
	points []uint64
	owners []uint32

	// ketama only. An index that narrows the search: firstPoint[b] is the
	// index of the first point p with p>>shift >= b, and its last entry is
	// len(points).
	firstPoint []uint32
	shift      uint
}

// NewRing returns a ring over endpoints with the settings of opts. Endpoints
// may be given in any order. It returns an error wrapping
// [ErrUnknownAlgorithm], [ErrBadEndpoint], [ErrNotEnoughNodes],
// [ErrZonesHashmod] or [ErrZoneCapacity] if the settings are invalid or a
// ketama ring cannot place opts.ReplicationFactor replicas of every series.
// As in Thanos, a hashmod ring may have fewer endpoints than its
// replication factor, or none: it is built, and the replicas it lacks fail
// (see [Ring.Replica]); a ketama ring may not ([ErrNotEnoughNodes]). It
// panics if opts.ReplicationFactor or opts.SectionsPerNode is negative.
//
// Building a ketama ring takes time and memory in proportion to the number
// of points, endpoints times SectionsPerNode (BenchmarkNewRing, rings of 6
// and of 60 endpoints).
func NewRing(endpoints []Endpoint, opts Options) (*Ring, error) {
	if opts.ReplicationFactor < 0 {
		panic("hashring: Options.ReplicationFactor is negative")
	}
	if opts.SectionsPerNode < 0 {
		panic("hashring: Options.SectionsPerNode is negative")
	}
	if opts.Algorithm != "" && opts.Algorithm != AlgorithmHashmod && opts.Algorithm != AlgorithmKetama {
		return nil, fmt.Errorf("building ring: algorithm %q: %w", opts.Algorithm, ErrUnknownAlgorithm)
	}
	rf := max(opts.ReplicationFactor, 1)
	sections := opts.SectionsPerNode
	if sections == 0 {
		sections = DefaultSectionsPerNode
	}

	sorted := slices.Clone(endpoints)
	slices.SortFunc(sorted, func(a, b Endpoint) int { return strings.Compare(a.Address, b.Address) })
	for i, e := range sorted {
		if e.Address == "" || (i > 0 && e.Address == sorted[i-1].Address) {
			return nil, fmt.Errorf("building ring: address %q: %w", e.Address, ErrBadEndpoint)
		}
	}
	r := &Ring{endpoints: sorted, rf: rf}
	if opts.Algorithm != AlgorithmKetama {
		for _, e := range sorted {
			if e.Zone != "" {
				return nil, fmt.Errorf("building ring: endpoint %q has zone %q: %w", e.Address, e.Zone, ErrZonesHashmod)
			}
		}
		// Thanos builds a hashmod ring of any size, even smaller than the
		// replication factor or empty; only the replicas it lacks fail
		// (see Replica).
		return r, nil
	}
	if len(sorted) < rf {
		return nil, fmt.Errorf("building ring: %d endpoints, replication factor %d: %w", len(sorted), rf, ErrNotEnoughNodes)
	}
	if uint64(len(sorted))*uint64(sections) >= math.MaxUint32 {
		// firstPoint holds point indexes as uint32; no real ring comes
		// near (a 1000-point ring would need 4 million endpoints).
		panic("hashring: ring has 2^32 points or more")
	}
	r.ketama = true
	if err := r.buildKetama(sections); err != nil {
		return nil, err
	}
	return r, nil
}

// buildKetama places the points of r.endpoints and each point's replicas.
func (r *Ring) buildKetama(sections int) error {
	// Zones, numbered in order of first appearance.
	zoneIdx := make(map[string]int)
	zoneOf := make([]int, len(r.endpoints))
	var zoneSize []int
	for i, e := range r.endpoints {
		z, ok := zoneIdx[e.Zone]
		if !ok {
			z = len(zoneSize)
			zoneIdx[e.Zone] = z
			zoneSize = append(zoneSize, 0)
		}
		zoneOf[i] = z
		zoneSize[z]++
	}
	if len(zoneSize) > 1 {
		// The walk takes an endpoint only while its zone is among the least
		// used, so a zone ends with at most one replica more than the
		// smallest zone has endpoints. Thanos's walk loops forever when
		// the replicas do not fit; refuse such a ring instead.
		smallest := slices.Min(zoneSize)
		capacity := 0
		for _, n := range zoneSize {
			capacity += min(n, smallest+1)
		}
		if r.rf > capacity {
			return fmt.Errorf("building ring: %d zones of %v endpoints hold at most %d replicas evenly, want %d: %w",
				len(zoneSize), zoneSize, capacity, r.rf, ErrZoneCapacity)
		}
	}

	type point struct {
		hash     uint64
		endpoint uint32
	}
	pts := make([]point, 0, len(r.endpoints)*sections)
	var buf []byte
	for i, e := range r.endpoints {
		buf = append(buf[:0], e.Address...)
		buf = append(buf, ':')
		n := len(buf)
		for k := 1; k <= sections; k++ {
			buf = strconv.AppendInt(buf[:n], int64(k), 10)
			pts = append(pts, point{xxhash.Sum64(buf), uint32(i)})
		}
	}
	// Two points share a hash only if xxhash64 collides on two distinct
	// strings; Thanos's sort.Sort then leaves their order to the sort
	// algorithm and the input order, here it is by address.
	slices.SortFunc(pts, func(a, b point) int {
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return int(a.endpoint) - int(b.endpoint)
	})
	r.points = make([]uint64, len(pts))
	for i, p := range pts {
		r.points[i] = p.hash
	}
	r.buildIndex()

	// The walk of each point. taken and zoneCount are reset after each
	// walk by undoing what it did.
	rf := r.rf
	r.owners = make([]uint32, len(pts)*rf)
	taken := make([]bool, len(r.endpoints))
	zoneCount := make([]int, len(zoneSize))
	zoned := len(zoneSize) > 1
	for i := range pts {
		own := r.owners[i*rf : i*rf : (i+1)*rf]
		least, atLeast := 0, len(zoneSize) // fewest replicas in a zone, and how many zones hold that many
		// Each full turn of the circle takes at least one endpoint as
		// long as the capacity check above holds, so rf turns are enough.
		for j, steps := i, 0; len(own) < rf; j, steps = j+1, steps+1 {
			if steps == rf*len(pts) {
				panic("hashring: ketama walk did not end")
			}
			if j == len(pts) {
				j = 0
			}
			e := pts[j].endpoint
			if taken[e] {
				continue
			}
			z := zoneOf[e]
			if zoned && zoneCount[z] != least {
				continue
			}
			taken[e] = true
			zoneCount[z]++
			if atLeast--; atLeast == 0 {
				// Every zone now holds least+1: counts never differ by
				// more than one.
				least++
				atLeast = len(zoneSize)
			}
			own = append(own, e)
		}
		for _, e := range own {
			taken[e] = false
			zoneCount[zoneOf[e]] = 0
		}
	}
	return nil
}

// Replicas appends to dst the indexes, in [0, [Ring.Len]), of the endpoints
// that store the series whose routing hash is hash, in replica order: the
// first is the endpoint Thanos's GetN returns for n = 0, and so on. It
// returns the extended slice.
//
// It appends [Ring.ReplicationFactor] indexes, or [Ring.Len] if that is
// fewer, which only a hashmod ring allows: there Thanos's GetN fails for
// replicas Len and above (see [Ring.Replica]), and Thanos receive then
// fails the whole write request. A caller that wants Thanos's behaviour
// checks the length and fails the request with [ErrNotEnoughNodes].
//
// The indexes are distinct but in one case, which Thanos shares: on a
// hashmod ring, when hash+n overflows for some replica n (hash is one of
// the top ReplicationFactor-1 values of a uint64), (hash+n) mod N may jump
// back to an endpoint already taken.
//
// Replicas makes no allocation when dst has room for the replicas. Its cost
// does not grow with the replication factor beyond appending: one division
// for hashmod; for ketama, one lookup in an index of the points and a
// binary search over the one or two points it leaves on average.
func (r *Ring) Replicas(hash uint64, dst []int) []int {
	if r.ketama {
		i := r.search(hash)
		for _, e := range r.owners[i*r.rf : (i+1)*r.rf] {
			dst = append(dst, int(e))
		}
		return dst
	}
	n := uint64(len(r.endpoints))
	if n == 0 {
		return dst
	}
	rf := min(uint64(r.rf), n)
	if hash > math.MaxUint64-(rf-1) {
		// hash+i wraps around for some replica i, and (hash+i) mod n then
		// no longer follows from hash mod n: compute each.
		for i := range rf {
			dst = append(dst, int((hash+i)%n))
		}
		return dst
	}
	e := hash % n
	for range rf {
		dst = append(dst, int(e))
		if e++; e == n {
			e = 0
		}
	}
	return dst
}

// Replica returns the index, in [0, [Ring.Len]), of the endpoint that
// stores replica n (from 0) of the series whose routing hash is hash: what
// Thanos's GetN returns. Like GetN it returns [ErrNotEnoughNodes] when n is
// not below Len, which only a hashmod ring smaller than its replication
// factor reaches for n below [Ring.ReplicationFactor]. On a hashmod ring,
// as in Thanos, any n below Len has a replica; a ketama ring places only
// ReplicationFactor replicas, and Replica panics for n from
// ReplicationFactor up to Len, where Thanos's GetN panics too. It panics if
// n is negative.
//
// Replica makes no allocation.
func (r *Ring) Replica(hash uint64, n int) (int, error) {
	if n < 0 {
		panic("hashring: Ring.Replica of a negative replica")
	}
	if n >= len(r.endpoints) {
		return 0, ErrNotEnoughNodes
	}
	if r.ketama {
		if n >= r.rf {
			panic("hashring: Ring.Replica beyond the replication factor of a ketama ring")
		}
		return int(r.owners[r.search(hash)*r.rf+n]), nil
	}
	return int((hash + uint64(n)) % uint64(len(r.endpoints))), nil
}

// ringBucketLog sets the size of the index that narrows a ketama search:
// the number of buckets is the power of two just above the number of points
// divided by 1<<ringBucketLog, so 1 gives one to two points per bucket and
// at most 4 bytes per point. BenchmarkRing/ring=ketama/replicas=3/impl=ingestkit
// (6 endpoints, 6000 points) chose it from 0 to 3, each much faster than a
// plain binary search over all points.
const ringBucketLog = 1

// buildIndex fills firstPoint from points.
func (r *Ring) buildIndex() {
	nb := max(bits.Len(uint(len(r.points)))-ringBucketLog, 0)
	r.shift = uint(64 - nb)
	r.firstPoint = make([]uint32, 1<<nb+1)
	j := 0
	for b := range uint64(1) << nb {
		for j < len(r.points) && r.points[j]>>r.shift < b {
			j++
		}
		r.firstPoint[b] = uint32(j)
	}
	r.firstPoint[1<<nb] = uint32(len(r.points))
}

// search returns the index of the first point >= hash, or 0 if there is
// none. The points of hash's bucket are the only candidates before the
// first point of the next bucket.
func (r *Ring) search(hash uint64) int {
	bkt := hash >> r.shift
	lo, hi := int(r.firstPoint[bkt]), int(r.firstPoint[bkt+1])
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.points[m] < hash {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(r.points) {
		return 0
	}
	return lo
}

// Len returns the number of endpoints.
func (r *Ring) Len() int { return len(r.endpoints) }

// Endpoint returns endpoint i, in [0, [Ring.Len]), of the endpoints sorted
// by address: the endpoint an index from [Ring.Replicas] stands for.
func (r *Ring) Endpoint(i int) Endpoint { return r.endpoints[i] }

// Algorithm returns the ring's placement algorithm, [AlgorithmHashmod] or
// [AlgorithmKetama].
func (r *Ring) Algorithm() Algorithm {
	if r.ketama {
		return AlgorithmKetama
	}
	return AlgorithmHashmod
}

// Sections returns the points of a ketama ring in ascending order of hash,
// each with the index, in [0, [Ring.Len]), of its endpoint: the sections of
// Thanos's ketama hashring (their hash and endpoint), which wrappers that
// pick endpoints by position on the circle walk, as Thanos's shuffle
// sharding does ([Hashrings] does it from them). Points with equal hashes,
// which only an xxhash collision gives, come in address order. A hashmod
// ring has no points.
//
// Iterating makes no allocation.
func (r *Ring) Sections() iter.Seq2[uint64, int] {
	return func(yield func(uint64, int) bool) {
		for i, p := range r.points {
			// The walk from a point takes the point's own endpoint first.
			if !yield(p, int(r.owners[i*r.rf])) {
				return
			}
		}
	}
}

// ReplicationFactor returns how many endpoints [Ring.Replicas] appends.
func (r *Ring) ReplicationFactor() int { return r.rf }
