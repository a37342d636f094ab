//go:build slicelabels && !race

// The race detector's instrumentation, and its sync.Pool that drops what it
// is given at random, change allocation counts: these tests run without it.

package thanos

import (
	"context"
	"testing"

	"github.com/go-kit/log"
	"github.com/thanos-io/thanos/pkg/receive"
	"github.com/thanos-io/thanos/pkg/store/storepb/prompb"
)

// TestWriterAllocs requires a Write of 100 series the cache holds to make
// no more allocations than Thanos's Writer makes for the same request, with
// the Writer in its place and with Thanos's over a TenantStorage (whose
// appendables and appenders are reused from request to request).
func TestWriterAllocs(t *testing.T) {
	opts := &receive.WriterOptions{}
	thanosStorage, ikStorage, wrapped := openTenants(t, []string{"a"}, "x"), openTenants(t, []string{"a"}, "x"), openTenants(t, []string{"a"}, "x")
	writers := map[string]writer{
		"thanos":        receive.NewWriter(log.NewNopLogger(), thanosStorage, opts),
		"ingestkit":     NewWriter(log.NewNopLogger(), ikStorage, opts),
		"tenantstorage": receive.NewWriter(log.NewNopLogger(), NewTenantStorage(wrapped), opts),
	}
	allocs := map[string]float64{}
	for name, w := range writers {
		ts := int64(1000)
		series := make([]prompb.TimeSeries, 100)
		for i := range series {
			series[i] = float("up", i, ts, 1, false)
		}
		write := func() {
			for i := range series {
				series[i].Samples[0].Timestamp = ts
			}
			ts++
			if err := w.Write(context.Background(), "a", series); err != nil {
				t.Fatal(err)
			}
		}
		write() // the series are new
		allocs[name] = testing.AllocsPerRun(2000, write)
	}
	t.Logf("allocations per Write of 100 known series: %v", allocs)
	for _, name := range []string{"ingestkit", "tenantstorage"} {
		if allocs[name] > allocs["thanos"] {
			t.Errorf("%s: %v allocations per Write, Thanos's %v", name, allocs[name], allocs["thanos"])
		}
	}
}
