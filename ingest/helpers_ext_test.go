package ingest_test

import (
	"testing"

	"github.com/prometheus/prometheus/tsdb"
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
