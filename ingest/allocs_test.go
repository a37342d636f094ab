package ingest_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/rwbench"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// maxAllocsPerRequest is what serving a steady-state 1.0 request of float
// samples allocates, the handler's and the TSDB's commit together,
// whatever the request's size, in every labels build (measured by this
// test); maxAllocsPerRequestV2 is the same for 2.0, whose response has
// headers, with or without the metadata features.
const (
	maxAllocsPerRequest   = 5
	maxAllocsPerRequestV2 = 9
)

// allocsPerRequest measures the allocations of serving a request of n
// series the handler has appended to before, one new sample each, in
// version msg, with the WriteHandler's features f over a TSDB that keeps
// metadata WAL records if f appends metadata.
func allocsPerRequest(t *testing.T, n int, msg remoteapi.WriteMessageType, f difftest.Features) float64 {
	t.Helper()
	db := difftest.NewDB(t, 100_000, f.AppendMetadata)
	h := ingest.NewWriteHandlerV2(nil, db, ingest.Options{AppendMetadata: f.AppendMetadata, EnableTypeAndUnitLabels: f.TypeAndUnitLabels})
	req := workload.Typical("allocs", msg, workload.TypicalSeries(n, ""))
	base := time.Now().Add(-time.Hour).UnixMilli()
	// A sample every 100 ms for 3 s: far from the 120 samples at which the
	// head cuts a new chunk for each series.
	bodies := make([][]byte, 30)
	for k := range bodies {
		b, err := req.Body(base + int64(k)*100)
		if err != nil {
			t.Fatal(err)
		}
		bodies[k] = b
	}
	br := rwbench.NewRequest(msg)
	br.Serve(h, bodies[0]) // the series, new
	br.Serve(h, bodies[1]) // the pools, warm
	k := 2
	allocs := testing.AllocsPerRun(20, func() {
		br.Serve(h, bodies[k])
		if br.W.Code != http.StatusNoContent {
			t.Fatalf("status %d: %s", br.W.Code, br.W.Body.String())
		}
		k++
	})
	return allocs
}

// TestAllocsPerRequest checks the handler's allocation contract: a
// steady-state request of float samples costs a fixed number of
// allocations, none per series, in both versions and with the 2.0
// metadata features (the typical 2.0 series are counters, so that every
// one is given a __type__ label and appended with metadata).
func TestAllocsPerRequest(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tc := range []struct {
		msg remoteapi.WriteMessageType
		f   difftest.Features
		max float64
	}{
		{remoteapi.WriteV1MessageType, difftest.Features{}, maxAllocsPerRequest},
		{remoteapi.WriteV2MessageType, difftest.Features{}, maxAllocsPerRequestV2},
		{remoteapi.WriteV2MessageType, difftest.Features{AppendMetadata: true}, maxAllocsPerRequestV2},
		{remoteapi.WriteV2MessageType, difftest.Features{TypeAndUnitLabels: true}, maxAllocsPerRequestV2},
		{remoteapi.WriteV2MessageType, difftest.Features{AppendMetadata: true, TypeAndUnitLabels: true}, maxAllocsPerRequestV2},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.msg, tc.f), func(t *testing.T) {
			small, large := allocsPerRequest(t, 100, tc.msg, tc.f), allocsPerRequest(t, 2000, tc.msg, tc.f)
			t.Logf("allocations per request: %.1f for 100 series, %.1f for 2000", small, large)
			if small > tc.max || large > tc.max {
				t.Errorf("allocations per request = %.1f (100 series), %.1f (2000 series), want at most %v", small, large, tc.max)
			}
			if large > small {
				t.Errorf("allocations grow with the series: %.1f for 100, %.1f for 2000", small, large)
			}
		})
	}
}
