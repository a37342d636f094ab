package thanos

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/thanos/pkg/receive"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
	"github.com/thanos-io/thanos/pkg/store/storepb/prompb"

	"github.com/ingestkit/ingestkit/ingest/hashring"
)

// TestHashringsPlaceAsThanos builds Thanos's own hashrings and ingestkit's
// from one Thanos configuration, with either default algorithm, and checks
// that every replica of every series goes to the same endpoint in both.
func TestHashringsPlaceAsThanos(t *testing.T) {
	cfg := []receive.HashringConfig{
		{
			Hashring: "zoned", Tenants: []string{"team-a", "team-b"}, Algorithm: receive.AlgorithmKetama,
			Endpoints: []receive.Endpoint{
				{Address: "a1:10901", AZ: "a"}, {Address: "a2:10901", AZ: "a"},
				{Address: "b1:10901", AZ: "b"}, {Address: "b2:10901", AZ: "b"},
				{Address: "c1:10901", AZ: "c"},
			},
		},
		{
			Hashring: "default",
			Endpoints: []receive.Endpoint{
				{Address: "r1:10901"}, {Address: "r2:10901"}, {Address: "r3:10901"}, {Address: "r4:10901"},
			},
		},
	}
	const replicas = 3
	for _, alg := range []receive.HashringAlgorithm{receive.AlgorithmHashmod, receive.AlgorithmKetama} {
		t.Run(string(alg), func(t *testing.T) {
			theirs, err := receive.NewMultiHashring(alg, replicas, cfg, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			defer theirs.Close()
			ours, err := Hashrings(cfg, hashring.Options{Algorithm: hashring.Algorithm(alg), ReplicationFactor: replicas})
			if err != nil {
				t.Fatalf("Hashrings(cfg, %s) = %v", alg, err)
			}
			for _, tenant := range []string{"team-a", "team-b", "other"} {
				ring, err := ours.Ring(tenant)
				if err != nil {
					t.Fatalf("Ring(%q) = %v", tenant, err)
				}
				for i := range 300 {
					lset := labels.FromStrings("__name__", "up", "instance", fmt.Sprintf("host-%d:9100", i), "job", "node")
					ts := &prompb.TimeSeries{}
					lset.Range(func(l labels.Label) {
						ts.Labels = append(ts.Labels, labelpb.ZLabel{Name: l.Name, Value: l.Value})
					})
					hash := hashring.Hash(tenant, lset)
					for n := range replicas {
						want, err := theirs.GetN(tenant, ts, uint64(n))
						if err != nil {
							t.Fatalf("Thanos GetN(%q, %s, %d) = %v", tenant, lset, n, err)
						}
						got, err := ring.Replica(hash, n)
						if err != nil {
							t.Fatalf("Replica(%#x, %d) = %v", hash, n, err)
						}
						if e := ring.Endpoint(got); e.Address != want.Address {
							t.Fatalf("tenant %s, %s, replica %d: endpoint %s, want %s as Thanos", tenant, lset, n, e.Address, want.Address)
						}
					}
				}
			}
		})
	}
}
