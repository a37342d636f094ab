package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
)

// maxAllocsPerRequest is what serving a steady-state 1.0 request of float
// samples allocates, the receiver's and the TSDB's commit together,
// whatever the request's size, in every labels build (measured by this
// test); maxAllocsPerRequestV2 is the same for 2.0, whose response has
// headers, with or without the metadata features.
const (
	maxAllocsPerRequest   = 5
	maxAllocsPerRequestV2 = 9
)

// allocsPerRequest measures the allocations of serving a request of n
// series the receiver has appended to before, one new sample each, in
// version msg, with the Receiver's features f over a TSDB that keeps
// metadata WAL records if f appends metadata.
func allocsPerRequest(t *testing.T, n int, msg remoteapi.WriteMessageType, f features) float64 {
	t.Helper()
	r, err := NewReceiver(newTestDB(t, f.appendMetadata), Options{AppendMetadata: f.appendMetadata, EnableTypeAndUnitLabels: f.typeAndUnitLabels})
	if err != nil {
		t.Fatal(err)
	}
	req := typicalRequest("allocs", msg, typicalSeries(n, ""))
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
	br := newBenchRequest(msg)
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
// allocations, none per series, in both versions and with the 2.0
// metadata features (the typical 2.0 series are counters, so that every
// one is given a __type__ label and appended with metadata).
func TestAllocsPerRequest(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tc := range []struct {
		msg remoteapi.WriteMessageType
		f   features
		max float64
	}{
		{remoteapi.WriteV1MessageType, features{}, maxAllocsPerRequest},
		{remoteapi.WriteV2MessageType, features{}, maxAllocsPerRequestV2},
		{remoteapi.WriteV2MessageType, features{appendMetadata: true}, maxAllocsPerRequestV2},
		{remoteapi.WriteV2MessageType, features{typeAndUnitLabels: true}, maxAllocsPerRequestV2},
		{remoteapi.WriteV2MessageType, features{appendMetadata: true, typeAndUnitLabels: true}, maxAllocsPerRequestV2},
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
