package refcache_test

import (
	"testing"

	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// newTestHead returns an empty head with its chunks in a temporary
// directory, closed when the test ends: package ingest_test's counterpart
// of package ingest's newHead.
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

// lookupAll resolves series into hs and errs: in one LookupBatch if batch,
// else with a Lookup each, as a caller of either API would.
func lookupAll(a *refcache.AppenderV2, batch bool, series []refcache.SeriesLabels, hs []refcache.Handle, errs []error) {
	if batch {
		a.LookupBatch(series, hs, errs)
		return
	}
	for k := range series {
		hs[k], errs[k] = a.Lookup(series[k])
	}
}
