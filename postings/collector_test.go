package postings

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollector(t *testing.T) {
	ctx := context.Background()
	rr := NewRangeReader(ReaderAtSource(bytes.NewReader(make([]byte, 1000))), RangeOptions{MaxRangeSize: 500})
	if _, err := rr.ReadRange(ctx, "x", 0, 100); err != nil {
		t.Fatal(err)
	}
	var b Batch
	if err := rr.ReadRanges(ctx, "x", []Range{{0, 10}, {20, 10}}, &b); err != nil {
		t.Fatal(err)
	}
	b.Release()
	_, _ = rr.ReadRange(ctx, "x", 0, 501)  // refused
	_, _ = rr.ReadRange(ctx, "x", 990, 20) // short
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(rr, CollectorOptions{Namespace: "store"}))
	want := `
# HELP store_postings_range_failed_total Requests that failed: source errors, short reads, cancellations.
# TYPE store_postings_range_failed_total counter
store_postings_range_failed_total 1
# HELP store_postings_range_range_bytes_total Bytes of the ranges asked for.
# TYPE store_postings_range_range_bytes_total counter
store_postings_range_range_bytes_total 140
# HELP store_postings_range_ranges_total Byte ranges asked for.
# TYPE store_postings_range_ranges_total counter
store_postings_range_ranges_total 5
# HELP store_postings_range_read_bytes_total Bytes read from the source, including gaps read to merge ranges.
# TYPE store_postings_range_read_bytes_total counter
store_postings_range_read_bytes_total 140
# HELP store_postings_range_refused_total Ranges refused before any request: longer than the limit, or invalid.
# TYPE store_postings_range_refused_total counter
store_postings_range_refused_total 1
# HELP store_postings_range_requests_total GetRange requests made to the source.
# TYPE store_postings_range_requests_total counter
store_postings_range_requests_total 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestCollectorConstLabels registers the collectors of two RangeReaders in
// one registry, set apart by a constant label, and checks that each
// reports its own reader's counts.
func TestCollectorConstLabels(t *testing.T) {
	ctx := context.Background()
	src := ReaderAtSource(bytes.NewReader(make([]byte, 1000)))
	a := NewRangeReader(src, RangeOptions{})
	b := NewRangeReader(src, RangeOptions{})
	for range 2 {
		if _, err := a.ReadRange(ctx, "x", 0, 100); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.ReadRange(ctx, "x", 0, 10); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(
		NewCollector(a, CollectorOptions{ConstLabels: prometheus.Labels{"bucket": "a"}}),
		NewCollector(b, CollectorOptions{ConstLabels: prometheus.Labels{"bucket": "b"}}),
	)
	want := `
# HELP postings_range_range_bytes_total Bytes of the ranges asked for.
# TYPE postings_range_range_bytes_total counter
postings_range_range_bytes_total{bucket="a"} 200
postings_range_range_bytes_total{bucket="b"} 10
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "postings_range_range_bytes_total"); err != nil {
		t.Error(err)
	}
}

func TestNewCollectorNil(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "postings: ") {
			t.Errorf("NewCollector(nil) panicked with %v, want a postings: message", r)
		}
	}()
	NewCollector(nil, CollectorOptions{})
}
