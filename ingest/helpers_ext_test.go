package ingest_test

import (
	"net/http"
	"testing"

	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// newTestHead returns an empty head with its chunks in a temporary
// directory, closed when the test ends.
func newTestHead(t testing.TB) *tsdb.Head {
	t.Helper()
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = t.TempDir()
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { head.Close() })
	return head
}

// newImpl returns the handler named impl over db with the features f:
// Prometheus's (difftest.Oracle) or ingestkit's WriteHandler.
func newImpl(tb testing.TB, impl string, db *tsdb.DB, f difftest.Features) http.Handler {
	tb.Helper()
	switch impl {
	case "prometheus":
		return difftest.Oracle(db, f)
	case "ingestkit", "ingestkit-tracked":
		return ingest.NewWriteHandlerV2(nil, db, ingest.Options{AppendMetadata: f.AppendMetadata, EnableTypeAndUnitLabels: f.TypeAndUnitLabels, TrackActiveSeries: impl == "ingestkit-tracked"})
	}
	tb.Fatalf("unknown impl %q", impl)
	return nil
}

// newBenchDB opens a tsdb.DB with exemplar storage, closed when the test
// ends.
func newBenchDB(tb testing.TB) *tsdb.DB {
	tb.Helper()
	return difftest.NewDB(tb, 100_000, false)
}
