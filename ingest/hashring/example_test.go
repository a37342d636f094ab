package hashring_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/hashring"
)

// A receiver in a Thanos-compatible ketama ring of six, over three zones,
// writing every series three times: it takes each series' routing hash
// once, appends the series to its own head when it is one of the replicas,
// and batches the others per peer for forwarding. A Thanos receive with the
// same hashrings file would send each series to the same three receivers.
func ExampleRing() {
	var endpoints []hashring.Endpoint
	for i, zone := range []string{"eu-1a", "eu-1b", "eu-1c", "eu-1a", "eu-1b", "eu-1c"} {
		endpoints = append(endpoints, hashring.Endpoint{
			Address: fmt.Sprintf("thanos-receive-%d.thanos-receive:10901", i),
			Zone:    zone,
		})
	}
	ring, err := hashring.NewRing(endpoints, hashring.Options{Algorithm: hashring.AlgorithmKetama, ReplicationFactor: 3})
	if err != nil {
		panic(err)
	}
	self := "thanos-receive-0.thanos-receive:10901"

	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer head.Close()
	if err := head.Init(math.MinInt64); err != nil {
		panic(err)
	}
	app := head.Appender(context.Background())

	const tenant = "team-a"
	forward := map[string]int{} // series per peer
	replicas := make([]int, 0, ring.ReplicationFactor())
	for _, pod := range []string{"api-0", "api-1", "api-2", "api-3"} {
		ls := labels.FromStrings("__name__", "up", "job", "api", "pod", pod)
		// The hash a Thanos receive routes this series by; package
		// ingest's decoder gives the same value in its decoding pass
		// (Series.ThanosHash).
		replicas = ring.Replicas(hashring.Hash(tenant, ls), replicas[:0])
		var addrs []string
		for _, i := range replicas {
			addr := ring.Endpoint(i).Address
			addrs = append(addrs, fmt.Sprintf("%s (%s)", strings.TrimSuffix(addr, ".thanos-receive:10901"), ring.Endpoint(i).Zone))
			if addr != self {
				forward[addr]++
				continue
			}
			if _, err := app.Append(0, ls, 1000, 1); err != nil {
				panic(err)
			}
		}
		fmt.Println(pod, "->", strings.Join(addrs, ", "))
	}
	if err := app.Commit(); err != nil {
		panic(err)
	}
	fmt.Println("series in own head:", head.NumSeries())
	fmt.Println("peers to forward to:", len(forward))

	// Zones of one and three receivers cannot hold four replicas with no
	// zone two ahead of the other: Thanos would never finish building this
	// ring; NewRing refuses it.
	_, err = hashring.NewRing([]hashring.Endpoint{
		{Address: "a", Zone: "z1"}, {Address: "b", Zone: "z2"}, {Address: "c", Zone: "z2"}, {Address: "d", Zone: "z2"},
	}, hashring.Options{Algorithm: hashring.AlgorithmKetama, ReplicationFactor: 4})
	fmt.Println(errors.Is(err, hashring.ErrZoneCapacity))
	// Output:
	// api-0 -> thanos-receive-3 (eu-1a), thanos-receive-5 (eu-1c), thanos-receive-1 (eu-1b)
	// api-1 -> thanos-receive-4 (eu-1b), thanos-receive-3 (eu-1a), thanos-receive-5 (eu-1c)
	// api-2 -> thanos-receive-2 (eu-1c), thanos-receive-1 (eu-1b), thanos-receive-3 (eu-1a)
	// api-3 -> thanos-receive-1 (eu-1b), thanos-receive-0 (eu-1a), thanos-receive-5 (eu-1c)
	// series in own head: 1
	// peers to forward to: 5
	// true
}

// A Thanos receive fork loading its hashrings file: team-a has its own
// receivers, the batch-* tenants a shuffle-sharded ketama hashring (two
// receivers each, out of four), everyone else the default hashring, which
// has one receiver for a replication factor of two. Each tenant's ring
// places its series from the series' routing hash, as Thanos does.
func ExampleHashrings() {
	file := []byte(`[
	  {"hashring": "team-a", "tenants": ["team-a"], "endpoints": ["recv-a0:10901", "recv-a1:10901"]},
	  {"hashring": "batch", "tenants": ["batch-*"], "tenant_matcher_type": "glob", "algorithm": "ketama",
	   "endpoints": ["recv-b0:10901", "recv-b1:10901", "recv-b2:10901", "recv-b3:10901"],
	   "shuffle_sharding_config": {"shard_size": 2}},
	  {"hashring": "default", "endpoints": ["recv-d0:10901"]}
	]`)
	cfg, err := hashring.ParseConfig(file)
	if err != nil {
		panic(err)
	}
	rings, err := hashring.NewHashrings(cfg, hashring.Options{ReplicationFactor: 2})
	if err != nil {
		panic(err)
	}
	ls := labels.FromStrings("__name__", "up", "job", "api")
	for _, tenant := range []string{"team-a", "batch-1", "batch-2", "other"} {
		ring, err := rings.Ring(tenant)
		if err != nil {
			panic(err)
		}
		replicas := ring.Replicas(hashring.Hash(tenant, ls), nil)
		var addrs []string
		for _, i := range replicas {
			addrs = append(addrs, strings.TrimSuffix(ring.Endpoint(i).Address, ":10901"))
		}
		if len(replicas) < ring.ReplicationFactor() {
			// Thanos fails the write: it has no second replica.
			fmt.Println(tenant, "->", strings.Join(addrs, ", "), "and", hashring.ErrNotEnoughNodes)
			continue
		}
		fmt.Println(tenant, "->", strings.Join(addrs, ", "))
	}
	// Output:
	// team-a -> recv-a0, recv-a1
	// batch-1 -> recv-b0, recv-b2
	// batch-2 -> recv-b1, recv-b3
	// other -> recv-d0 and hashring: ring has fewer endpoints than the replication factor
}
