package decode

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
)

// TestDecoderReleasesBody: the Decoder's label Sets are reset per series
// without clearing their pairs, so a shorter series leaves the strings of
// a longer one in their buffers; the next Decoder.Reset must drop them, so
// that a pooled Decoder does not keep a done request's body alive.
func TestDecoderReleasesBody(t *testing.T) {
	for _, built := range []bool{false, true} {
		t.Run(fmt.Sprintf("built=%v", built), func(t *testing.T) { testDecoderReleasesBody(t, built) })
	}
}

// testDecoderReleasesBody decodes a request and checks that its body is
// collected after the next Decoder.Reset. With built, the loop also builds
// each series' scratch labels and its exemplars' labels, which go through
// the Sets' ScratchBuilders.
func testDecoderReleasesBody(t *testing.T, built bool) {
	var req prompb.WriteRequest
	for s := range 3 {
		ts := prompb.TimeSeries{Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}}
		for i := range 30 - 10*s { // longest first: shorter ones leave a tail
			ts.Labels = append(ts.Labels, prompb.Label{Name: fmt.Sprintf("l%02d", i), Value: "v"})
		}
		if built {
			e := prompb.Exemplar{Value: 1, Timestamp: 1}
			for i := range 6 - 2*s {
				e.Labels = append(e.Labels, prompb.Label{Name: fmt.Sprintf("e%02d", i), Value: "v"})
			}
			ts.Exemplars = append(ts.Exemplars, e)
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	var d Decoder
	var freed atomic.Bool
	func() {
		body := decMarshal(t, &req)
		runtime.AddCleanup(&body[0], func(b *atomic.Bool) { b.Store(true) }, &freed)
		if err := d.Reset(body, remoteapi.WriteV1MessageType); err != nil {
			t.Fatal(err)
		}
		for d.Next() {
			s := d.Series()
			_ = s.Hash()
			if built {
				_ = s.ScratchLabels()
				if n := len(s.Exemplars()); n != 1 {
					t.Fatalf("%d exemplars, want 1", n)
				}
			}
		}
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
	}()
	if err := d.Reset(decMarshal(t, &prompb.WriteRequest{}), remoteapi.WriteV1MessageType); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50 && !freed.Load(); i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(&d)
	if !freed.Load() {
		t.Fatal("the first request's body is still reachable after the next Decoder.Reset")
	}
}
