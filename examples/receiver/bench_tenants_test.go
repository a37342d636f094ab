package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/rwbench"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// The multi-tenant case of BenchmarkReceive: benchTenants tenants of
// benchTenantSeries typical series each.
const (
	benchTenants      = 100
	benchTenantSeries = 500
	// benchTenantExemplars is the exemplar storage of each tenant's TSDB,
	// on both sides: the requests carry none, and a TSDB allocates its
	// exemplar storage in full when it opens, a hundred times over here.
	benchTenantExemplars = 1000
)

// benchTenant is the ID of tenant k of a benchmark.
func benchTenant(k int) string { return fmt.Sprintf("tenant-%03d", k) }

// tenantRequests returns the requests of one op of the multi-tenant case:
// one 1.0 request of benchTenantSeries series for each of benchTenants
// tenants, request j for tenant j. The tenants have the same label sets,
// as tenants running the same software do, in TSDBs of their own.
func tenantRequests() []*workload.Request {
	series := workload.TypicalSeries(benchTenantSeries, "")
	reqs := make([]*workload.Request, benchTenants)
	for j := range reqs {
		reqs[j] = workload.Typical(fmt.Sprintf("typical-%d-%s", benchTenantSeries, benchTenant(j)), remoteapi.WriteV1MessageType, series)
	}
	return reqs
}

// newBenchRequests returns a reusable request for each of reqs; with
// tenants, request j names tenant benchTenant(j % tenants) in the
// THANOS-TENANT header.
func newBenchRequests(reqs []*workload.Request, tenants int) []*rwbench.Request {
	brs := make([]*rwbench.Request, len(reqs))
	for j, r := range reqs {
		brs[j] = rwbench.NewRequest(r.Msg)
		if tenants > 0 {
			brs[j].R.Header.Set(ingest.DefaultTenantHeader, benchTenant(j%tenants))
		}
	}
	return brs
}

// benchTarget is what a benchmark sends its requests to: a handler and
// the TSDBs it writes to, one per tenant (or the single one without
// tenants), all open.
type benchTarget struct {
	h   http.Handler
	dbs []*tsdb.DB // by tenant index
}

// newBenchTarget returns the handler named impl: without tenants, over a
// TSDB of its own (newBenchDB); with tenants, behind a tenant router over
// one TSDB per tenant, all opened now: for impl=ingestkit the receiver's
// own router (newTenants), whose tenants share a body reader as serve's
// do, and for impl=prometheus a benchTenantRouter over one
// remote.NewWriteHandler per tenant. Everything is closed when tb ends.
func newBenchTarget(tb testing.TB, impl string, tenants int) benchTarget {
	tb.Helper()
	if tenants == 0 {
		db := newBenchDB(tb)
		return benchTarget{h: newImpl(tb, impl, db), dbs: []*tsdb.DB{db}}
	}
	t := benchTarget{dbs: make([]*tsdb.DB, tenants)}
	switch impl {
	case "prometheus":
		rt := &benchTenantRouter{m: make(map[string]http.Handler, tenants)}
		for k := range tenants {
			db := difftest.NewDB(tb, benchTenantExemplars, false)
			t.dbs[k] = db
			rt.m[benchTenant(k)] = newImpl(tb, impl, db)
		}
		t.h = rt
	case "ingestkit":
		var ro ingest.Options
		ro.BodyReader = newBodyReader(ro)
		tt, err := newTenants(tenantOptions{Dir: tb.TempDir(), Receiver: ro, MaxExemplars: benchTenantExemplars})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			if err := tt.close(); err != nil {
				tb.Error(err)
			}
		})
		for k := range tenants {
			tn, err := tt.acquire(benchTenant(k))
			if err != nil {
				tb.Fatal(err)
			}
			t.dbs[k] = tn.db
			tt.release(tn)
		}
		t.h = tt
	default:
		tb.Fatalf("unknown impl %q", impl)
	}
	return t
}

// checkTenants fails unless every tenant's head holds the series of its
// requests among reqs (request j is tenant j % len(t.dbs)'s, with series
// distinct within a tenant) and its latest sample is that of the op at
// ts.
func (t benchTarget) checkTenants(tb testing.TB, reqs []*workload.Request, ts int64) {
	tb.Helper()
	series := make([]uint64, len(t.dbs))
	maxTime := make([]int64, len(t.dbs))
	for j, r := range reqs {
		k := j % len(t.dbs)
		series[k] += uint64(r.Series())
		maxTime[k] = max(maxTime[k], ts+int64(j)*rwbench.ReqStep)
	}
	for k, db := range t.dbs {
		h := db.Head()
		if h.NumSeries() != series[k] || h.MaxTime() != maxTime[k] {
			tb.Fatalf("tenant %s: head of %d series up to %d, want %d series up to %d", benchTenant(k), h.NumSeries(), h.MaxTime(), series[k], maxTime[k])
		}
	}
}

// benchTenantRouter routes each request to the handler of its tenant, as
// the receiver's router (tenants) does, for Prometheus's handler in
// BenchmarkReceive: it reads and validates the THANOS-TENANT header the
// same way (tenantOf) and finds the tenant in a map under a read lock.
// Every tenant is opened up front, so neither router opens one while
// timed; what tenants does beyond this (a reference count, the time of
// last use) is its own cost. A benchTenantRouter is safe for concurrent
// use by multiple goroutines once made.
type benchTenantRouter struct {
	mu sync.RWMutex
	m  map[string]http.Handler // guarded by mu
}

func (rt *benchTenantRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	id, err := ingest.RequestTenant(req, ingest.DefaultTenantHeader, ingest.DefaultTenant)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rt.mu.RLock()
	h := rt.m[id]
	rt.mu.RUnlock()
	if h == nil {
		http.Error(w, "no tenant "+id, http.StatusInternalServerError)
		return
	}
	h.ServeHTTP(w, req)
}

// TestBenchTenantsIdentical sends a few ops of BenchmarkReceive's
// multi-tenant case to both of its targets and compares every tenant's
// TSDB: the benchmark's two sides do the same work.
func TestBenchTenantsIdentical(t *testing.T) {
	const tenants, ops = 5, 3
	reqs := tenantRequests()[:2*tenants] // two requests for each tenant
	base := time.Now().Add(-time.Hour).UnixMilli()
	targets := map[string]benchTarget{}
	for _, impl := range []string{"prometheus", "ingestkit"} {
		target := newBenchTarget(t, impl, tenants)
		brs := newBenchRequests(reqs, tenants)
		for op := range ops {
			for j, body := range rwbench.EncodeOp(t, reqs, base+int64(op)*rwbench.OpStep, nil) {
				brs[j].Serve(target.h, body)
				brs[j].Check(t, false, false, false)
			}
		}
		targets[impl] = target
	}
	for k := range tenants {
		gotK, gotP := difftest.DumpDB(t, targets["ingestkit"].dbs[k]), difftest.DumpDB(t, targets["prometheus"].dbs[k])
		if gotK != gotP {
			t.Errorf("tenant %s: ingestkit's TSDB:\n%.2000s\nPrometheus's:\n%.2000s", benchTenant(k), gotK, gotP)
		}
		if gotK == "" {
			t.Errorf("tenant %s: TSDB empty", benchTenant(k))
		}
	}
}
