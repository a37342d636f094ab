package hashring

import "errors"

// Errors of [NewRing] and [Ring.Replica].
var (
	// ErrNotEnoughNodes is returned by [NewRing] when a ketama ring has fewer
	// endpoints than its replication factor, which Thanos refuses too, and by
	// [Ring.Replica] for a replica at or beyond the number of endpoints,
	// where Thanos's GetN returns its "insufficient nodes" error. Thanos
	// builds a hashmod ring smaller than its replication factor and fails
	// every write to it; a receiver that does the same answers 500 Internal
	// Server Error, as Thanos does.
	ErrNotEnoughNodes = errors.New("hashring: ring has fewer endpoints than the replication factor")

	// ErrZoneCapacity is returned when the endpoints of a ketama ring span
	// several zones whose sizes cannot hold the replication factor evenly:
	// a zone never holds more than one replica more than the least used
	// zone, so each zone holds at most one more replica than the smallest
	// zone has endpoints. Thanos builds such a ring forever (its placement
	// loop never ends); [NewRing] fails instead.
	ErrZoneCapacity = errors.New("hashring: ring zones are too uneven to place the replication factor")

	// ErrZonesHashmod is returned when an endpoint of a hashmod ring has a
	// zone. Hashmod placement ignores zones, so Thanos refuses them too.
	ErrZonesHashmod = errors.New("hashring: hashmod ring endpoints cannot have zones")

	// ErrBadEndpoint is returned when an endpoint address is empty or
	// appears twice in a ring.
	ErrBadEndpoint = errors.New("hashring: ring endpoint address is empty or repeated")

	// ErrUnknownAlgorithm is returned when [Options.Algorithm] is neither
	// empty, [AlgorithmHashmod] nor [AlgorithmKetama]. (Thanos falls back
	// to hashmod with a warning.)
	ErrUnknownAlgorithm = errors.New("hashring: unknown ring algorithm")
)

// Errors of [ParseConfig], [NewHashrings] and [Hashrings.Ring].
var (
	// ErrConfig is returned when a hashrings file is not a non-empty JSON
	// array of hashrings, an endpoint has no address, a hashring has an
	// unknown tenant matcher or a malformed glob pattern, or asks for
	// shuffle sharding without ketama or with a shard larger than its
	// endpoints. A receiver keeps its previous hashrings, as
	// Thanos does when a reload fails.
	ErrConfig = errors.New("hashring: invalid hashrings configuration")

	// ErrNoHashring is returned by [Hashrings.Ring] when no hashring takes
	// the tenant: Thanos's "no matching hashring to handle tenant". A
	// receiver answers 500 Internal Server Error, as Thanos does.
	ErrNoHashring = errors.New("hashring: no matching hashring to handle tenant")

	// ErrShardSize is returned by [Hashrings.Ring] when a zone of a
	// shuffle-sharded hashring has fewer endpoints than the tenant's shard
	// takes from it, where Thanos fails the write too. A receiver answers
	// 500 Internal Server Error, as Thanos does.
	ErrShardSize = errors.New("hashring: shard size larger than the endpoints of a zone")
)
