package hashring_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
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
	app := ingest.NewAppender(context.Background(), head, ingest.NewCache(ingest.CacheOptions{}), 1)

	const tenant = "team-a"
	req := &prompb.WriteRequest{}
	for _, pod := range []string{"api-0", "api-1", "api-2", "api-3"} {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "api"}, {Name: "pod", Value: pod}},
			Samples: []prompb.Sample{{Value: 1, Timestamp: 1000}},
		})
	}
	buf, err := req.Marshal()
	if err != nil {
		panic(err)
	}
	var d ingest.Decoder
	d.SetTenant(tenant) // the routing hash comes from the decoding pass
	if err := d.Reset(buf, remoteapi.WriteV1MessageType); err != nil {
		panic(err)
	}
	forward := map[string]int{} // series per peer
	replicas := make([]int, 0, ring.ReplicationFactor())
	for d.Next() {
		s := d.Series()
		replicas = ring.Replicas(s.ThanosHash(), replicas[:0])
		var addrs []string
		for _, i := range replicas {
			addr := ring.Endpoint(i).Address
			addrs = append(addrs, fmt.Sprintf("%s (%s)", strings.TrimSuffix(addr, ".thanos-receive:10901"), ring.Endpoint(i).Zone))
			if addr != self {
				forward[addr]++
				continue
			}
			h, err := app.Lookup(s)
			if err != nil {
				continue // a 2.0 series whose references do not resolve: skip it, answer 400
			}
			for _, smp := range s.Samples() {
				if err := app.Append(&h, 0, smp.Timestamp, smp.Value, nil, nil, storage.AOptions{}); err != nil {
					panic(err)
				}
			}
		}
		var pod string
		s.RangeLabels(func(name, value string) {
			if name == "pod" {
				pod = value
			}
		})
		fmt.Println(pod, "->", strings.Join(addrs, ", "))
	}
	if err := d.Err(); err != nil {
		panic(err)
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
// places its series from the decoder's routing hash, as Thanos does.
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
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "api"}},
		Samples: []prompb.Sample{{Value: 1, Timestamp: 1000}},
	}}}
	buf, err := req.Marshal()
	if err != nil {
		panic(err)
	}
	var d ingest.Decoder
	for _, tenant := range []string{"team-a", "batch-1", "batch-2", "other"} {
		ring, err := rings.Ring(tenant)
		if err != nil {
			panic(err)
		}
		d.SetTenant(tenant)
		if err := d.Reset(buf, remoteapi.WriteV1MessageType); err != nil {
			panic(err)
		}
		for d.Next() {
			replicas := ring.Replicas(d.Series().ThanosHash(), nil)
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
	}
	// Output:
	// team-a -> recv-a0, recv-a1
	// batch-1 -> recv-b0, recv-b2
	// batch-2 -> recv-b1, recv-b3
	// other -> recv-d0 and hashring: ring has fewer endpoints than the replication factor
}
