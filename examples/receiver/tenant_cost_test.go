package main

import (
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/rwbench"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// heapInUse is the bytes of live heap objects, after a garbage collection.
func heapInUse() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// costOptions returns the tenant router's options of the receiver's server
// mode with its default flags (impl=ingestkit), or with Prometheus's TSDB
// defaults instead (impl=prometheus): 16,384 head stripes and the exemplar
// storage allocated in full when a tenant opens. Both have the metrics
// registry of server mode. The budgets of all tenants are off; args are
// further flags.
func costOptions(tb testing.TB, impl, dir string, args ...string) tenantOptions {
	tb.Helper()
	var c config
	fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
	registerFlags(fs, &c)
	// No budget of tenants or series: this measures what each costs.
	if err := fs.Parse(append([]string{"-max-tenants", "0", "-max-series-total", "0"}, args...)); err != nil {
		tb.Fatal(err)
	}
	opts, err := tenantOptionsOf(c, nil)
	if err != nil {
		tb.Fatal(err)
	}
	opts.Dir, opts.TSDB, opts.Registerer = dir, c.tsdb, prometheus.NewRegistry()
	if impl == "prometheus" {
		opts.TSDB.stripeSize = 0
		opts.GrowExemplars = false
	}
	return opts
}

// tenantCost opens tenants tenants through a router of opts, sends each
// one request of series typical series, and returns the heap in use per
// tenant that this added, after a garbage collection.
func tenantCost(tb testing.TB, opts tenantOptions, tenants, series int) float64 {
	tb.Helper()
	req := workload.Typical("cost", remoteapi.WriteV1MessageType, workload.TypicalSeries(series, ""))
	br := rwbench.NewRequest(req.Msg)
	ts := time.Now().Add(-time.Minute).UnixMilli()
	body, err := req.Body(ts)
	if err != nil {
		tb.Fatal(err)
	}
	before := heapInUse()
	tt, err := newTenants(opts)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := tt.close(); err != nil {
			tb.Error(err)
		}
	}()
	serveTenants(tb, tt, br, body, tenants)
	after := heapInUse()
	runtime.KeepAlive(tt)
	return float64(int64(after)-int64(before)) / float64(tenants)
}

// serveTenants serves body, through br, to tt as each of tenants tenants
// (tenant-0000 on), requiring 204s.
func serveTenants(tb testing.TB, tt *tenants, br *rwbench.Request, body []byte, tenants int) {
	tb.Helper()
	for k := range tenants {
		br.R.Header.Set(ingest.DefaultTenantHeader, fmt.Sprintf("tenant-%04d", k))
		br.Serve(tt, body)
		if br.W.Code != http.StatusNoContent {
			tb.Fatalf("tenant %d: status %d: %.300s", k, br.W.Code, br.W.Body.String())
		}
	}
}

// maxTenantCost is what a tenant that has sent one series may cost, in
// heap in use, with the receiver's default flags (issue 36).
const maxTenantCost = 1 << 20

// TestTenantCost opens 1,000 tenants with the receiver's default flags,
// each sent one series, and requires each to cost at most maxTenantCost of
// heap in use; and 200 more with -exemplar-store ring. BenchmarkTenantCost
// compares it with Prometheus's TSDB defaults.
func TestTenantCost(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,200 TSDBs")
	}
	for _, c := range []struct {
		store   string
		tenants int
	}{{"tsdb", 1000}, {"ring", 200}} {
		per := tenantCost(t, costOptions(t, "ingestkit", t.TempDir(), "-exemplar-store", c.store), c.tenants, 1)
		t.Logf("-exemplar-store %s: heap in use per tenant of one series: %.0f bytes", c.store, per)
		if per > maxTenantCost {
			t.Errorf("-exemplar-store %s: a tenant of one series costs %.0f bytes of heap in use, more than %d", c.store, per, maxTenantCost)
		}
	}
}

// BenchmarkTenantCost reports the heap in use per tenant (heap-B/tenant)
// of the receiver's tenants with Prometheus's TSDB defaults
// (impl=prometheus) and with the receiver's default flags (impl=ingestkit),
// for 100 tenants that each sent one series and for 100 tenants of 10,000
// series each. One op opens the tenants, writes them and closes them.
func BenchmarkTenantCost(b *testing.B) {
	for _, c := range []struct{ tenants, series int }{{100, 1}, {100, 10_000}} {
		for _, impl := range []string{"prometheus", "ingestkit"} {
			b.Run(fmt.Sprintf("case=%dx%d/impl=%s", c.tenants, c.series, impl), func(b *testing.B) {
				var per float64
				for b.Loop() {
					per = tenantCost(b, costOptions(b, impl, b.TempDir()), c.tenants, c.series)
				}
				b.ReportMetric(per, "heap-B/tenant")
			})
		}
	}
}

// TestIdleTenantsReturnMemory opens 200 tenants with the receiver's
// default flags, each sent 100 series, closes them as idle, and requires
// the heap in use to fall back to within a tenth of what they had added:
// a closed tenant leaves nothing behind (its TSDB, write handler, cache,
// tracker, metrics).
func TestIdleTenantsReturnMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 200 TSDBs")
	}
	opts := costOptions(t, "ingestkit", t.TempDir())
	req := workload.Typical("idle", remoteapi.WriteV1MessageType, workload.TypicalSeries(100, ""))
	br := rwbench.NewRequest(req.Msg)
	body, err := req.Body(time.Now().Add(-time.Minute).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	tt, err := newTenants(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tt.close()
	before := heapInUse()
	const tenants = 200
	serveTenants(t, tt, br, body, tenants)
	open := heapInUse()
	if n, err := tt.closeIdle(time.Now().Add(time.Hour)); err != nil || n != tenants {
		t.Fatalf("closeIdle = %d, %v; want %d tenants closed", n, err, tenants)
	}
	closed := heapInUse()
	added := float64(open) - float64(before)
	left := float64(closed) - float64(before)
	t.Logf("heap in use: %d before, %d with %d tenants open, %d after they closed", before, open, tenants, closed)
	if added <= 0 || left > added/10 {
		t.Errorf("closing the tenants left %.0f of the %.0f bytes they added", left, added)
	}
}
