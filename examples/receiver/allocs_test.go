package main

import (
	"net/http"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
)

// maxAllocsPerRequest is what serving a steady-state 1.0 request of float
// samples allocates, the receiver's and the TSDB's commit together,
// whatever the request's size, in every labels build (measured by this
// test).
const maxAllocsPerRequest = 5

// allocsPerRequest measures the allocations of serving a 1.0 request of n
// series the receiver has appended to before, one new sample each.
func allocsPerRequest(t *testing.T, n int) float64 {
	t.Helper()
	r, err := NewReceiver(newBenchDB(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := typicalRequest("allocs", remoteapi.WriteV1MessageType, typicalSeries(n, ""))
	base := time.Now().Add(-time.Hour).UnixMilli()
	// A sample every 100 ms for 3 s: far from the 120 samples at which the
	// head cuts a new chunk for each series.
	bodies := make([][]byte, 30)
	for k := range bodies {
		b, err := req.body(base + int64(k)*100)
		if err != nil {
			t.Fatal(err)
		}
		bodies[k] = b
	}
	br := newBenchRequest(remoteapi.WriteV1MessageType)
	br.serve(r, bodies[0]) // the series, new
	br.serve(r, bodies[1]) // the pools, warm
	k := 2
	allocs := testing.AllocsPerRun(20, func() {
		br.serve(r, bodies[k])
		if br.w.code != http.StatusNoContent {
			t.Fatalf("status %d: %s", br.w.code, br.w.body.String())
		}
		k++
	})
	return allocs
}

// TestAllocsPerRequest checks the receiver's allocation contract: a
// steady-state request of float samples costs a fixed number of
// allocations, none per series.
func TestAllocsPerRequest(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	small, large := allocsPerRequest(t, 100), allocsPerRequest(t, 2000)
	t.Logf("allocations per request: %.1f for 100 series, %.1f for 2000", small, large)
	if small > maxAllocsPerRequest || large > maxAllocsPerRequest {
		t.Errorf("allocations per request = %.1f (100 series), %.1f (2000 series), want at most %d", small, large, maxAllocsPerRequest)
	}
	if large > small {
		t.Errorf("allocations grow with the series: %.1f for 100, %.1f for 2000", small, large)
	}
}
