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

	retained := func(decodeBig bool) int64 {
		var d Decoder
		if decodeBig {
			if err := d.Reset(big, remoteapi.WriteV1MessageType); err != nil {
				t.Fatal(err)
			}
			for d.Next() {
				if got := len(d.Series().Samples()); got != n {
					t.Fatalf("decoded %d samples, want %d", got, n)
				}
			}
			if err := d.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Reset(small, remoteapi.WriteV1MessageType); err != nil {
			t.Fatal(err)
		}
		for d.Next() {
		}
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
	if cap(big) == 0 { // keep big alive through both measurements
		t.Fatal("empty request")
	}
}
