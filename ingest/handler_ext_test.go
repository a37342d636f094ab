package ingest_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/ingest/hashring"
	"github.com/ingestkit/ingestkit/internal/rwbench"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// TestRingOwners checks that every series received is counted once per
// replica, on the endpoints the ring places it on.
func TestRingOwners(t *testing.T) {
	eps := []hashring.Endpoint{{Address: "r1:10901"}, {Address: "r2:10901"}, {Address: "r3:10901"}}
	ring, err := hashring.NewRing(eps, hashring.Options{Algorithm: hashring.AlgorithmKetama, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := ingest.NewWriteHandlerV2(nil, newBenchDB(t), ingest.Options{Ring: ring, Tenant: "team-a"})
	series := workload.TypicalSeries(300, "")
	want := map[string]int64{}
	for _, ls := range series {
		for _, i := range ring.Replicas(hashring.Hash("team-a", ls), nil) {
			want[ring.Endpoint(i).Address]++
		}
	}
	body, err := workload.Typical("ring", remoteapi.WriteV1MessageType, series).Body(time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	br := rwbench.NewRequest(remoteapi.WriteV1MessageType)
	br.Serve(r, body)
	if br.W.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", br.W.Code, br.W.Body.String())
	}
	got := r.Stats().Owned
	total := int64(0)
	for _, ep := range eps {
		if got[ep.Address] != want[ep.Address] {
			t.Errorf("Owned[%s] = %d, want %d", ep.Address, got[ep.Address], want[ep.Address])
		}
		total += got[ep.Address]
	}
	if total != 2*300 {
		t.Errorf("owners counted %d times, want %d (300 series, 2 replicas)", total, 600)
	}
}

// TestConcurrent serves requests from several goroutines at once, in both
// versions, each with its own series (one goroutine's samples of a series
// must arrive in order), and checks that everything was written once. Run
// it with -race.
func TestConcurrent(t *testing.T) {
	db := newBenchDB(t)
	r := ingest.NewWriteHandlerV2(nil, db, ingest.Options{TrackActiveSeries: true})
	const workers, requests, series = 4, 20, 200
	base := time.Now().Add(-time.Hour).UnixMilli()
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			msg := remoteapi.WriteV1MessageType
			if w%2 == 1 {
				msg = remoteapi.WriteV2MessageType
			}
			req := workload.Typical("concurrent", msg, workload.TypicalSeries(series, "worker-"+strconv.Itoa(w)))
			br := rwbench.NewRequest(msg)
			for i := range requests {
				body, err := req.Body(base + int64(i)*1000)
				if err != nil {
					errc <- err
					return
				}
				br.Serve(r, body)
				if br.W.Code != http.StatusNoContent {
					errc <- fmt.Errorf("worker %d request %d: status %d: %s", w, i, br.W.Code, br.W.Body.String())
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	s := r.Stats()
	if s.Samples != workers*requests*series || s.NewSeries != workers*series || s.ActiveSeries != workers*series || db.Head().NumSeries() != workers*series {
		t.Errorf("Stats() = %+v, head series %d; want %d samples, %d series", s, db.Head().NumSeries(), workers*requests*series, workers*series)
	}
}
