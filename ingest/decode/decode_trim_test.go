package decode

import (
	"fmt"
	"runtime"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
)

// TestDecoderTrim: after a request with a series of 100k labels and 100k
// samples, the next Reset lets go of the buffers sized for it, so that a
// pooled Decoder does not keep a hostile request's shape in memory.
func TestDecoderTrim(t *testing.T) {
	const n = 100_000
	ts := prompb.TimeSeries{}
	for i := range n {
		ts.Labels = append(ts.Labels, prompb.Label{Name: fmt.Sprintf("l%06d", i), Value: "v"})
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: int64(i), Value: 1})
	}
	big := decMarshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})
	small := decSmallV1(t)

	// With batches, the big series is the second of its batch, in a
	// Series that only NextBatch uses.
	batched := decMarshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "a", Value: "b"}}}, ts}})
	for _, batch := range []int{0, MaxBatch} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) { decTrimCheck(t, big, batched, small, n, batch) })
	}
}

func decTrimCheck(t *testing.T, big, batched, small []byte, n, batch int) {
	retained := func(decodeBig bool) int64 {
		var d Decoder
		if decodeBig {
			req := big
			if batch > 0 {
				req = batched
			}
			if err := d.Reset(req, remoteapi.WriteV1MessageType); err != nil {
				t.Fatal(err)
			}
			seen := 0
			decEach(&d, batch, func(s *Series) {
				if got := len(s.Samples()); got == n {
					seen++
				}
			})
			if seen != 1 {
				t.Fatalf("decoded %d series of %d samples, want 1", seen, n)
			}
			if err := d.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Reset(small, remoteapi.WriteV1MessageType); err != nil {
			t.Fatal(err)
		}
		decEach(&d, batch, func(*Series) {})
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(&d)
		return int64(ms.HeapAlloc)
	}
	base := retained(false)
	after := retained(true)
	// Without the trim, the labels (40 bytes each) and samples (24) of the
	// big series would stay: over 6 MB.
	if grown := after - base; grown > 1<<20 {
		t.Fatalf("a Decoder reset after a 100k-label series retains %d more bytes, want under 1 MiB", grown)
	}
	if cap(big) == 0 || cap(batched) == 0 { // keep both alive through both measurements
		t.Fatal("empty request")
	}
}
