// The peers' hash is that of the default stringlabels build (see promHasher).

//go:build !slicelabels && !dedupelabels

package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// capturedDir holds the real requests of the root module's tests (see its
// README.md), which this module reaches by path since it cannot import the
// root's internal/rwtest.
const capturedDir = "../../testdata/remote-write"

// capturedFiles returns the paths of the captured remote-write rw bodies,
// sorted by name, and fails the test if there are none.
func capturedFiles(tb testing.TB, rw int) []string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(capturedDir, fmt.Sprintf("rw%d-*.snappy", rw)))
	if err != nil {
		tb.Fatalf("listing %s: %v", capturedDir, err)
	}
	if len(paths) == 0 {
		tb.Fatalf("no rw%d-*.snappy in %s", rw, capturedDir)
	}
	slices.Sort(paths)
	return paths
}

// capturedBody returns the snappy-decoded body at path: the protobuf bytes
// a receiver's decoder sees.
func capturedBody(tb testing.TB, path string) []byte {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("reading %s: %v", path, err)
	}
	b, err := snappy.Decode(nil, raw)
	if err != nil {
		tb.Fatalf("snappy-decoding %s: %v", path, err)
	}
	return b
}

// syntheticRequest returns a request of n float series with ten typical
// labels and one sample each, in protocol version rw, as the root module's
// BenchmarkDecode builds it (ingest's decFloatRequest). With unsorted, every
// seventh series sends its labels in reverse order.
func syntheticRequest(tb testing.TB, rw, n int, unsorted bool) []byte {
	tb.Helper()
	var lsets [][]labels.Label
	for i := range n {
		ls := labels.FromStrings(
			"__name__", fmt.Sprintf("http_requests_%d_total", i%50),
			"cluster", "eu-west-1",
			"code", []string{"200", "404", "500"}[i%3],
			"container", "api",
			"instance", fmt.Sprintf("10.0.%d.%d:8080", i/256%256, i%256),
			"job", "kubernetes-pods",
			"method", []string{"GET", "POST"}[i%2],
			"namespace", "production",
			"pod", fmt.Sprintf("api-7d9f8b6c5-%05d", i),
			"le", "0.25",
		)
		var out []labels.Label
		ls.Range(func(l labels.Label) { out = append(out, l) })
		if unsorted && i%7 == 0 {
			slices.Reverse(out)
		}
		lsets = append(lsets, out)
	}
	var m interface{ Marshal() ([]byte, error) }
	if rw == 1 {
		req := &prompb.WriteRequest{}
		for i, ls := range lsets {
			ts := prompb.TimeSeries{Samples: []prompb.Sample{{Value: float64(i), Timestamp: 1_700_000_000_000}}}
			for _, l := range ls {
				ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		m = req
	} else {
		st := writev2.NewSymbolTable()
		req := &writev2.Request{}
		for i, ls := range lsets {
			ts := writev2.TimeSeries{Samples: []writev2.Sample{{Value: float64(i), Timestamp: 1_700_000_000_000}}}
			for _, l := range ls {
				ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(l.Name), st.Symbolize(l.Value))
			}
			ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER, HelpRef: st.Symbolize("Requests.")}
			req.Timeseries = append(req.Timeseries, ts)
		}
		req.Symbols = st.Symbols()
		m = req
	}
	b, err := m.Marshal()
	if err != nil {
		tb.Fatalf("Marshal: %v", err)
	}
	return b
}
