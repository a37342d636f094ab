package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
)

// TestKeptBuffersBounded checks that a worker keeps the buffers of the
// series it appends in AppendOrder from one request to the next, up to
// maxKeptRetained, and no more: a request of more plain series in an order
// of its own leaves them to the garbage collector.
func TestKeptBuffersBounded(t *testing.T) {
	T := time.Now().Add(-time.Hour).UnixMilli()
	for _, tc := range []struct {
		n      int
		retain bool
	}{
		{100, true},
		{maxKeptRetained / 2, true},
		{maxKeptRetained + 10, false},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			r, err := NewReceiver(newTestDB(t, false), Options{})
			if err != nil {
				t.Fatal(err)
			}
			wk := r.newWorker()
			series := make([]testSeries, tc.n)
			for i := range series {
				series[i] = floatSeries(T, 1, "__name__", "m", "i", fmt.Sprintf("%06d", i))
			}
			reversed := slices.Clone(series)
			slices.Reverse(reversed)
			for k, s := range [][]testSeries{series, reversed} {
				for i := range s {
					s[i].floats[0].Timestamp = T + int64(k)*1000
				}
				if _, code, err := wk.write(context.Background(), encodeV1(t, s), remoteapi.WriteV1MessageType); err != nil {
					t.Fatalf("request %d: %d %v", k, code, err)
				}
			}
			if got := r.Stats().Samples; got != int64(2*tc.n) {
				t.Fatalf("Stats().Samples = %d, want %d", got, 2*tc.n)
			}
			caps := []int{cap(wk.kept), cap(wk.keptEnd), cap(wk.keptSamples), cap(wk.keptErrs)}
			for _, c := range caps {
				if c > maxKeptRetained || tc.retain != (c > 0) {
					t.Errorf("after a reversed request of %d series, buffer capacities %v, want retained %v, at most %d", tc.n, caps, tc.retain, maxKeptRetained)
					break
				}
			}
		})
	}
}
