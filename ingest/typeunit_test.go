package ingest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/internal/difftest"
)

// TestTypeAndUnitLabelsCache checks that with EnableTypeAndUnitLabels a
// series is cached and found by its final labels: a request of the same
// series and metadata finds it in the cache, and the same labels with
// other metadata, or none, are another series, never a cache hit on the
// first one's entry.
func TestTypeAndUnitLabelsCache(t *testing.T) {
	db := difftest.NewDB(t, 100_000, true)
	r := NewWriteHandlerV2(nil, db, Options{AppendMetadata: true, EnableTypeAndUnitLabels: true})
	T := time.Now().Add(-time.Hour).UnixMilli()
	counter := &difftest.Meta{Type: writev2.Metadata_METRIC_TYPE_COUNTER, Help: "requests"}
	gauge := &difftest.Meta{Type: writev2.Metadata_METRIC_TYPE_GAUGE, Unit: "bytes"}
	for i, tc := range []struct {
		meta          *difftest.Meta
		wantNewSeries int64 // the WriteHandler's total after the request
	}{
		{counter, 1},
		{counter, 1},
		{gauge, 2},
		{&difftest.Meta{}, 3},
		{counter, 3},
		{gauge, 3},
		{&difftest.Meta{}, 3},
	} {
		s := difftest.FloatSeries(T+int64(i)*1000, 1, "__name__", "x", "job", "a")
		s.Meta = tc.meta
		w := httptest.NewRecorder()
		r.ServeHTTP(w, difftest.V2Step(t, []difftest.Series{s}).Request())
		if w.Code != http.StatusNoContent {
			t.Fatalf("request %d: status %d: %s", i, w.Code, w.Body)
		}
		if got := r.Stats().NewSeries; got != tc.wantNewSeries {
			t.Errorf("request %d (%+v): Stats().NewSeries = %d, want %d", i, *tc.meta, got, tc.wantNewSeries)
		}
	}
	if got, want := db.Head().NumSeries(), uint64(3); got != want {
		t.Errorf("head series = %d, want %d", got, want)
	}
	if got := r.cache.Len(); got != 3 {
		t.Errorf("cache.Len() = %d, want 3", got)
	}
	stored := difftest.DumpDB(t, db)
	for _, ls := range []labels.Labels{
		labels.FromStrings("__name__", "x", "__type__", "counter", "job", "a"),
		labels.FromStrings("__name__", "x", "__type__", "gauge", "__unit__", "bytes", "job", "a"),
		labels.FromStrings("__name__", "x", "job", "a"),
	} {
		if !strings.Contains(stored, ls.String()+" ") {
			t.Errorf("TSDB lacks %s:\n%s", ls, stored)
		}
	}
	// The help and unit strings, interned for AppendMetadata, go at the
	// next Purge even if no series does.
	if got := r.metaStrings.Stats().Strings; got != 2 {
		t.Errorf("metadata strings interned = %d, want 2 (requests, bytes)", got)
	}
	r.Purge(time.Now().Add(-24 * time.Hour))
	if got := r.metaStrings.Stats().Strings; got != 0 {
		t.Errorf("metadata strings after Purge = %d, want 0", got)
	}
}
