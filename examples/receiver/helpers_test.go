package main

import (
	"net/http"
	"os"
	"testing"

	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// newBenchDB opens a tsdb.DB with exemplar storage in a temporary
// directory, closed when the test ends.
func newBenchDB(tb testing.TB) *tsdb.DB {
	tb.Helper()
	return difftest.NewDB(tb, 100_000, false)
}

// newImpl returns the handler named impl over db: Prometheus's
// (difftest.Oracle) or ingestkit's, each with its defaults.
func newImpl(tb testing.TB, impl string, db *tsdb.DB) http.Handler {
	tb.Helper()
	if impl == "ingestkit" {
		return ingest.NewWriteHandlerV2(nil, db, ingest.Options{})
	}
	if impl != "prometheus" {
		tb.Fatalf("unknown impl %q", impl)
	}
	return difftest.Oracle(db, difftest.Features{})
}

// dirNames returns the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
